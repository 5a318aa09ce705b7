'use strict'
// One compactGeneration call in a child process, for what a test cannot do in its own: environment
// switches (test-only hooks read the real process environment, which jest sandboxes) and SIGKILL.
// Prints every progress event, then the outcome, as JSON lines on stdout.
//   node child.js '<json: { files, opts }>'

const { compactGeneration } = require('../..')

const { files, opts } = JSON.parse(process.argv[2])
compactGeneration(files, { ...opts, onProgress: p => process.stdout.write(JSON.stringify(p) + '\n') })
  .then(r => process.stdout.write(JSON.stringify({ phase: 'resolved', files: r.files.length, rowsRead: r.rowsRead, rowsWritten: r.rowsWritten }) + '\n'))
  .catch(e => { process.stdout.write(JSON.stringify({ phase: 'rejected', code: e.code, message: e.message }) + '\n'); process.exitCode = 1 })
