#!/usr/bin/env node
// Demo: generate a production-shaped day partition (many small SNAPPY files written with
// hyparquet-writer, the production writer), compact it with gencompact, and print the files
// and sizes before and after.
//   node scripts/demo.js [--rows N] [--files N] [--tuples N] [--target-mb N] [--dir D]
'use strict'
const fs = require('fs')
const path = require('path')
const { generatePartition } = require('../fixtures/gen-partition.js')
const { compactGeneration } = require('..')

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : dflt
}
const mb = (n) => (n / 1048576).toFixed(2) + ' MB'

async function main() {
  const dir = path.resolve(arg('dir', 'demo-data'))
  const rows = Number(arg('rows', 12000))
  const files = Number(arg('files', 120))
  const tuples = Number(arg('tuples', 8))
  const target = Number(arg('target-mb', 128)) * 1048576
  fs.rmSync(dir, { recursive: true, force: true })
  const inDir = path.join(dir, 'generation-1')
  const outDir = path.join(dir, 'generation-2')
  console.log(`generating ${rows} rows in ${files} files (${tuples} sessions) under ${inDir} ...`)
  const gen = await generatePartition({ dir: inDir, rows, files, tuples, seed: 42, fatBytes: 30000, rowBytes: 10000 })
  const sizes = gen.files.map((f) => fs.statSync(f).size)
  console.log(`before: ${gen.files.length} files, ${mb(sizes.reduce((a, b) => a + b, 0))} on disk, ` +
    `avg ${mb(sizes.reduce((a, b) => a + b, 0) / sizes.length)}, max ${mb(Math.max(...sizes))}`)

  const started = Date.now()
  let lastPhase = ''
  const result = await compactGeneration(gen.files, {
    outDir,
    targetFileBytes: target,
    compression: 'zstd',
    onProgress: (p) => {
      if (p.phase !== lastPhase) console.log(`  ${p.phase}: ${p.rowsWritten} rows written`)
      lastPhase = p.phase
    },
  })
  console.log(`after:  ${result.files.length} file(s), ${mb(result.bytesWritten)} on disk, ` +
    `${result.rowsWritten} of ${result.rowsRead} rows, ${Date.now() - started} ms, ` +
    `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`)
  for (const f of result.files) {
    console.log(`  ${path.relative(process.cwd(), f.path)}  ${mb(f.fileSizeInBytes)}  ${f.recordCount} rows  ${f.rowGroups} row groups`)
  }
}

main().catch((e) => {
  console.error(e.code ? `${e.code}: ${e.message}` : e)
  process.exit(1)
})
