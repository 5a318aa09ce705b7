'use strict'
// Runs hyparquet / hyparquet-writer work in a worker thread (see hyp-worker.mjs for why).

const path = require('path')
const { Worker } = require('worker_threads')

const WORKER = path.join(__dirname, 'hyp-worker.mjs')

function run(op, ...args) {
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER, { workerData: { op, args }, resourceLimits: { maxOldGenerationSizeMb: 4096 } })
    let settled = false
    w.once('message', msg => {
      settled = true
      if (msg.ok) resolve(msg.result)
      else reject(Object.assign(new Error(`hyp-worker ${op}: ${msg.error.message}`), { workerStack: msg.error.stack }))
    })
    w.once('error', err => {
      settled = true
      reject(err)
    })
    w.once('exit', code => {
      if (!settled) reject(new Error(`hyp-worker ${op} exited with code ${code} before answering`))
    })
  })
}

module.exports = {
  /** generatePartition(opts) from fixtures/gen-partition.js */
  generate: opts => run('generate', opts),
  /** { count, entries: sorted '<row id> <row digest>' strings, columns } over all files */
  rowDigests: (files, opts = {}) => run('rowDigests', files, opts),
  sampleRows: (file, opts = {}) => run('sampleRows', file, opts),
  metadata: file => run('metadata', file),
  retypedCopy: (source, target, spec) => run('retypedCopy', source, target, spec),
  /** hyparquet-writer writes `{ columnData, rowGroupSize, codec }` to `target` */
  writeColumns: (target, spec) => run('writeColumns', target, spec),
}
