#!/usr/bin/env node
'use strict'
// Layering: the crate's modules must not depend on each other in a cycle. Reads every
// `src/**/*.rs` (its unit tests left out), collects the `crate::<module>` paths it names
// (`use` lines and inline paths; `super::` from a nested module names its parent), and fails
// naming each cycle found between top-level modules (`iceberg::*` counted per submodule).
//   node scripts/layering.js [--print]   (--print: the dependency list)

const fs = require('fs')
const path = require('path')

const SRC = path.join(__dirname, '..', 'src')

function files(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.rs') ? [path.join(dir, e.name)] : []))
}

/** The module a file is, as the graph counts it: `compact`, `options`, `iceberg::deletes`. */
function moduleOf(file) {
  const parts = path.relative(SRC, file).replace(/\.rs$/, '').split(path.sep)
  if (parts[parts.length - 1] === 'mod') parts.pop()
  if (parts[0] === 'iceberg' && parts.length > 1) return `iceberg::${parts[1]}`
  return parts[0] === 'lib' ? null : parts[0]
}

/** `crate::a::b` -> the module it lands in. */
function target(p) {
  const parts = p.split('::')
  if (parts[0] === 'iceberg' && parts[1] && /^[a-z_]+$/.test(parts[1])) return `iceberg::${parts[1]}`
  return parts[0]
}

function dependencies() {
  const deps = new Map()
  for (const file of files(SRC)) {
    const from = moduleOf(file)
    if (!from) continue
    let text = fs.readFileSync(file, 'utf8')
    const tests = text.search(/#\[cfg\(test\)\]\s*mod tests/)
    if (tests >= 0) text = text.slice(0, tests)
    text = text.replace(/\/\/.*$/gm, '')
    const set = deps.get(from) || new Set()
    for (const m of text.matchAll(/\bcrate::([a-z_][a-z_0-9]*(?:::[a-z_][a-z_0-9]*)?)/g)) set.add(target(m[1]))
    // `use crate::{a, b::c}` groups
    for (const m of text.matchAll(/\bcrate::\{([^}]*)\}/g)) for (const item of m[1].split(',')) if (item.trim()) set.add(target(item.trim()))
    // (`super::` inside iceberg/ names a sibling: `super::partition` -> iceberg::partition)
    if (from.startsWith('iceberg::')) for (const m of text.matchAll(/\bsuper::([a-z_]+)/g)) set.add(`iceberg::${m[1]}`)
    set.delete(from)
    deps.set(from, set)
  }
  for (const [m, set] of deps) for (const d of [...set]) if (!deps.has(d)) set.delete(d) // (crate-root items)
  return deps
}

/** Strongly connected components with more than one module (Tarjan). */
function cycles(deps) {
  let index = 0
  const stack = []
  const on = new Set()
  const idx = new Map()
  const low = new Map()
  const out = []
  const visit = (v) => {
    idx.set(v, index)
    low.set(v, index++)
    stack.push(v)
    on.add(v)
    for (const w of deps.get(v) || []) {
      if (!idx.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v), low.get(w)))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)))
    }
    if (low.get(v) === idx.get(v)) {
      const scc = []
      let w
      do {
        w = stack.pop()
        on.delete(w)
        scc.push(w)
      } while (w !== v)
      if (scc.length > 1) out.push(scc.sort())
    }
  }
  for (const v of [...deps.keys()].sort()) if (!idx.has(v)) visit(v)
  return out
}

function main() {
  const deps = dependencies()
  if (process.argv.includes('--print')) for (const [m, set] of [...deps].sort()) console.log(`${m} -> ${[...set].sort().join(', ')}`)
  const found = cycles(deps)
  if (found.length) {
    for (const c of found) {
      const edges = c.flatMap((a) => [...deps.get(a)].filter((b) => c.includes(b)).map((b) => `${a} -> ${b}`))
      console.error(`layering: modules depend on each other in a cycle: ${c.join(', ')}\n  ${edges.join('\n  ')}`)
    }
    process.exit(1)
  }
  console.log(`layering: ${deps.size} modules, no cycle`)
}

if (require.main === module) main()
module.exports = { dependencies, cycles }
