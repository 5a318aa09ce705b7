#!/usr/bin/env node
// Builds a Linux glibc binary as it is published: linked against glibc 2.17 with napi-rs's
// prebuilt cross toolchain (`napi build --use-napi-cross`), without the `test-hooks` feature, into
// its own target directory (target/cross, so it does not invalidate the host build's artifacts),
// then copies it into its platform package (npm/linux-x64-gnu/ or npm/linux-arm64-gnu/).
//   node scripts/build-cross.js [--target x86_64-unknown-linux-gnu|aarch64-unknown-linux-gnu] [--profile release|glibc-check|dist]
// CI (`npm test`) builds x86_64 with `glibc-check` (not optimised: what it proves is the link
// against glibc 2.17 and that the binary loads and runs a few small calls; 84 s cold here against
// 3-6 min with `release`); the release workflow builds both with `dist`. Needs a Linux x64 host (the toolchains are x64 binaries) and, for aarch64, rustup's
// aarch64-unknown-linux-gnu std (not on this project's machines: the workflow builds that one).
//
// The toolchain is napi-rs's glibc 2.17 gcc, shipped on the npm registry as
// @napi-rs/cross-toolchain-x64-target-x86_64. `napi build --use-napi-cross` would fetch it itself
// (`npm pack` of the version matching the CLI's @napi-rs/cross-toolchain, then unpacking with
// @napi-rs/lzma), but neither works here: that target package exists only as 1.0.0 while the CLI
// pins the index package at ^1.0.5, and @napi-rs/lzma's binary needs Node >= 22.20. So this script
// `npm pack`s the 1.0.0 toolchain and unpacks it with tar/xz where the CLI looks for it
// (~/.napi-rs/cross-toolchain/<version>/<triple>, recognised by its package.json); the CLI then
// only sets the linker/CC/sysroot variables. Not a devDependency: the package is x64-only and
// would make `npm ci` fail on the release workflow's macOS/Windows/arm64 runners.
'use strict'
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')

const ROOT = path.join(__dirname, '..')
// The newest version of each per-target toolchain package on the registry (they differ).
const TARGETS = {
  'x86_64-unknown-linux-gnu': { platform: 'linux-x64-gnu', toolchain: '@napi-rs/cross-toolchain-x64-target-x86_64@1.0.0' },
  'aarch64-unknown-linux-gnu': { platform: 'linux-arm64-gnu', toolchain: '@napi-rs/cross-toolchain-x64-target-aarch64@1.0.3' },
}
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : dflt
}
const TRIPLE = arg('target', 'x86_64-unknown-linux-gnu')
if (!TARGETS[TRIPLE]) {
  console.error(`build-cross: unsupported target ${TRIPLE} (${Object.keys(TARGETS).join(', ')})`)
  process.exit(1)
}
const PLATFORM = TARGETS[TRIPLE].platform
const TOOLCHAIN = TARGETS[TRIPLE].toolchain
const TARGET_DIR = path.join(ROOT, 'target', 'cross')
const OUT_DIR = path.join(TARGET_DIR, 'out')
const BINARY = `gencompact.${PLATFORM}.node`

function run(cmd, args, opts = {}) {
  console.log(`$ ${cmd} ${args.join(' ')}`)
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: ROOT, ...opts })
  if (r.status !== 0) {
    console.error(`${cmd} failed (${r.status ?? r.signal})`)
    process.exit(1)
  }
}

/** Unpacks the toolchain where `napi build --use-napi-cross` looks for it; returns that path. */
function ensureToolchain() {
  const { createRequire } = require('module')
  const cliRequire = createRequire(require.resolve('@napi-rs/cli/package.json', { paths: [ROOT] }))
  const version = cliRequire('@napi-rs/cross-toolchain/package.json').version
  const dest = path.join(os.homedir(), '.napi-rs', 'cross-toolchain', version, TRIPLE)
  if (fs.existsSync(path.join(dest, 'package.json'))) return dest
  const dl = path.join(TARGET_DIR, 'toolchain-download')
  fs.rmSync(dl, { recursive: true, force: true })
  fs.mkdirSync(dl, { recursive: true })
  run('npm', ['pack', TOOLCHAIN, '--pack-destination', dl, '--silent'])
  const tgz = fs.readdirSync(dl).find((f) => f.endsWith('.tgz'))
  if (!tgz) {
    console.error(`build-cross: npm pack ${TOOLCHAIN} produced no tarball`)
    process.exit(1)
  }
  run('tar', ['-xzf', path.join(dl, tgz), '-C', dl])
  const partial = `${dest}.partial`
  fs.rmSync(partial, { recursive: true, force: true })
  fs.mkdirSync(partial, { recursive: true })
  run('tar', ['-xJf', path.join(dl, 'package', `${TRIPLE}.tar.xz`), '-C', partial])
  fs.rmSync(dest, { recursive: true, force: true })
  fs.renameSync(partial, dest)
  fs.rmSync(dl, { recursive: true, force: true })
  return dest
}

const profile = arg('profile', 'release')
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.error(`build-cross: the glibc 2.17 toolchain runs on Linux x64 hosts only (this is ${process.platform}-${process.arch})`)
  process.exit(1)
}
console.log(`build-cross: toolchain in ${ensureToolchain()}`)
const started = Date.now()
run(path.join(ROOT, 'node_modules', '.bin', 'napi'), [
  'build', '--platform', '--profile', profile, '--target', TRIPLE, '--use-napi-cross',
  '--target-dir', TARGET_DIR, '--output-dir', OUT_DIR, '--no-js',
])
const dest = path.join(ROOT, 'npm', PLATFORM, BINARY)
fs.copyFileSync(path.join(OUT_DIR, BINARY), dest)
console.log(`build-cross: ${path.relative(ROOT, dest)} (${profile}, ${(fs.statSync(dest).size / 1048576).toFixed(1)} MiB) in ${((Date.now() - started) / 1000).toFixed(0)} s`)
