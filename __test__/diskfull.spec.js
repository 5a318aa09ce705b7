'use strict'
// Disk full, unwritable outDirs and hostile paths: a disk that fills up mid-run makes the call
// reject with ERR_IO saying "disk full" and remove its files — shown without privileges through
// the test switch that fails writes past a byte budget with ENOSPC, and, where the suite runs as
// root, on a real 1 MiB tmpfs (the call then succeeds once space is back); an unwritable outDir
// (a read-only mount as root, a directory without write permission otherwise) is ERR_IO;
// temporary files are created exclusively, never through an existing path or a symlink planted
// in outDir. With the `cleanup` or `exclusive` guard switched off (in a child process) the same
// checks fail: files are left behind, the symlink is written through.

const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { makeTmpDir, removeDir, hashFiles, ourFiles } = require('./helpers/fsutil')
const { expectCompactError } = require('./helpers/assertions')
const { runInChild } = require('./helpers/spawn')

// Mounting needs root; an unprivileged run (the GitHub workflow's user) tests the same through
// the ENOSPC switch and a directory without write permission.
const ROOT = typeof process.getuid === 'function' && process.getuid() === 0

let tmp
let gen
let mnt
let ro

beforeAll(async () => {
  tmp = makeTmpDir('diskfull')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 1500, files: 12, tuples: 2, seed: 83 })
  ro = path.join(tmp, 'readonly')
  fs.mkdirSync(ro)
  if (ROOT) {
    // a real small filesystem, and a read-only one
    mnt = path.join(tmp, 'small')
    fs.mkdirSync(mnt)
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt])
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', ro])
  } else {
    fs.chmodSync(ro, 0o555)
  }
})

afterAll(() => {
  for (const m of [mnt, ro]) {
    if (!m || !ROOT) continue
    try { execFileSync('umount', [m]) } catch { /* not mounted */ }
  }
  if (!ROOT && ro) fs.chmodSync(ro, 0o755)
  removeDir(tmp)
})

const freeBytes = dir => Number(execFileSync('df', ['--output=avail', '-B1', dir], { encoding: 'utf8' }).trim().split('\n').pop())

describe('disk full, without a mount (writes past a byte budget fail with ENOSPC)', () => {
  test('rejects with ERR_IO "disk full" naming the file, and leaves nothing', () => {
    const outDir = path.join(tmp, 'budget')
    const outcome = runInChild(gen.files, { outDir, compression: 'none' }, { GENCOMPACT_TEST_DISK_BYTES: String(1 << 20) })
    expect(outcome).toEqual(expect.objectContaining({ phase: 'rejected', code: 'ERR_IO', message: expect.stringMatching(/disk full/) }))
    expect(outcome.message).toContain(outDir)
    expect(fs.existsSync(outDir) ? ourFiles(outDir) : []).toEqual([])
    // the same call within the budget succeeds
    const ok = runInChild(gen.files, { outDir, compression: 'none' }, { GENCOMPACT_TEST_DISK_BYTES: String(64 << 20) })
    expect(ok).toEqual(expect.objectContaining({ phase: 'resolved', rowsWritten: gen.rows }))
  })

  test('with the cleanup guard off, the failed call leaves its files behind (so the check can fail)', () => {
    const outDir = path.join(tmp, 'budget-unguarded')
    const outcome = runInChild(gen.files, { outDir, compression: 'none' }, { GENCOMPACT_TEST_DISK_BYTES: String(1 << 20), GENCOMPACT_TEST_DISABLE_GUARDS: 'cleanup' })
    expect(outcome).toEqual(expect.objectContaining({ phase: 'rejected', code: 'ERR_IO', message: expect.stringMatching(/disk full/) }))
    expect(ourFiles(outDir).length).toBeGreaterThan(0)
  })
})

;(ROOT ? describe : () => {})('disk full on a 1 MiB tmpfs (as root)', () => {
  test('rejects with ERR_IO "disk full", leaves nothing, and the next call succeeds once space is back', async () => {
    const outDir = path.join(mnt, 'out')
    // uncompressed, the output is far larger (2.8 MB) than the 1 MiB filesystem; zstd's (0.55 MB) fits
    const err = await expectCompactError(() => compactGeneration(gen.files, { outDir, compression: 'none' }), {
      code: 'ERR_IO', outDir, inputs: gen.files, message: /disk full/,
    })
    expect(err.message).toContain(mnt)
    expect(fs.readdirSync(mnt)).toEqual([])
    expect(freeBytes(mnt)).toBeGreaterThan(0.95 * 2 ** 20) // every byte of the failed call was given back
    // space is back (the failed call's files are gone, and zstd output fits): the same call succeeds
    const r = await compactGeneration(gen.files, { outDir })
    expect(r.rowsWritten).toBe(gen.rows)
    expect(fs.readdirSync(outDir).every(n => n.endsWith('.parquet'))).toBe(true)
    fs.rmSync(outDir, { recursive: true })
  })

  test('with the cleanup guard off, the failed call leaves its files behind (so the check can fail)', () => {
    const outDir = path.join(mnt, 'unguarded')
    const outcome = runInChild(gen.files, { outDir, compression: 'none' }, { GENCOMPACT_TEST_DISABLE_GUARDS: 'cleanup' })
    expect(outcome).toEqual(expect.objectContaining({ phase: 'rejected', code: 'ERR_IO', message: expect.stringMatching(/disk full/) }))
    expect(fs.readdirSync(outDir).length).toBeGreaterThan(0)
    expect(freeBytes(mnt)).toBeLessThan(0.5 * 2 ** 20)
    fs.rmSync(outDir, { recursive: true })
  })
})

describe('unwritable outDir', () => {
  test.each([
    ['an existing directory that cannot be written (a read-only mount as root, no write permission otherwise)', () => ro],
    ['a directory to be created inside one', () => path.join(ro, 'sub', 'dir')],
  ])('%s: ERR_IO naming it, nothing written', async (_name, dir) => {
    const outDir = dir()
    const err = await expectCompactError(() => compactGeneration(gen.files, { outDir }), { code: 'ERR_IO', outDir, inputs: gen.files })
    expect(err.message).toContain(ro)
    expect(fs.readdirSync(ro)).toEqual([])
  })
})

/** A fresh outDir `dir` holding a symlink `name` to a victim file outside it; returns both paths. */
function plant(dir, name, text) {
  const outDir = path.join(tmp, dir)
  fs.mkdirSync(outDir)
  const victim = path.join(tmp, `victim-${dir}.txt`)
  fs.writeFileSync(victim, text)
  fs.symlinkSync(victim, path.join(outDir, name))
  return { outDir, victim }
}

describe('hostile paths in outDir', () => {
  test('a symlink planted at a temporary file name is never written through', async () => {
    const { outDir, victim } = plant('planted', 'evil-00000.parquet.tmp', 'keep me')
    await expectCompactError(() => compactGeneration(gen.files, { outDir, fileNamePrefix: 'evil' }), {
      code: 'ERR_IO', inputs: gen.files, mentions: ['evil-00000.parquet.tmp'],
    })
    expect(fs.readFileSync(victim, 'utf8')).toBe('keep me')
    expect(fs.lstatSync(path.join(outDir, 'evil-00000.parquet.tmp')).isSymbolicLink()).toBe(true)
    expect(fs.readdirSync(outDir)).toEqual(['evil-00000.parquet.tmp'])
  })

  test('with the exclusive guard off, the planted symlink is written through (so the check can fail)', () => {
    const { outDir, victim } = plant('planted-unguarded', 'evil-00000.parquet.tmp', 'keep me')
    runInChild(gen.files, { outDir, fileNamePrefix: 'evil' }, { GENCOMPACT_TEST_DISABLE_GUARDS: 'exclusive' })
    expect(fs.readFileSync(victim).subarray(0, 4).toString()).toBe('PAR1')
  })

  test('a symlink planted at a spill file name is never written through either', async () => {
    const { outDir, victim } = plant('planted-spill', 'sp-spill-00000.arrow.tmp', 'keep me too')
    const before = hashFiles(gen.files)
    const r = await compactGeneration(gen.files, { outDir, fileNamePrefix: 'sp', sortBy: [{ column: 'ts' }], batchBytes: 1 << 20 })
    expect(r.rowsWritten).toBe(gen.rows) // the taken name is skipped, the next one used
    expect(fs.readFileSync(victim, 'utf8')).toBe('keep me too')
    expect(fs.readdirSync(outDir).filter(n => n.includes('-spill-'))).toEqual(['sp-spill-00000.arrow.tmp'])
    expect(hashFiles(gen.files)).toEqual(before)
  })
})
