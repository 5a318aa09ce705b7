#!/usr/bin/env node
'use strict'
// Ensures the Python side of the test suite: pyarrow (an independent Parquet reader used by
// __test__/interop.spec.js). Installs it with pip only when `import pyarrow` fails; exits non-zero
// when it still cannot be imported.

const { spawnSync } = require('child_process')

function canImport() {
  const r = spawnSync('python3', ['-c', 'import pyarrow'], { stdio: 'ignore' })
  return r.status === 0
}

if (canImport()) process.exit(0)

console.error('pydeps: pyarrow missing, installing with pip')
const pip = spawnSync('python3', ['-m', 'pip', 'install', '--quiet', 'pyarrow'], { stdio: 'inherit' })
if (pip.error || pip.status !== 0) {
  console.error(`pydeps: pip install pyarrow failed (${pip.error ? pip.error.message : `exit ${pip.status}`})`)
  process.exit(1)
}
if (!canImport()) {
  console.error('pydeps: pyarrow still cannot be imported after pip install')
  process.exit(1)
}
