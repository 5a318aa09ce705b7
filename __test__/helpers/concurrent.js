'use strict'
// Child process for the load tests: runs one compactGeneration call per group of files, all at
// once, and prints { maxActive, rowsWritten } as JSON — how many calls were running (between their
// 'plan' and 'done' progress events) at the same time. The call gate reads its limit from the real
// environment (GENCOMPACT_MAX_CONCURRENT_CALLS) once per process, hence a child.
//   node concurrent.js '<json: { groups: [[file, ...], ...], outDir, opts }>'

const path = require('path')
const { compactGeneration } = require('../..')

const { groups, outDir, opts } = JSON.parse(process.argv[2])
let active = 0
let maxActive = 0
Promise.all(groups.map((files, i) => compactGeneration(files, {
  ...opts,
  outDir: path.join(outDir, `call-${i}`),
  onProgress: p => {
    if (p.phase === 'plan') maxActive = Math.max(maxActive, ++active)
    if (p.phase === 'done') active--
  },
}))).then(results => {
  process.stdout.write(JSON.stringify({ maxActive, rowsWritten: results.reduce((n, r) => n + r.rowsWritten, 0) }) + '\n')
}, err => {
  process.stdout.write(JSON.stringify({ error: err.code, message: err.message }) + '\n')
  process.exitCode = 1
})
