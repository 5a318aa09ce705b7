'use strict'
// Crash safety: a process SIGKILLed at any moment of a run leaves under outDir only `.tmp` files
// (or nothing) and the inputs byte-identical. A test-only hook (GENCOMPACT_TEST_PAUSE_AT) stops the
// run at a chosen point — while reading, mid-file, between files, at verify, inside the final
// renames — and the child is killed there. The renames are the one window where final names and
// `.tmp` files coexist: every file under a final name is then complete (fsynced before). With the
// `tmp-names` guard switched off (outputs written under their final names at once) the same kill
// leaves final-named, incomplete files: the check below is what would catch that.

const fs = require('fs')
const path = require('path')
const { spawn } = require('child_process')
const hyp = require('./helpers/hyp')
const { openDuck } = require('./helpers/duck')
const { CHILD } = require('./helpers/spawn')
const { makeTmpDir, removeDir, hashFiles } = require('./helpers/fsutil')

// small files and row groups: several files, each of several row groups
const OPTS = { targetFileBytes: 256 << 10, batchBytes: 1 << 20, batchRows: 200 }

let tmp
let gen
let duck
let inputHashes

beforeAll(async () => {
  tmp = makeTmpDir('crash')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 3000, files: 40, tuples: 4, seed: 71 })
  inputHashes = hashFiles(gen.files)
  duck = await openDuck()
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

/** Runs the child paused at `point` and SIGKILLs it there; resolves once it is dead. */
function killAt(outDir, point, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, JSON.stringify({ files: gen.files, opts: { outDir, ...OPTS } })], {
      env: { ...process.env, GENCOMPACT_TEST_PAUSE_AT: point, ...env }, stdio: ['ignore', 'ignore', 'pipe'],
    })
    let err = ''
    child.stderr.on('data', d => {
      err += d
      if (err.includes(`gencompact-test: paused at ${point}`)) child.kill('SIGKILL')
    })
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child never paused at ${point}: exit ${code}; stderr ${err}`))
      else resolve()
    })
  })
}

const entries = dir => (fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [])
/** What a crash may not leave: names other than `.tmp` files. */
const finalNamed = dir => entries(dir).filter(n => !n.endsWith('.tmp'))

describe('SIGKILL at any moment leaves only .tmp files and untouched inputs', () => {
  test.each([
    ['while reading (nothing written yet)', 'read'],
    ['mid-file (a row group written, the file still open)', 'row-group'],
    ['between files (one closed, the next not opened)', 'between-files'],
    ['at verify (all written, none renamed)', 'verify'],
  ])('%s', async (_name, point) => {
    const outDir = path.join(tmp, `out-${point}`)
    await killAt(outDir, point)
    expect(finalNamed(outDir)).toEqual([])
    if (point !== 'read') expect(entries(outDir).length).toBeGreaterThan(0) // the kill landed after writing began
    expect(hashFiles(gen.files)).toEqual(inputHashes)
  })

  test('during the final renames: files under final names are complete; the rest are .tmp', async () => {
    const outDir = path.join(tmp, 'out-publish')
    await killAt(outDir, 'publish')
    const left = entries(outDir)
    const published = left.filter(n => n.endsWith('.parquet'))
    expect(published.length).toBe(1)
    expect(left.filter(n => n.endsWith('.parquet.tmp')).length).toBeGreaterThan(1)
    expect(left.filter(n => !n.endsWith('.parquet') && !n.endsWith('.tmp'))).toEqual([])
    const p = path.join(outDir, published[0])
    const meta = await duck.fileMetadata(p)
    const [{ n }] = await duck.q(`SELECT count(*)::INT AS n FROM read_parquet('${p}')`)
    expect(n).toBe(meta.numRows)
    expect(n).toBeGreaterThan(0)
    expect(hashFiles(gen.files)).toEqual(inputHashes)
  })

  test('with the tmp-names guard off, the same kill mid-file leaves a final-named file (so the check can fail)', async () => {
    const outDir = path.join(tmp, 'out-unguarded')
    await killAt(outDir, 'row-group', { GENCOMPACT_TEST_DISABLE_GUARDS: 'tmp-names' })
    expect(finalNamed(outDir).length).toBeGreaterThan(0)
    expect(hashFiles(gen.files)).toEqual(inputHashes)
  })
})
