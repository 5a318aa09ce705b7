#!/usr/bin/env node
'use strict'
// Reliability figures: concurrent load and leaks, measured in child processes (peak RSS from
// `/usr/bin/time`, the OS's ru_maxrss of the child), written into RELIABILITY.md.
//
//   npm run build && node bench/reliability.js [--calls 8] [--rows 6541] [--runs 3] [--leak-calls 1000] [--no-write]
//
// 1. Generates `calls` seed-shaped partitions (fixtures/gen-partition.js, seeds 1..calls, `rows`
//    rows each in 29 files of 4 tuples; cached under bench/data/).
// 2. Load, each mode a fresh child, `runs` times round robin: idle (addon loaded), one call on
//    one partition, `calls` concurrent calls (one per partition) through the default gate, and the
//    same with the gate opened (GENCOMPACT_MAX_CONCURRENT_CALLS=calls). Each child reports its peak
//    RSS, wall time, the most calls running at once, and the event loop delay (monitorEventLoopDelay,
//    1 ms resolution) while the calls ran.
// 3. Leaks: one child makes `leak-calls` successful small calls, `leak-calls` / 2 calls on a corrupt
//    input, `leak-calls` / 2 aborted calls, and `leak-calls` successful calls again, and reports open
//    fds, temp files and RSS (after a full GC) after each phase.

const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')
const { writeSection } = require('./files')

const ROOT = path.resolve(__dirname, '..')
const DATA = path.join(__dirname, 'data')
const OUT = path.join(__dirname, 'out', 'reliability')
const REPORT = path.join(ROOT, 'RELIABILITY.md')
const MiB = 2 ** 20
const BATCH_BYTES = 32 * MiB // the addon's default
const BOUND = 3 * BATCH_BYTES + 64 * MiB

// ---------------------------------------------------------------- child modes

async function child(mode, arg) {
  const { compactGeneration } = require(ROOT)
  const { monitorEventLoopDelay } = require('perf_hooks')
  if (mode === 'idle') return { maxRss: process.resourceUsage().maxRSS * 1024 }
  if (mode === 'load') {
    const { groups, outDir } = arg
    const lag = monitorEventLoopDelay({ resolution: 1 })
    let active = 0
    let maxActive = 0
    const t0 = Date.now()
    lag.enable()
    const results = await Promise.all(groups.map((files, i) => compactGeneration(files, {
      outDir: path.join(outDir, `call-${i}`),
      partitionBy: ['session_id', 'conversation_id', 'cwd', 'date'].map(column => ({ column })),
      sortBy: [{ column: 'ts' }],
      dedupeBy: '_hyp_cache_row_id',
      onProgress: p => {
        if (p.phase === 'plan') maxActive = Math.max(maxActive, ++active)
        if (p.phase === 'done') active--
      },
    })))
    lag.disable()
    return {
      wallMs: Date.now() - t0,
      maxRss: process.resourceUsage().maxRSS * 1024,
      maxActive,
      rows: results.reduce((n, r) => n + r.rowsWritten, 0),
      lagP99Ms: lag.percentile(99) / 1e6,
      lagMaxMs: lag.max / 1e6,
    }
  }
  if (mode === 'leak') {
    const { files, outDir, calls } = arg
    const bad = path.join(outDir, 'corrupt.parquet')
    fs.mkdirSync(outDir, { recursive: true })
    fs.writeFileSync(bad, Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(4096, 7), Buffer.from('PAR1')]))
    const fds = () => fs.readdirSync('/proc/self/fd').length
    const tmpFiles = () => listTree(outDir).filter(p => p.endsWith('.tmp')).length
    // RSS after a full GC (the child runs with --expose-gc): what is left once JS garbage is collected
    const rss = () => { global.gc(); return process.memoryUsage().rss }
    const out = i => path.join(outDir, 'calls', `c-${i}`)
    await compactGeneration(files, { outDir: out('warm') }) // runtime threads started before counting
    const codes = {}
    const failed = e => { codes[e.code] = (codes[e.code] || 0) + 1 }
    const phases = [{ phase: 'start', fds: fds(), rss: rss(), tmp: tmpFiles() }]
    const okCalls = async tag => {
      for (let i = 0; i < calls; i++) {
        await compactGeneration(files, { outDir: out(`${tag}-${i}`) })
        if (i % 100 === 99) fs.rmSync(path.join(outDir, 'calls'), { recursive: true, force: true })
      }
      phases.push({ phase: `${calls} successful`, fds: fds(), rss: rss(), tmp: tmpFiles() })
    }
    await okCalls('a')
    for (let i = 0; i < calls / 2; i++) await compactGeneration([files[0], bad], { outDir: out(`bad-${i}`) }).catch(failed)
    phases.push({ phase: `${calls / 2} corrupt`, fds: fds(), rss: rss(), tmp: tmpFiles() })
    for (let i = 0; i < calls / 2; i++) {
      const ac = new AbortController()
      const p = compactGeneration(files, { outDir: out(`abort-${i}`), signal: ac.signal })
      ac.abort()
      await p.catch(failed)
    }
    phases.push({ phase: `${calls / 2} aborted`, fds: fds(), rss: rss(), tmp: tmpFiles() })
    await okCalls('b')
    return { codes, phases, maxRss: process.resourceUsage().maxRSS * 1024 }
  }
  throw new Error(`unknown child mode ${mode}`)
}

function listTree(dir) {
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(e => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? listTree(p) : [p]
  })
}

// ---------------------------------------------------------------- driver

/**
 * Runs a child mode under `/usr/bin/time`, whose peak RSS figure is the child's own (a child
 * forked straight from this driver would inherit the driver's ru_maxrss across exec).
 */
function runChild(mode, arg, env = {}) {
  const rssFile = path.join(os.tmpdir(), `gencompact-reliability-${process.pid}.rss`)
  const r = spawnSync('/usr/bin/time', ['-f', '%M', '-o', rssFile, process.execPath, '--expose-gc', __filename, '--child', mode, JSON.stringify(arg || {})], {
    env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 * MiB,
  })
  if (r.status !== 0) throw new Error(`child ${mode} failed: ${r.stderr}`)
  const maxRss = Number(fs.readFileSync(rssFile, 'utf8').trim().split('\n').pop()) * 1024
  fs.rmSync(rssFile, { force: true })
  return { ...JSON.parse(r.stdout.trim().split('\n').pop()), maxRss }
}

async function partitions(calls, rows) {
  const { generatePartition } = require(path.join(ROOT, 'fixtures', 'gen-partition.js'))
  const out = []
  for (let i = 0; i < calls; i++) {
    const dir = path.join(DATA, `reliability-${rows}-${i + 1}`)
    const done = path.join(dir, 'files.json')
    if (!fs.existsSync(done)) {
      fs.rmSync(dir, { recursive: true, force: true })
      const g = await generatePartition({ dir, rows, files: 29, tuples: 4, seed: i + 1, fatBytes: 30000, rowBytes: 10000, dupRate: 0.02 })
      fs.writeFileSync(done, JSON.stringify(g.files))
    }
    out.push(JSON.parse(fs.readFileSync(done, 'utf8')))
  }
  return out
}

const median = xs => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]
const mib = n => `${(n / MiB).toFixed(1)} MiB`

async function main() {
  const argv = process.argv.slice(2)
  if (argv[0] === '--child') {
    const r = await child(argv[1], JSON.parse(argv[2]))
    process.stdout.write(JSON.stringify(r) + '\n')
    return
  }
  const flag = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? Number(argv[i + 1]) : dflt }
  const calls = flag('--calls', 8)
  const rows = flag('--rows', 6541)
  const runs = flag('--runs', 3)
  const leakCalls = flag('--leak-calls', 1000)
  const groups = await partitions(calls, rows)
  fs.rmSync(OUT, { recursive: true, force: true })
  const modes = {
    idle: () => runChild('idle'),
    single: k => runChild('load', { groups: [groups[0]], outDir: path.join(OUT, `single-${k}`) }),
    concurrent: k => runChild('load', { groups, outDir: path.join(OUT, `concurrent-${k}`) }),
    ungated: k => runChild('load', { groups, outDir: path.join(OUT, `ungated-${k}`) }, { GENCOMPACT_MAX_CONCURRENT_CALLS: String(calls) }),
  }
  const seen = Object.fromEntries(Object.keys(modes).map(m => [m, []]))
  for (let k = 0; k < runs; k++) {
    for (const [m, run] of Object.entries(modes)) {
      seen[m].push(run(k))
      fs.rmSync(OUT, { recursive: true, force: true })
    }
  }
  const idle = median(seen.idle.map(r => r.maxRss))
  const row = (name, rs) => {
    const peak = median(rs.map(r => r.maxRss))
    return `| ${name} | ${rs[0].rows.toLocaleString('en-US')} | ${(median(rs.map(r => r.wallMs)) / 1000).toFixed(2)} s | ${median(rs.map(r => r.maxActive))} | ${mib(peak)} | ${mib(peak - idle)} | ${median(rs.map(r => r.lagP99Ms)).toFixed(2)} ms | ${Math.max(...rs.map(r => r.lagMaxMs)).toFixed(2)} ms |`
  }
  const singleAbove = median(seen.single.map(r => r.maxRss)) - idle
  const concurrentAbove = Math.max(...seen.concurrent.map(r => r.maxRss)) - idle
  const leak = runChild('leak', { files: groups[0].slice(0, 2), outDir: path.join(OUT, 'leak'), calls: leakCalls })
  fs.rmSync(OUT, { recursive: true, force: true })
  const body = `## Load and leaks (\`node bench/reliability.js\`)

- Date: ${new Date().toISOString()}; ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}
- Command: \`node bench/reliability.js ${argv.join(' ')}\`
- Input: ${calls} partitions (fixtures/gen-partition.js seeds 1..${calls}, ${rows.toLocaleString('en-US')} rows of ~41 KB decoded in 29 SNAPPY files of 4 tuples, 2 % duplicate row ids), each call \`partitionBy\` the 4 identity columns, \`sortBy ts\`, \`dedupeBy _hyp_cache_row_id\`, default batchBytes (32 MiB).
- Method: every mode a fresh node child, ${runs} runs round robin, medians; peak RSS = the child's maximum resident set size from \`/usr/bin/time\`; idle = node with the addon loaded (${mib(idle)}); event loop delay from \`perf_hooks.monitorEventLoopDelay\` (1 ms resolution) while the calls ran.

| mode | rows written | wall | most calls running at once | peak RSS | above idle | event loop p99 | event loop max |
|---|---:|---:|---:|---:|---:|---:|---:|
${row('1 call', seen.single)}
${row(`${calls} concurrent calls, default gate (one per core)`, seen.concurrent)}
${row(`${calls} concurrent calls, gate opened to ${calls}`, seen.ungated)}

- Bound: ${calls} × the single-call bound (3 × batchBytes + 64 MiB = ${mib(BOUND)} above idle) = ${mib(calls * BOUND)}; worst concurrent run ${mib(concurrentAbove)} above idle: ${concurrentAbove <= calls * BOUND ? 'within ✓' : 'EXCEEDED ✗'} (${(concurrentAbove / Math.max(1, singleAbove)).toFixed(2)} × one call's measured ${mib(singleAbove)}).
- Leaks, one process (2 small files per call; after each phase a full GC, then open fds, \`.tmp\` files under the call dirs, RSS): ${leak.phases.map(p => `${p.phase}: ${p.fds} fds, ${p.tmp} tmp, ${mib(p.rss)}`).join(' → ')}; peak ${mib(leak.maxRss)}. Rejections: ${Object.entries(leak.codes).map(([c, n]) => `${n} ${c}`).join(', ')}.
`
  console.log(body)
  if (!argv.includes('--no-write')) writeSection(REPORT, 'load-and-leaks', body, '# Reliability')
}

main().catch(err => {
  console.error(err && err.stack || err)
  process.exit(1)
})
