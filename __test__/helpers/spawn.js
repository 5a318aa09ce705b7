'use strict'
// Runs one compactGeneration call in a child process (helpers/child.js) with extra environment:
// the test-only switches are read from the real process environment, which jest sandboxes.

const path = require('path')
const { spawnSync } = require('child_process')

const CHILD = path.join(__dirname, 'child.js')

/** The call's outcome: { phase: 'resolved', files, rowsRead, rowsWritten } or { phase: 'rejected', code, message }. */
function runInChild(files, opts, env = {}) {
  const r = spawnSync(process.execPath, [CHILD, JSON.stringify({ files, opts })], { env: { ...process.env, ...env }, encoding: 'utf8' })
  const last = r.stdout.trim().split('\n').pop()
  if (!last) throw new Error(`child printed nothing: status ${r.status}, signal ${r.signal}, stderr ${r.stderr}`)
  return JSON.parse(last)
}

module.exports = { CHILD, runInChild }
