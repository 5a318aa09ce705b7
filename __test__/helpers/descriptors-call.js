'use strict'
// One compactGeneration call that counts the descriptors the process holds while it runs (every
// 2 ms, in /proc/self/fd: the call runs on the addon's threads, so the event loop is free to
// look) and prints one JSON line: { phase, code?, message?, idleDescriptors, mostDescriptors,
// limit (the soft and hard "Max open files" of /proc/self/limits), rowsWritten, spill,
// peakMemoryBytes, files }. Run by descriptors.spec.js under `ulimit -n`.
//   node descriptors-call.js call.json      (call.json: { "files": [...], "opts": {...} })

const fs = require('fs')
const { compactGeneration } = require('../..')

const count = () => fs.readdirSync('/proc/self/fd').length
const { files, opts } = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))
const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find(l => l.startsWith('Max open files'))
const [soft, hard] = line.trim().split(/\s+/).slice(3, 5).map(Number)
const idle = count()
let most = idle
const poll = setInterval(() => { most = Math.max(most, count()) }, 2)
const done = outcome => {
  clearInterval(poll)
  most = Math.max(most, count())
  process.stdout.write(`${JSON.stringify({ ...outcome, idleDescriptors: idle, mostDescriptors: most, limit: { soft, hard } })}\n`)
}
compactGeneration(files, opts).then(
  r => done({ phase: 'resolved', rowsWritten: r.rowsWritten, spill: r.spill, peakMemoryBytes: r.peakMemoryBytes, files: r.files.map(f => f.path) }),
  e => done({ phase: 'rejected', code: e.code, message: e.message }),
)
