#!/usr/bin/env node
// Demo: generate a production-shaped day partition (many small SNAPPY files written with
// hyparquet-writer, the production writer), then, in a process of its own, run the CLI on it:
// `gencompact inspect` (is it due for compaction?), `gencompact compact` (files and sizes before
// and after, and the compaction's own peak memory: the generator ran in this process, not there),
// `gencompact inspect` again (the compacted partition is not due), then a second wave of small
// files for two new sessions: only their tuples are due, and `compact --only-due` rewrites only
// them, carrying the rest over as they are.
//   node scripts/demo.js [--rows N] [--files N] [--tuples N] [--target-mb N] [--dir D]
'use strict'
const fs = require('fs')
const path = require('path')
const { spawnSync } = require('child_process')
const { generatePartition } = require('../fixtures/gen-partition.js')

const CLI = path.join(__dirname, '..', 'cli', 'gencompact.js')

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : dflt
}

function gencompact(...args) {
  console.log(`\n$ gencompact ${args.map((a) => path.relative(process.cwd(), a) || a).join(' ')}`)
  const r = spawnSync(process.execPath, [CLI, ...args], { stdio: 'inherit' })
  if (r.status !== 0) process.exit(r.status ?? 1)
}

async function main() {
  const dir = path.resolve(arg('dir', 'demo-data'))
  const rows = Number(arg('rows', 12000))
  const files = Number(arg('files', 120))
  const tuples = Number(arg('tuples', 8))
  const target = Number(arg('target-mb', 128))
  fs.rmSync(dir, { recursive: true, force: true })
  const inDir = path.join(dir, 'generation-1')
  const outDir = path.join(dir, 'generation-2')
  const waveDir = path.join(dir, 'wave-2')
  const nextDir = path.join(dir, 'generation-3')
  // The host's layout: one tuple per session.
  const layout = ['session_id', 'conversation_id', 'cwd', 'date'].flatMap((c) => ['--partition', c]).concat(['--target', `${target}MiB`])
  console.log(`generating ${rows} rows in ${files} files (${tuples} sessions) under ${path.relative(process.cwd(), inDir)} ...`)
  await generatePartition({ dir: inDir, rows, files, tuples, seed: 42, fatBytes: 30000, rowBytes: 10000 })
  gencompact('inspect', inDir, '--summary', ...layout)
  gencompact('compact', inDir, '--out', outDir, '--compression', 'zstd', ...layout)
  gencompact('inspect', outDir, ...layout)
  const waveFiles = Math.max(10, Math.round(files / 10))
  console.log(`\nan ingest wave: ${waveFiles} small files of 2 new sessions under ${path.relative(process.cwd(), waveDir)} ...`)
  await generatePartition({ dir: waveDir, rows: Math.round(rows / 20), files: waveFiles, tuples: 2, seed: 43, fatBytes: 30000, rowBytes: 10000 })
  gencompact('inspect', outDir, waveDir, '--summary', ...layout)
  gencompact('compact', outDir, waveDir, '--out', nextDir, '--only-due', '--compression', 'zstd', ...layout)
  gencompact('inspect', nextDir, '--summary', ...layout)
}

main().catch((e) => {
  console.error(e.code ? `${e.code}: ${e.message}` : e)
  process.exit(1)
})
