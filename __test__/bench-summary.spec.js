'use strict'
// bench/RESULTS.md's summary is the one bench/summary.js generates from its sections (a hand
// edit, or a section re-measured without regenerating it, fails here).

const fs = require('fs')
const path = require('path')
const { summarize, sections } = require('../bench/summary')

test('the summary of bench/RESULTS.md is generated from its sections', () => {
  const text = fs.readFileSync(path.join(__dirname, '..', 'bench', 'RESULTS.md'), 'utf8')
  const summary = sections(text).find(s => s.name === 'summary')
  expect(summary).toBeDefined()
  expect(summary.body).toBe(summarize(text))
  // every gencompact row of every section is in it
  const rows = sections(text).filter(s => s.name !== 'summary').flatMap(s => s.body.split('\n').filter(l => /^\| gencompact[\w-]* \|/.test(l)).map(l => `| ${s.name} | ${l.split('|')[1].trim()} |`))
  expect(rows.length).toBeGreaterThan(10)
  for (const r of rows) expect(summary.body).toContain(r)
})
