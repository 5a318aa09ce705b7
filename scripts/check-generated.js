#!/usr/bin/env node
'use strict'
// The build regenerates index.d.ts and index.js from the #[napi] declarations (@napi-rs/cli);
// they are the user-facing contract, so a build that changes them must fail the tests until the
// change is committed: the TypeScript a user reads is the one the addon exports.
//   node scripts/check-generated.js    (after `npm run build`; `build:test` writes its index.d.ts
//   under target/test-addon and does not touch these)

const { execFileSync } = require('child_process')
const path = require('path')

const ROOT = path.join(__dirname, '..')
const FILES = ['index.d.ts', 'index.js']

function main() {
  let inGit = true
  try {
    execFileSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd: ROOT, stdio: 'ignore' })
  } catch {
    inGit = false
  }
  if (!inGit) {
    console.error('check-generated: not a git checkout, so there is no committed index.d.ts to compare with')
    process.exit(1)
  }
  const diff = execFileSync('git', ['diff', '--stat', 'HEAD', '--', ...FILES], { cwd: ROOT, encoding: 'utf8' })
  if (diff.trim()) {
    console.error(`check-generated: the build changed the generated contract; commit it if the change is meant:\n${diff}`)
    process.exit(1)
  }
  console.log(`check-generated: ${FILES.join(', ')} as committed`)
}

main()
