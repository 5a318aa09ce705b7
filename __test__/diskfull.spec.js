'use strict'
// Disk full and hostile paths: on a 1 MiB tmpfs that fills up mid-run the call rejects with
// ERR_IO saying "disk full", removes its files, and succeeds once space is back; temporary files
// are created exclusively, never through an existing path or a symlink planted in outDir.

const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { makeTmpDir, removeDir, hashFiles } = require('./helpers/fsutil')
const { expectCompactError } = require('./helpers/assertions')

let tmp
let gen
let mnt

beforeAll(async () => {
  tmp = makeTmpDir('diskfull')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 1500, files: 12, tuples: 2, seed: 83 })
  mnt = path.join(tmp, 'small')
  fs.mkdirSync(mnt)
  // a real small filesystem (the suite runs as root: CI and this machine)
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt])
})

afterAll(() => {
  if (mnt) {
    try { execFileSync('umount', [mnt]) } catch { /* not mounted */ }
  }
  removeDir(tmp)
})

describe('disk full', () => {
  test('rejects with ERR_IO "disk full", leaves nothing, and the next call succeeds once space is back', async () => {
    const outDir = path.join(mnt, 'out')
    // uncompressed, the output is far larger (2.8 MB) than the 1 MiB filesystem; zstd's (0.55 MB) fits
    const err = await expectCompactError(() => compactGeneration(gen.files, { outDir, compression: 'none' }), {
      code: 'ERR_IO', outDir, inputs: gen.files, message: /disk full/,
    })
    expect(err.message).toContain(mnt)
    expect(fs.readdirSync(mnt)).toEqual([])
    const free = Number(execFileSync('df', ['--output=avail', '-B1', mnt], { encoding: 'utf8' }).trim().split('\n').pop())
    expect(free).toBeGreaterThan(0.95 * 2 ** 20) // every byte of the failed call was given back
    // space is back (the failed call's files are gone, and zstd output fits): the same call succeeds
    const r = await compactGeneration(gen.files, { outDir })
    expect(r.rowsWritten).toBe(gen.rows)
    expect(fs.readdirSync(outDir).every(n => n.endsWith('.parquet'))).toBe(true)
  })
})

describe('hostile paths in outDir', () => {
  test('a symlink planted at a temporary file name is never written through', async () => {
    const outDir = path.join(tmp, 'planted')
    fs.mkdirSync(outDir)
    const victim = path.join(tmp, 'victim.txt')
    fs.writeFileSync(victim, 'keep me')
    fs.symlinkSync(victim, path.join(outDir, 'evil-00000.parquet.tmp'))
    await expectCompactError(() => compactGeneration(gen.files, { outDir, fileNamePrefix: 'evil' }), {
      code: 'ERR_IO', inputs: gen.files, mentions: ['evil-00000.parquet.tmp'],
    })
    expect(fs.readFileSync(victim, 'utf8')).toBe('keep me')
    expect(fs.lstatSync(path.join(outDir, 'evil-00000.parquet.tmp')).isSymbolicLink()).toBe(true)
    expect(fs.readdirSync(outDir)).toEqual(['evil-00000.parquet.tmp'])
  })

  test('a symlink planted at a spill file name is never written through either', async () => {
    const outDir = path.join(tmp, 'planted-spill')
    fs.mkdirSync(outDir)
    const victim = path.join(tmp, 'victim-spill.txt')
    fs.writeFileSync(victim, 'keep me too')
    fs.symlinkSync(victim, path.join(outDir, 'sp-spill-00000.arrow.tmp'))
    const before = hashFiles(gen.files)
    const r = await compactGeneration(gen.files, { outDir, fileNamePrefix: 'sp', sortBy: [{ column: 'ts' }], batchBytes: 1 << 20 })
    expect(r.rowsWritten).toBe(gen.rows) // the taken name is skipped, the next one used
    expect(fs.readFileSync(victim, 'utf8')).toBe('keep me too')
    expect(fs.readdirSync(outDir).filter(n => n.includes('-spill-'))).toEqual(['sp-spill-00000.arrow.tmp'])
    expect(hashFiles(gen.files)).toEqual(before)
  })
})
