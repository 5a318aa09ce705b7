'use strict'
// One compactGeneration call for __test__/crafted.spec.js, run by run.py in a process of its own
// (an abort or a signal then fails a test instead of killing jest). Prints one JSON line: the
// outcome, the output paths and the process's own peak RSS.
//   node call.js '<json: { files, opts }>'     or     node call.js idle
const path = require('path')
const { compactGeneration } = require(path.join(__dirname, '..', '..'))

const rss = () => process.resourceUsage().maxRSS * 1024
if (process.argv[2] === 'idle') {
  process.stdout.write(JSON.stringify({ phase: 'idle', maxRssBytes: rss() }) + '\n')
} else {
  const { files, opts } = JSON.parse(process.argv[2])
  compactGeneration(files, opts)
    .then(r => process.stdout.write(JSON.stringify({
      phase: 'resolved', files: r.files.map(f => f.path), rowsRead: r.rowsRead, rowsDeleted: r.rowsDeleted,
      rowsWritten: r.rowsWritten, peakMemoryBytes: r.peakMemoryBytes, maxRssBytes: rss(),
    }) + '\n'))
    .catch(e => {
      process.stdout.write(JSON.stringify({ phase: 'rejected', code: e.code, message: e.message, maxRssBytes: rss() }) + '\n')
      process.exitCode = 1
    })
}
