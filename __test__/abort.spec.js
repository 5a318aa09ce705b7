'use strict'
// AbortSignal before and during a run (ERR_ABORTED, nothing of ours left behind), and the event
// loop staying free while the pool works.

const fs = require('fs')
const path = require('path')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { makeTmpDir, removeDir, hashFiles, ourFiles, existingOutDir, expectForeignFileKept } = require('./helpers/fsutil')
const { expectCompactError } = require('./helpers/assertions')

// zstd at a high level makes the run CPU-bound on the pool for a second or two on this
// fixture: long enough to abort in the middle and to watch a timer, small enough to be quick.
const SLOW = { compression: 'zstd', compressionLevel: 19 }

let tmp
let gen
let baseline // { elapsedMs, ticks, maxGapMs } of an uninterrupted slow run

beforeAll(async () => {
  tmp = makeTmpDir('abort')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 3000, files: 40, tuples: 4, seed: 31 })
})

afterAll(() => {
  if (baseline) {
    console.log(`liveness: ${baseline.ticks} ticks of a 5 ms interval in ${baseline.elapsedMs.toFixed(0)} ms, max gap ${baseline.maxGapMs.toFixed(1)} ms`)
  }
  removeDir(tmp)
})

describe('the event loop stays free during a run', () => {
  test('a 5 ms interval keeps ticking while compacting', async () => {
    const ticks = []
    const timer = setInterval(() => ticks.push(performance.now()), 5)
    const t0 = performance.now()
    let result
    try {
      result = await compactGeneration(gen.files, { outDir: path.join(tmp, 'live'), fileNamePrefix: 'live', ...SLOW })
    } finally {
      clearInterval(timer)
    }
    const elapsedMs = performance.now() - t0
    const stamps = [t0, ...ticks]
    let maxGapMs = 0
    for (let i = 1; i < stamps.length; i++) maxGapMs = Math.max(maxGapMs, stamps[i] - stamps[i - 1])
    baseline = { elapsedMs, ticks: ticks.length, maxGapMs }
    expect(result.rowsWritten).toBe(gen.rows)
    // the run has to last long enough for this to mean anything
    expect(elapsedMs).toBeGreaterThan(200)
    // liveness, not performance: at least a quarter of the ticks a free loop would give
    expect(ticks.length).toBeGreaterThan(elapsedMs / 5 / 4)
    expect(maxGapMs).toBeLessThan(100)
  })

  test('other JS work (a promise chain, file I/O) completes while a run is in flight', async () => {
    const run = compactGeneration(gen.files, { outDir: path.join(tmp, 'live2'), fileNamePrefix: 'live2', ...SLOW })
    let settled = false
    run.then(() => { settled = true }, () => { settled = true })
    const t0 = performance.now()
    for (let i = 0; i < 20; i++) {
      await new Promise(resolve => setImmediate(resolve))
      fs.readFileSync(gen.files[i])
    }
    const busyMs = performance.now() - t0
    expect(settled).toBe(false)
    expect(busyMs).toBeLessThan(500)
    const r = await run
    expect(r.rowsWritten).toBe(gen.rows)
  })
})

describe('ERR_ABORTED', () => {
  test('an already-aborted signal: rejected, outDir not created, inputs untouched', async () => {
    const outDir = path.join(tmp, 'pre-aborted')
    const ac = new AbortController()
    ac.abort()
    await expectCompactError(() => compactGeneration(gen.files, { outDir, signal: ac.signal }), {
      code: 'ERR_ABORTED', outDir, inputs: gen.files,
    })
    expect(fs.existsSync(outDir)).toBe(false)
  })

  test('an already-aborted signal into an existing outDir leaves it as it was', async () => {
    const outDir = existingOutDir(tmp)
    await expectCompactError(() => compactGeneration(gen.files, { outDir, signal: AbortSignal.abort() }), {
      code: 'ERR_ABORTED', outDir, inputs: gen.files,
    })
    expectForeignFileKept(outDir)
  })

  test('aborted from onProgress mid-write: rejected, the .tmp files seen mid-run are gone', async () => {
    const outDir = existingOutDir(tmp)
    const ac = new AbortController()
    let seenAtAbort = null
    let abortedAt = 0
    const err = await expectCompactError(() => compactGeneration(gen.files, {
      outDir,
      signal: ac.signal,
      ...SLOW,
      onProgress: e => {
        if (seenAtAbort === null && e.phase === 'write' && e.rowsWritten > 0) {
          seenAtAbort = { files: ourFiles(outDir), rowsWritten: e.rowsWritten }
          abortedAt = performance.now()
          ac.abort()
        }
      },
    }), { code: 'ERR_ABORTED', outDir, inputs: gen.files })
    const latencyMs = performance.now() - abortedAt
    expect(seenAtAbort).not.toBeNull()
    expect(seenAtAbort.rowsWritten).toBeLessThan(gen.rows)
    expect(seenAtAbort.files.length).toBeGreaterThan(0)
    expect(seenAtAbort.files.every(f => f.endsWith('.tmp'))).toBe(true)
    expectForeignFileKept(outDir)
    // the call stops instead of finishing its work
    if (baseline) expect(latencyMs).toBeLessThan(baseline.elapsedMs)
    expect(err.code).toBe('ERR_ABORTED')
  })

  test('aborted by a timer mid-run into a fresh outDir: nothing of ours remains', async () => {
    const outDir = path.join(tmp, 'timer', 'out')
    const ac = new AbortController()
    const timer = setTimeout(() => ac.abort(), 150)
    try {
      await expectCompactError(() => compactGeneration(gen.files, { outDir, signal: ac.signal, ...SLOW }), {
        code: 'ERR_ABORTED', outDir, inputs: gen.files,
      })
    } finally {
      clearTimeout(timer)
    }
    expect(ourFiles(outDir)).toEqual([])
  })

  test('abort after the call resolved changes nothing', async () => {
    const outDir = path.join(tmp, 'late-abort')
    const ac = new AbortController()
    const r = await compactGeneration(gen.files.slice(0, 10), { outDir, signal: ac.signal, fileNamePrefix: 'late' })
    const before = hashFiles(r.files.map(f => f.path))
    ac.abort()
    await new Promise(resolve => setTimeout(resolve, 50))
    expect(hashFiles(r.files.map(f => f.path))).toEqual(before)
  })

  test('the addon works normally after an aborted call', async () => {
    const r = await compactGeneration(gen.files, { outDir: path.join(tmp, 'after-abort'), fileNamePrefix: 'after' })
    expect(r.rowsWritten).toBe(gen.rows)
    expect(r.files.reduce((s, f) => s + f.recordCount, 0)).toBe(gen.rows)
  })
})
