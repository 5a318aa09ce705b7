#!/usr/bin/env node
// Runs the Rust core's tests (`cargo test --release`) for the host triple, so they reuse the
// dependencies `napi build --platform --release` just compiled instead of building them again;
// with the `test-hooks` feature, as `npm run build:test` builds the addon the jest suite loads.
'use strict'
const { execFileSync, spawnSync } = require('child_process')

const info = execFileSync('rustc', ['-vV'], { encoding: 'utf8' })
const host = /^host: (\S+)$/m.exec(info)
if (!host) {
  console.error('cannot determine the host triple from `rustc -vV`')
  process.exit(1)
}
const r = spawnSync('cargo', ['test', '--release', '--features', 'test-hooks', '--target', host[1], ...process.argv.slice(2)], { stdio: 'inherit' })
process.exit(r.status === null ? 1 : r.status)
