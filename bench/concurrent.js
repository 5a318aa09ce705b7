#!/usr/bin/env node
'use strict'
// N gencompact calls at once in one process, for bench/run.js --concurrent N (tool gencompact-xN).
//
// CLI: node bench/concurrent.js --calls N [the options of bench/gencompact.js] <outDir> <list.json>
// Starts N compactGeneration calls over the same input files together (Promise.all), each into
// its own <outDir>/call-<i>/ with its own fileNamePrefix; the calls share the cores through the
// addon's gate (README, "threads"). The driver measures the whole process (wall, user+sys CPU, peak
// RSS); this prints one JSON summary: per call its own wall time, and the summed figures.

const path = require('path')
const { readFileList } = require('./files')
const { parseCli, summarize } = require('./gencompact')

async function main() {
  const argv = process.argv.slice(2)
  let calls = 4
  const i = argv.indexOf('--calls')
  if (i >= 0) {
    calls = Number(argv[i + 1])
    argv.splice(i, 2)
  }
  if (!(Number.isInteger(calls) && calls >= 1)) throw new Error('--calls needs a positive integer')
  const { opts, pos } = parseCli(argv)
  const [outDir, ...rest] = pos
  if (!outDir || !rest.length) {
    console.error('usage: node bench/concurrent.js --calls N [gencompact.js options] <outDir> <file.parquet...|list.json>')
    process.exit(2)
  }
  const files = readFileList(rest)
  const { compactGeneration } = require(path.join(__dirname, '..'))
  const t0 = Date.now()
  const each = await Promise.all(Array.from({ length: calls }, async (_, k) => {
    const started = Date.now()
    const res = await compactGeneration(files, {
      ...opts, outDir: path.resolve(outDir, `call-${k}`), fileNamePrefix: `call${k}`,
    })
    return summarize(res, opts, Date.now() - started)
  }))
  const sum = key => each.reduce((a, s) => a + (s[key] || 0), 0)
  console.log(JSON.stringify({
    tool: 'gencompact-concurrent',
    calls,
    options: opts,
    outputFiles: sum('outputFiles'),
    rowsRead: sum('rowsRead'),
    rowsWritten: sum('rowsWritten'),
    duplicatesDropped: sum('duplicatesDropped'),
    bytesWritten: sum('bytesWritten'),
    callWallMs: each.map(s => s.wallMs),
    rowGroups: each.flatMap(s => s.rowGroups),
    wallMs: Date.now() - t0,
  }))
}

main().catch(err => {
  console.error(`${err && err.code ? err.code + ': ' : ''}${err && err.stack || err}`)
  process.exit(1)
})
