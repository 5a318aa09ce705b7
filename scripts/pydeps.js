#!/usr/bin/env node
'use strict'
// Ensures the Python side of the test suite: pyarrow (an independent Parquet reader) and
// pyiceberg (Iceberg's partition transforms). Installs them with pip only when importing them
// fails; exits non-zero when they still cannot be imported.

const { spawnSync } = require('child_process')

const MODULES = ['pyarrow', 'pyiceberg']

function missing() {
  return MODULES.filter(m => spawnSync('python3', ['-c', `import ${m}`], { stdio: 'ignore' }).status !== 0)
}

const need = missing()
if (need.length === 0) process.exit(0)

console.error(`pydeps: installing ${need.join(', ')} with pip`)
const pip = spawnSync('python3', ['-m', 'pip', 'install', '--quiet', ...need], { stdio: 'inherit' })
if (pip.error || pip.status !== 0) {
  console.error(`pydeps: pip install failed (${pip.error ? pip.error.message : `exit ${pip.status}`})`)
  process.exit(1)
}
const still = missing()
if (still.length) {
  console.error(`pydeps: ${still.join(', ')} still cannot be imported after pip install`)
  process.exit(1)
}
