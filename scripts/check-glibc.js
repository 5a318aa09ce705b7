#!/usr/bin/env node
// Checks the glibc a Linux binary needs: the highest GLIBC_x.y version among its versioned
// dynamic symbol requirements (`objdump -T`) must not exceed the limit (default 2.17, the glibc of
// RHEL/CentOS 7, and older than Amazon Linux 2's 2.26).
//   node scripts/check-glibc.js [file] [--max 2.17]
// file defaults to the platform package's binary, npm/linux-x64-gnu/gencompact.linux-x64-gnu.node.
// objdump comes with binutils (in the machine image; installed with apt-get if missing and root).
'use strict'
const fs = require('fs')
const path = require('path')
const { spawnSync } = require('child_process')

const args = process.argv.slice(2)
const m = args.indexOf('--max')
const max = m >= 0 ? args.splice(m, 2)[1] : '2.17'
const file = args[0] ?? path.join(__dirname, '..', 'npm', 'linux-x64-gnu', 'gencompact.linux-x64-gnu.node')

const cmp = (a, b) => {
  const x = a.split('.').map(Number)
  const y = b.split('.').map(Number)
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0)
  return 0
}

function objdump() {
  let r = spawnSync('objdump', ['-T', file], { encoding: 'utf8', maxBuffer: 64 << 20 })
  if (r.error && r.error.code === 'ENOENT' && process.getuid && process.getuid() === 0) {
    console.log('check-glibc: objdump missing, installing binutils')
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit' })
    spawnSync('apt-get', ['install', '-y', '-qq', 'binutils'], { stdio: 'inherit' })
    r = spawnSync('objdump', ['-T', file], { encoding: 'utf8', maxBuffer: 64 << 20 })
  }
  if (r.error || r.status !== 0) {
    // A host objdump may not know a foreign architecture (an aarch64 binary on x64); readelf does.
    const e = spawnSync('readelf', ['--dyn-syms', '-W', file], { encoding: 'utf8', maxBuffer: 64 << 20 })
    if (e.error || e.status !== 0) {
      console.error(`check-glibc: objdump -T ${file} failed (${r.error ? r.error.message : r.stderr}), and so did readelf --dyn-syms`)
      process.exit(1)
    }
    return e.stdout
  }
  return r.stdout
}

if (!fs.existsSync(file)) {
  console.error(`check-glibc: ${file} does not exist (build it with node scripts/build-cross.js)`)
  process.exit(1)
}
const needs = new Map() // version -> symbols
for (const line of objdump().split('\n')) {
  const v = /\bGLIBC_(\d+(?:\.\d+)+)\b/.exec(line)
  if (!v) continue
  // objdump: `… GLIBC_2.14  memcpy` (the name last); readelf: `… memcpy@GLIBC_2.14 (3)`
  const words = line.trim().split(/\s+/)
  const at = words.find((w) => w.includes('@GLIBC_'))
  const sym = at ? at.slice(0, at.indexOf('@')) : words[words.length - 1]
  if (!needs.has(v[1])) needs.set(v[1], [])
  needs.get(v[1]).push(sym)
}
if (!needs.size) {
  console.error(`check-glibc: no GLIBC_ symbol versions in ${file}: not a dynamically linked glibc binary?`)
  process.exit(1)
}
const versions = [...needs.keys()].sort(cmp)
const highest = versions[versions.length - 1]
const over = versions.filter((v) => cmp(v, max) > 0)
console.log(`check-glibc: ${path.basename(file)} needs glibc ${highest} (versions ${versions.join(', ')}); limit ${max}`)
if (over.length) {
  for (const v of over) console.error(`  GLIBC_${v}: ${needs.get(v).join(', ')}`)
  console.error(`check-glibc: FAILED, needs glibc newer than ${max}`)
  process.exit(1)
}
