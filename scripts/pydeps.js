#!/usr/bin/env node
'use strict'
// Ensures the Python side of the test suite: pyarrow (an independent Parquet reader), pyiceberg
// (Iceberg's partition transforms, and a real table in __test__/iceberg.spec.js), sqlalchemy
// (pyiceberg's SQL catalog, on SQLite), pyroaring (the Roaring bitmaps of deletion vectors, and
// pyiceberg's own deletion-vector reader) and duckdb (the expected rows in __test__/deletes.spec.js).
// Installs them with pip only when importing them fails; exits non-zero when they still cannot be
// imported.

const { spawnSync } = require('child_process')

// module to import -> what pip installs when it is missing
const MODULES = {
  pyarrow: 'pyarrow',
  pyiceberg: 'pyiceberg[sql-sqlite]>=0.12',
  sqlalchemy: 'pyiceberg[sql-sqlite]>=0.12',
  pyroaring: 'pyroaring>=1.0',
  duckdb: 'duckdb>=1.1',
}

function missing() {
  return Object.keys(MODULES).filter(m => spawnSync('python3', ['-c', `import ${m}`], { stdio: 'ignore' }).status !== 0)
}

const need = missing()
if (need.length === 0) process.exit(0)

const specs = [...new Set(need.map(m => MODULES[m]))]
console.error(`pydeps: installing ${specs.join(', ')} with pip (for ${need.join(', ')})`)
const pip = spawnSync('python3', ['-m', 'pip', 'install', '--quiet', ...specs], { stdio: 'inherit' })
if (pip.error || pip.status !== 0) {
  console.error(`pydeps: pip install failed (${pip.error ? pip.error.message : `exit ${pip.status}`})`)
  process.exit(1)
}
const still = missing()
if (still.length) {
  console.error(`pydeps: ${still.join(', ')} still cannot be imported after pip install`)
  process.exit(1)
}
