#!/usr/bin/env node
'use strict'
// gencompact (this package's Rust addon) for the compaction benchmark.
//
// CLI: node bench/gencompact.js [--target-bytes N] [--batch-bytes N] [--dedupe COLUMN] [--sort-by COL[,COL]]
//                               [--partition-by COL[,COL]] [--compression zstd|snappy|...]
//                               [--threads N] [--no-verify]
//                               <outDir> <file.parquet...|list.json>
//      (a list.json may hold `files` entries as objects, `{ path, location?, deletes? }`: they are
//       passed through as they are; bench/deletes.js uses that)
//      node bench/gencompact.js --idle    (loads the addon and exits: the idle process's RSS)
// Runs require('..').compactGeneration(files, { outDir, targetFileBytes: 128 MiB, ... })
// with the addon's defaults otherwise, and prints a JSON summary on stdout.

const fs = require('fs')
const path = require('path')
const { readFileList } = require('./files')


/** The CLI's options and positional arguments (bench/concurrent.js takes the same). */
function parseCli(argv) {
  const opts = { targetFileBytes: 128 * 1024 * 1024 }
  const pos = []
  let idle = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--idle') idle = true
    else if (a === '--target-bytes') opts.targetFileBytes = Number(argv[++i])
    else if (a === '--batch-bytes') opts.batchBytes = Number(argv[++i])
    else if (a === '--dedupe') opts.dedupeBy = argv[++i]
    else if (a === '--compression') opts.compression = argv[++i]
    else if (a === '--threads') opts.threads = Number(argv[++i])
    else if (a === '--no-verify') opts.verify = false
    else if (a === '--sort-by') opts.sortBy = argv[++i].split(',').map(column => ({ column }))
    else if (a === '--partition-by') opts.partitionBy = argv[++i].split(',').map(column => ({ column }))
    else pos.push(a)
  }
  return { opts, pos, idle }
}

/** The JSON summary of one call's result. */
function summarize(res, opts, wallMs) {
  const sizes = res.files.map(f => f.fileSizeInBytes)
  const bytesWritten = sizes.reduce((a, b) => a + b, 0)
  return {
    tool: 'gencompact',
    options: opts,
    outputFiles: res.files.length,
    inputFiles: res.inputFiles,
    rowsRead: res.rowsRead,
    rowsDeleted: res.rowsDeleted,
    rowsWritten: res.rowsWritten,
    duplicatesDropped: res.duplicatesDropped,
    bytesRead: res.bytesRead,
    bytesWritten: res.bytesWritten ?? bytesWritten,
    avgFileBytes: Math.round(bytesWritten / Math.max(1, sizes.length)),
    maxFileBytes: Math.max(0, ...sizes),
    rowGroups: res.files.map(f => f.rowGroups),
    spill: res.spill,
    peakMemoryBytes: res.peakMemoryBytes,
    recordCounts: res.files.map(f => f.recordCount),
    elapsedMs: res.elapsedMs,
    wallMs,
  }
}

async function main() {
  const { opts, pos, idle } = parseCli(process.argv.slice(2))
  if (idle) {
    require(path.join(__dirname, '..'))
    console.log(JSON.stringify({ tool: 'idle', maxRss: process.resourceUsage().maxRSS * 1024 }))
    return
  }
  const [outDir, ...rest] = pos
  if (!outDir || !rest.length) {
    console.error('usage: node bench/gencompact.js [--target-bytes N] [--dedupe COL] [--sort-by COL] [--partition-by COL,...] [--threads N] <outDir> <file.parquet...|list.json>')
    process.exit(2)
  }
  const files = readFileList(rest)
  const { compactGeneration } = require(path.join(__dirname, '..'))
  // The descriptors the process holds while the call runs (Linux: /proc/self/fd, every 5 ms;
  // the call runs on the addon's threads, so the event loop is free to look).
  const fdDir = '/proc/self/fd'
  const countFds = () => fs.readdirSync(fdDir).length
  const idleDescriptors = fs.existsSync(fdDir) ? countFds() : null
  let mostDescriptors = idleDescriptors
  const poll = idleDescriptors == null ? null : setInterval(() => { mostDescriptors = Math.max(mostDescriptors, countFds()) }, 5)
  const t0 = Date.now()
  const res = await compactGeneration(files, { ...opts, outDir: path.resolve(outDir) })
  const wallMs = Date.now() - t0
  if (poll) clearInterval(poll)
  console.log(JSON.stringify({ ...summarize(res, opts, wallMs), idleDescriptors, mostDescriptors }))
}

module.exports = { parseCli, summarize }

if (require.main === module) {
  main().catch(err => {
    console.error(`${err && err.code ? err.code + ': ' : ''}${err && err.stack || err}`)
    process.exit(1)
  })
}
