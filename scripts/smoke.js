#!/usr/bin/env node
// Smoke test of a binary on its own platform (the release workflow runs it on each target's
// runner or container, with the downloaded binary beside index.js): require the addon, generate a
// small partition, compact it through the API and through the CLI, check the rows.
//   node scripts/smoke.js
'use strict'
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')
const { generatePartition } = require('../fixtures/gen-partition.js')
const { compactGeneration } = require('..')

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gencompact-smoke-'))
  try {
    const gen = await generatePartition({ dir: path.join(tmp, 'in'), rows: 600, files: 12, tuples: 3, seed: 5, fatBytes: 2000, rowBytes: 1000 })
    const r = await compactGeneration(gen.files, { outDir: path.join(tmp, 'api'), partitionBy: [{ column: 'session_id' }], sortBy: [{ column: 'ts' }] })
    const cli = spawnSync(process.execPath, [path.join(__dirname, '..', 'cli', 'gencompact.js'), 'compact', path.join(tmp, 'in'), '--out', path.join(tmp, 'cli'), '--json'], { encoding: 'utf8' })
    const viaCli = cli.status === 0 ? JSON.parse(cli.stdout) : null
    const ok = r.rowsWritten === gen.rows && r.files.length === 3 && viaCli && viaCli.rowsWritten === gen.rows
    console.log(`smoke (${process.platform}-${process.arch}, node ${process.version}): API ${r.rowsWritten}/${gen.rows} rows in ${r.files.length} files, CLI ${viaCli ? viaCli.rowsWritten : `failed (${cli.status}): ${cli.stderr}`}`)
    console.log(ok ? '1 passed, 0 failed' : '0 passed, 1 failed')
    process.exitCode = ok ? 0 : 1
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
