'use strict'
// Load and leaks, from one process: 8 concurrent calls on different partitions (correct output,
// at most one running call per core, event loop p99 lag under 20 ms), and 1,000 failing plus
// 1,000 successful calls leaving open file descriptors and temporary files flat.

const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')
const { monitorEventLoopDelay } = require('perf_hooks')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { openDuck } = require('./helpers/duck')
const { makeTmpDir, removeDir, listTree } = require('./helpers/fsutil')
const { rejectionOf } = require('./helpers/assertions')

let tmp
let duck
let gen
let tiny

const openFds = () => fs.readdirSync('/proc/self/fd').length
const leftovers = dir => listTree(dir).filter(p => p.endsWith('.tmp'))

beforeAll(async () => {
  tmp = makeTmpDir('load')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 4000, files: 64, tuples: 8, seed: 57 })
  tiny = await hyp.generate({ dir: path.join(tmp, 'tiny'), rows: 24, files: 2, tuples: 1, seed: 58 })
  duck = await openDuck()
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

describe('8 concurrent calls from one process', () => {
  test('all succeed with their own rows, run at most one per core, and the event loop stays under 20 ms p99', async () => {
    const groups = Array.from({ length: 8 }, (_, i) => gen.files.filter((_, j) => j % 8 === i))
    const lag = monitorEventLoopDelay({ resolution: 1 })
    let active = 0
    let maxActive = 0
    lag.enable()
    const results = await Promise.all(groups.map((files, i) => compactGeneration(files, {
      outDir: path.join(tmp, `concurrent-${i}`),
      sortBy: [{ column: 'ts' }],
      batchBytes: 2 << 20,
      onProgress: p => {
        if (p.phase === 'plan') maxActive = Math.max(maxActive, ++active)
        if (p.phase === 'done') active--
      },
    })))
    lag.disable()
    const p99 = lag.percentile(99) / 1e6
    console.log(`8 concurrent calls: event loop delay p99 ${p99.toFixed(2)} ms, max ${(lag.max / 1e6).toFixed(2)} ms; at most ${maxActive} running at once on ${os.availableParallelism()} cores`)
    expect(p99).toBeLessThan(20)
    expect(maxActive).toBeGreaterThanOrEqual(1)
    expect(maxActive).toBeLessThanOrEqual(os.availableParallelism())
    for (const [i, r] of results.entries()) {
      const { perColumn: a, ...expected } = await duck.checksum(groups[i])
      const { perColumn: b, ...got } = await duck.checksum(r.files.map(f => f.path))
      expect(got).toEqual(expected)
      expect(b).toEqual(a)
    }
    expect(leftovers(tmp)).toEqual([])
  })

  test('with the gate opened to more calls than cores (its switch), more calls than cores run at once (so the check can fail)', () => {
    // (more calls than this machine has cores, whatever it has)
    const n = Math.max(8, os.availableParallelism() + 2)
    const indexes = Array.from({ length: n }, (_, i) => (i < gen.files.length ? gen.files.map((_, j) => j).filter(j => j % n === i) : [i % gen.files.length]))
    const groups = indexes.map(g => g.map(j => gen.files[j]))
    const rows = indexes.flat().reduce((sum, j) => sum + gen.fileRows[j], 0)
    const r = spawnSync(process.execPath, [path.join(__dirname, 'helpers', 'concurrent.js'), JSON.stringify({
      groups, outDir: path.join(tmp, 'ungated'), opts: { sortBy: [{ column: 'ts' }], batchBytes: 2 << 20 },
    })], { env: { ...process.env, GENCOMPACT_MAX_CONCURRENT_CALLS: String(n) }, encoding: 'utf8' })
    const { maxActive, rowsWritten } = JSON.parse(r.stdout.trim().split('\n').pop())
    expect(rowsWritten).toBe(rows)
    expect(maxActive).toBeGreaterThan(os.availableParallelism())
  })
})

describe('one call on every core', () => {
  test('the event loop stays under 20 ms p99 while a call with threads = cores decodes, encodes and verifies', async () => {
    const lag = monitorEventLoopDelay({ resolution: 1 })
    const cpu = process.cpuUsage()
    const t0 = process.hrtime.bigint()
    lag.enable()
    // keep the loop busy with timers meanwhile, as a server would be
    let ticks = 0
    const timer = setInterval(() => { ticks++ }, 1)
    const r = await compactGeneration(gen.files, {
      outDir: path.join(tmp, 'all-cores'),
      threads: os.availableParallelism(),
      sortBy: [{ column: 'ts' }],
      dedupeBy: '_hyp_cache_row_id',
    })
    clearInterval(timer)
    lag.disable()
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6
    const { user, system } = process.cpuUsage(cpu)
    const p99 = lag.percentile(99) / 1e6
    console.log(`one call, threads ${os.availableParallelism()}: event loop delay p99 ${p99.toFixed(2)} ms, max ${(lag.max / 1e6).toFixed(2)} ms; ` +
      `CPU ${((user + system) / 1000).toFixed(0)} ms over ${wallMs.toFixed(0)} ms wall; ${ticks} timer ticks`)
    expect(r.rowsWritten + r.duplicatesDropped).toBe(gen.rows)
    expect(ticks).toBeGreaterThan(0)
    expect(p99).toBeLessThan(20)
  })
})

describe('no leaks', () => {
  test('1,000 failing calls (corrupt input, abort) and 1,000 successful ones leave fds and temp files flat', async () => {
    const bad = path.join(tmp, 'corrupt.parquet')
    fs.writeFileSync(bad, Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(4096, 7), Buffer.from('PAR1')]))
    const out = i => path.join(tmp, 'leak', `call-${i}`)
    // warm up: the addon's runtime threads and DuckDB-free paths are loaded before counting
    await compactGeneration(tiny.files, { outDir: out('warm') })
    const fds = openFds()
    const rss = process.memoryUsage().rss
    const codes = {}
    for (let i = 0; i < 500; i++) {
      const err = await rejectionOf(compactGeneration([tiny.files[0], bad], { outDir: out(`bad-${i}`) }))
      codes[err.code] = (codes[err.code] || 0) + 1
      const ac = new AbortController()
      const pending = compactGeneration(tiny.files, { outDir: out(`abort-${i}`), signal: ac.signal })
      ac.abort()
      const aborted = await rejectionOf(pending)
      codes[aborted.code] = (codes[aborted.code] || 0) + 1
    }
    expect(codes).toEqual({ ERR_INPUT_CORRUPT: 500, ERR_ABORTED: 500 })
    const afterFailures = openFds()
    // the failing calls created their outDirs and removed them again: only the warm-up's is there
    expect(fs.readdirSync(path.join(tmp, 'leak'))).toEqual(['call-warm'])
    for (let i = 0; i < 1000; i++) {
      const r = await compactGeneration(tiny.files, { outDir: out(i), fileNamePrefix: 'ok' })
      expect(r.rowsWritten).toBe(tiny.rows)
      if (i % 100 === 99) fs.rmSync(path.join(tmp, 'leak'), { recursive: true, force: true })
    }
    const after = openFds()
    console.log(`leaks: fds ${fds} -> ${afterFailures} after 1,000 failing calls -> ${after} after 1,000 successful ones; ` +
      `RSS ${(rss / 2 ** 20).toFixed(1)} -> ${(process.memoryUsage().rss / 2 ** 20).toFixed(1)} MiB`)
    expect(afterFailures - fds).toBeLessThanOrEqual(2)
    expect(after - fds).toBeLessThanOrEqual(2)
    expect(leftovers(tmp)).toEqual([])
  }, 300000)
})
