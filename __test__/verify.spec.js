'use strict'
// verify: a fault injected after the input rows were digested (a test-only hook that drops a row
// or overwrites one with a copy of another, as a pipeline bug would) is caught before anything
// is published: ERR_VERIFY_FAILED, no file left. With verify off (the guard's switch) the same
// fault goes through unnoticed, so these tests fail if verification stops checking. The hook is an
// environment switch, so each faulty call runs in a child process (helpers/child.js).

const path = require('path')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { runInChild } = require('./helpers/spawn')
const { makeTmpDir, removeDir, ourFiles, hashFiles } = require('./helpers/fsutil')

let tmp
let gen

beforeAll(async () => {
  tmp = makeTmpDir('verify')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 900, files: 9, tuples: 3, seed: 91 })
})

afterAll(() => removeDir(tmp))

/** The outcome ({ phase: 'resolved' | 'rejected', ... }) of one call run with the fault switched on. */
function withFault(fault, opts) {
  return runInChild(gen.files, opts, { GENCOMPACT_TEST_FAULT: fault })
}

describe.each([
  ['drop-row', /900 expected/],
  ['alter-row', /content digest differs/],
])('fault %s', (fault, message) => {
  test.each([
    ['plain', {}],
    // (descending: the inputs' rows ascend, so every tuple is out of order and spills)
    ['partitioned, sorted and spilled', { partitionBy: [{ column: 'session_id' }], sortBy: [{ column: 'ts', descending: true }], batchBytes: 1 << 18 }],
  ])('%s: ERR_VERIFY_FAILED, nothing published', async (name, extra) => {
    const outDir = path.join(tmp, `${fault}-${name.replace(/\W+/g, '-')}`)
    const before = hashFiles(gen.files)
    const outcome = withFault(fault, { outDir, ...extra })
    expect(outcome).toEqual({ phase: 'rejected', code: 'ERR_VERIFY_FAILED', message: expect.stringMatching(message) })
    expect(ourFiles(outDir)).toEqual([])
    expect(hashFiles(gen.files)).toEqual(before)
  })

  test('with verify off the fault goes through (the guard is what catches it)', async () => {
    const outDir = path.join(tmp, `${fault}-unverified`)
    const r = withFault(fault, { outDir, verify: false })
    expect(r).toEqual({ phase: 'resolved', files: 1, rowsRead: 900, rowsWritten: fault === 'drop-row' ? 899 : 900 })
    expect(ourFiles(outDir).length).toBe(1)
  })
})

test('without a fault, verification passes on the same calls', async () => {
  const r = await compactGeneration(gen.files, { outDir: path.join(tmp, 'clean'), partitionBy: [{ column: 'session_id' }], sortBy: [{ column: 'ts', descending: true }], batchBytes: 1 << 18 })
  expect(r.rowsWritten).toBe(900)
  // the "spilled" case above really spills
  expect(r.spill.runs).toBeGreaterThan(0)
})
