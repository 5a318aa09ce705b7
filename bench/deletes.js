#!/usr/bin/env node
'use strict'
// What applying Iceberg deletes costs gencompact (README, "Deletes").
//
//   node bench/deletes.js [--runs 3] [--fraction 0.1] [--seed 7] [--position-files 4]
//                         [--section deletes-seed] [--no-write] [--keep] [--timeout MIN] [--max-rss GIB]
//
// 1. Input: the seed-shaped partition (52,329 rows, 230 files), generated and cached under
//    bench/data/ by ensureInput (bench/files.js), the same cache bench/run.js uses.
// 2. bench/make-deletes.py (pyarrow, pyroaring) deletes `fraction` of each file's rows (distinct
//    random positions, fixed seed) and writes them two ways: one Puffin file with one
//    deletion-vector-v1 blob per data file, and `position-files` position-delete Parquet files
//    sorted by (file_path, pos), each covering a contiguous range of data files. Each input gets
//    the location s3://bench/data/<file name> (not its local path), which the deletes reference.
// 3. Runs bench/gencompact.js --compression zstd (defaults otherwise: batchBytes 32 MiB, 128 MiB
//    target) three ways — no deletes, the DVs, the position deletes — each a child process under
//    `/usr/bin/time -v`, N runs round robin; medians of wall, CPU (user+sys) and peak RSS; the
//    idle process (node + addon loaded) is measured once the same way, and the peak above it is
//    held against 3 × batchBytes + 64 MiB.
// 4. Checks every run: rowsRead = input rows, rowsDeleted = the positions the generator drew,
//    rowsWritten = rows − rowsDeleted; once per variant DuckDB counts the output rows and sums a
//    hash of the row ids (the DV and position-delete outputs must hold the same rows).
// 5. Prints a markdown table and writes it into bench/RESULTS.md as section `deletes-seed`.

const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')
const {
  writeSection, SEED_SHAPE, TIME, MiB, fmtBytes, fmtSec, median, sqlList, ensureInput, runTimed,
} = require('./files')

const BENCH = __dirname
const OUT = path.join(BENCH, 'out')
const RESULTS = path.join(BENCH, 'RESULTS.md')
const MAKE_DELETES = path.join(BENCH, 'make-deletes.py')
const BATCH_BYTES = 32 * MiB // the addon's default
const BOUND = 3 * BATCH_BYTES + 64 * MiB
const LOCATION_PREFIX = 's3://bench/data/'
const VARIANTS = ['no deletes', 'deletion vectors', 'position deletes']

function parseArgs(argv) {
  const a = {
    runs: 3, fraction: 0.1, seed: 7, positionFiles: 4, section: 'deletes-seed', write: true, keep: false,
    timeoutMin: 15, maxRssGiB: Math.floor(os.totalmem() / 1024 ** 3 * 0.85),
  }
  for (let i = 0; i < argv.length; i++) {
    const f = argv[i]
    const num = () => {
      const n = Number(argv[++i])
      if (!Number.isFinite(n)) throw new Error(`${f} needs a number`)
      return n
    }
    switch (f) {
      case '--runs': a.runs = num(); break
      case '--fraction': a.fraction = num(); break
      case '--seed': a.seed = num(); break
      case '--position-files': a.positionFiles = num(); break
      case '--section': a.section = argv[++i]; break
      case '--no-write': a.write = false; break
      case '--keep': a.keep = true; break
      case '--timeout': a.timeoutMin = num(); break
      case '--max-rss': a.maxRssGiB = num(); break
      case '-h': case '--help':
        console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(2, 25).map(l => l.replace(/^\/\/ ?/, '')).join('\n'))
        process.exit(0)
        break
      default: throw new Error(`unknown argument ${f}`)
    }
  }
  if (!(a.runs >= 1)) throw new Error('--runs must be >= 1')
  if (!(a.fraction > 0 && a.fraction < 1)) throw new Error('--fraction must be in (0, 1)')
  return a
}

const fmtInt = n => n == null ? '—' : Number(n).toLocaleString('en-US')

function ensurePython() {
  const ok = () => spawnSync('python3', ['-c', 'import pyarrow, pyroaring'], { stdio: 'ignore' }).status === 0
  if (ok()) return
  console.error('installing pyroaring / pyarrow with pip ...')
  spawnSync('python3', ['-m', 'pip', 'install', '--quiet', 'pyroaring', 'pyarrow'], { stdio: 'inherit' })
  if (!ok()) throw new Error('python3 cannot import pyarrow and pyroaring (python3 -m pip install pyarrow pyroaring)')
}

/** Writes the delete files next to the cached input; returns make-deletes.py's report. */
function makeDeletes(input, args) {
  const dir = path.join(path.dirname(input.manifestPath), `deletes-s${args.seed}-f${args.fraction}-k${args.positionFiles}`)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const names = input.files.map(f => path.basename(f))
  if (new Set(names).size !== names.length) throw new Error('input file names are not unique: locations would collide')
  const spec = {
    out: dir, seed: args.seed, fraction: args.fraction, positionFiles: args.positionFiles,
    files: input.files.map(f => ({ path: f, location: LOCATION_PREFIX + path.basename(f) })),
  }
  const specFile = path.join(dir, 'spec.json')
  fs.writeFileSync(specFile, JSON.stringify(spec))
  const t0 = Date.now()
  const r = spawnSync('python3', [MAKE_DELETES, specFile], { encoding: 'utf8', maxBuffer: 64 * MiB })
  if (r.status !== 0) throw new Error(`make-deletes.py failed (exit ${r.status}): ${r.stderr}`)
  const res = JSON.parse(r.stdout.trim().split('\n').pop())
  res.ms = Date.now() - t0
  res.dir = dir
  return res
}

/** The three file lists (JSON, objects passed through by bench/gencompact.js). */
function fileLists(dels) {
  const plain = dels.files.map(f => ({ path: f.path, location: f.location }))
  const dv = dels.files.map(f => ({
    path: f.path, location: f.location,
    ...(f.dv ? { deletes: [{ kind: 'deletion-vector', path: dels.puffin.path, offset: f.dv.offset, length: f.dv.length }] } : {}),
  }))
  const pos = dels.files.map(f => ({
    path: f.path, location: f.location,
    ...(f.positionFile ? { deletes: [{ kind: 'position', path: f.positionFile }] } : {}),
  }))
  return {
    'no deletes': { list: plain, deleteBytes: 0, deleteFiles: 0, expected: 0 },
    'deletion vectors': { list: dv, deleteBytes: dels.puffin.bytes, deleteFiles: 1, expected: dels.expectedDeleted },
    'position deletes': {
      list: pos, deleteBytes: dels.positionFiles.reduce((a, p) => a + p.bytes, 0),
      deleteFiles: dels.positionFiles.length, expected: dels.expectedDeleted,
    },
  }
}

function slug(variant) { return variant.replace(/\s+/g, '-') }

function checkRun(r, rows, expected) {
  const s = r.summary || {}
  const problems = []
  if (s.rowsRead !== rows) problems.push(`rowsRead ${s.rowsRead} ≠ ${rows}`)
  if ((s.rowsDeleted ?? 0) !== expected) problems.push(`rowsDeleted ${s.rowsDeleted} ≠ ${expected}`)
  if (s.rowsWritten !== rows - expected) problems.push(`rowsWritten ${s.rowsWritten} ≠ ${rows - expected}`)
  return problems
}

async function duckCheck(duck, files) {
  const r = (await duck.runAndReadAll(
    `SELECT count(*)::BIGINT AS n, sum(hash(_hyp_cache_row_id, ts))::VARCHAR AS ids FROM read_parquet(${sqlList(files)})`
  )).getRowObjectsJS()[0]
  return { rows: Number(r.n), ids: r.ids }
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const started = new Date()
  const command = `node bench/deletes.js${process.argv.slice(2).map(a => ' ' + a).join('')}`
  if (!fs.existsSync(TIME)) throw new Error(`${TIME} not found (apt-get install time)`)
  ensurePython()
  const load0 = os.loadavg()

  const { DuckDBInstance } = require('@duckdb/node-api')
  const db = await DuckDBInstance.create(':memory:')
  const duck = await db.connect()
  await duck.run('SET threads=2')

  const input = await ensureInput({ input: null, gen: { ...SEED_SHAPE }, genExtra: {} }, duck)
  const rows = input.rowCount
  const dels = makeDeletes(input, args)
  if (dels.rows !== rows) throw new Error(`make-deletes.py saw ${dels.rows} rows, DuckDB ${rows}`)
  console.error(`input: ${input.files.length} files, ${fmtInt(rows)} rows, ${fmtBytes(input.bytes)}; ` +
    `deleting ${fmtInt(dels.expectedDeleted)} rows (${(100 * dels.expectedDeleted / rows).toFixed(2)} %): ` +
    `Puffin ${fmtBytes(dels.puffin.bytes)} (${dels.puffin.blobs} DVs), ${dels.positionFiles.length} position files ` +
    `${fmtBytes(dels.positionFiles.reduce((a, p) => a + p.bytes, 0))} (written in ${fmtSec(dels.ms)})`)

  fs.mkdirSync(OUT, { recursive: true })
  const variants = fileLists(dels)
  for (const v of VARIANTS) {
    variants[v].listFile = path.join(OUT, `deletes-${slug(v)}.json`)
    fs.writeFileSync(variants[v].listFile, JSON.stringify(variants[v].list))
  }
  const gencompact = path.join(BENCH, 'gencompact.js')
  const opt = { maxRssGiB: args.maxRssGiB, timeoutMin: args.timeoutMin }

  const idle = await runTimed([process.execPath, gencompact, '--idle'],
    { ...opt, outDir: path.join(OUT, 'deletes-idle'), timeFile: path.join(OUT, 'deletes-idle.time') })
  if (!idle.ok) throw new Error(`idle run failed: ${idle.error}`)
  console.error(`idle process (node + addon): ${fmtBytes(idle.maxRssBytes)} RSS`)

  const results = []
  const checks = {}
  const failed = new Set()
  for (let run = 1; run <= args.runs; run++) {
    for (const v of VARIANTS) {
      if (failed.has(v)) continue
      const outDir = path.join(OUT, `deletes-${slug(v)}-${run}`)
      process.stderr.write(`run ${run}/${args.runs} ${v} ... `)
      const r = await runTimed([process.execPath, gencompact, '--compression', 'zstd', outDir, variants[v].listFile],
        { ...opt, outDir, timeFile: path.join(OUT, `deletes-${slug(v)}-${run}.time`) })
      r.variant = v
      r.run = run
      results.push(r)
      if (!r.ok) {
        failed.add(v)
        process.stderr.write(`FAILED: ${r.error}\n`)
        continue
      }
      r.problems = checkRun(r, rows, variants[v].expected)
      process.stderr.write(`${fmtSec(r.wallMs)}, CPU ${fmtSec(r.cpuMs)}, ${fmtBytes(r.maxRssBytes)} RSS, ` +
        `deleted ${r.summary.rowsDeleted}, written ${r.summary.rowsWritten}${r.problems.length ? '  ✗ ' + r.problems.join('; ') : ' ✓'}\n`)
      if (!checks[v]) {
        checks[v] = await duckCheck(duck, r.files.map(f => f.path))
        const exp = rows - variants[v].expected
        process.stderr.write(`  DuckDB: ${checks[v].rows} rows (expected ${exp})${checks[v].rows === exp ? '' : '  MISMATCH'}\n`)
      }
      if (!args.keep) fs.rmSync(outDir, { recursive: true, force: true })
    }
  }
  duck.closeSync()
  db.closeSync()
  const load1 = os.loadavg()

  // ------------------------------------------------------------ report
  const stats = {}
  for (const v of VARIANTS) {
    const ok = results.filter(r => r.variant === v && r.ok)
    stats[v] = {
      ok: ok.length, runs: results.filter(r => r.variant === v).length,
      wall: median(ok.map(r => r.wallMs)), wallMin: Math.min(...ok.map(r => r.wallMs)), wallMax: Math.max(...ok.map(r => r.wallMs)),
      addon: median(ok.map(r => r.summary.elapsedMs)),
      cpu: median(ok.map(r => r.cpuMs)),
      rss: median(ok.map(r => r.maxRssBytes)), rssWorst: Math.max(...ok.map(r => r.maxRssBytes)),
      problems: ok.flatMap(r => r.problems), errors: results.filter(r => r.variant === v && !r.ok).map(r => r.error),
      deleted: ok.length ? ok[ok.length - 1].summary.rowsDeleted : null,
      written: ok.length ? ok[ok.length - 1].summary.rowsWritten : null,
    }
  }
  const base = stats['no deletes']
  const rat = (x, b) => x != null && b ? `${(x / b).toFixed(2)}×` : '—'
  const lines = [
    '| variant | delete files | rows deleted (expected) | rows out, DuckDB (expected) | wall, median (min–max) | addon elapsedMs, median | CPU user+sys | peak RSS | peak above idle, median / worst (bound 160 MiB) | wall vs no deletes | CPU vs no deletes |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const v of VARIANTS) {
    const s = stats[v]
    const V = variants[v]
    const files = V.deleteFiles ? `${V.deleteFiles} (${fmtBytes(V.deleteBytes)})` : '—'
    if (!s.ok) {
      lines.push(`| ${v} | ${files} | **failed**: ${(s.errors[0] || '').slice(0, 200).replace(/\|/g, '\\|')} | | | | | | | | |`)
      continue
    }
    const okRows = s.problems.length === 0
    const del = `${fmtInt(s.deleted)} (${fmtInt(V.expected)})${okRows ? ' ✓' : ' ✗'}`
    const c = checks[v]
    const expOut = rows - V.expected
    const out = c ? `${fmtInt(c.rows)} (${fmtInt(expOut)})${c.rows === expOut ? ' ✓' : ' ✗'}` : '—'
    const above = s.rss - idle.maxRssBytes
    const worst = s.rssWorst - idle.maxRssBytes
    lines.push(`| ${v} | ${files} | ${del} | ${out} | ${fmtSec(s.wall)} (${fmtSec(s.wallMin)}–${fmtSec(s.wallMax)}) | ` +
      `${fmtSec(s.addon)} | ${fmtSec(s.cpu)} | ${fmtBytes(s.rss)} | ${fmtBytes(above)} / ${fmtBytes(worst)} ${worst <= BOUND ? '✓' : '✗'} | ` +
      `${rat(s.wall, base.wall)} | ${rat(s.cpu, base.cpu)} |`)
  }
  const same = checks['deletion vectors'] && checks['position deletes'] && checks['deletion vectors'].ids === checks['position deletes'].ids
  const machine = `nproc ${os.cpus().length}, ${(os.cpus()[0] || {}).model || 'unknown cpu'}, ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB; node ${process.version}`
  const pct = x => x == null ? '—' : `${x >= 0 ? '+' : ''}${(100 * x).toFixed(0)} %`
  const dvCost = stats['deletion vectors'].ok && base.ok ? stats['deletion vectors'].wall / base.wall - 1 : null
  const posCost = stats['position deletes'].ok && base.ok ? stats['position deletes'].wall / base.wall - 1 : null
  const dvCpu = stats['deletion vectors'].ok && base.ok ? stats['deletion vectors'].cpu / base.cpu - 1 : null
  const posCpu = stats['position deletes'].ok && base.ok ? stats['position deletes'].cpu / base.cpu - 1 : null
  const rssUp = v => {
    if (!stats[v].ok || !base.ok) return '—'
    const d = stats[v].rss - base.rss
    return `${d < 0 ? '−' : '+'}${fmtBytes(Math.abs(d))}`
  }
  const body = [
    `## Applying deletes — ${args.section}`,
    '',
    `- Date: ${started.toISOString()}; machine: ${machine}; load average ${load0.map(x => x.toFixed(2)).join(' ')} at start, ${load1.map(x => x.toFixed(2)).join(' ')} at end (2 cores shared with other work: expect noise)`,
    `- Command: \`${command}\``,
    `- Input: the seed-shaped partition, ${input.files.length} files, ${fmtInt(rows)} rows, ${fmtBytes(input.bytes)} SNAPPY (fixtures/gen-partition.js via bench/files.js ensureInput); ` +
      `locations \`${LOCATION_PREFIX}<file name>\`.`,
    `- Deletes: ${args.fraction * 100} % of each file's rows, distinct random positions (Python \`random.Random(${args.seed})\`), ` +
      `${fmtInt(dels.expectedDeleted)} rows in all, written by bench/make-deletes.py as (a) one Puffin file, ${dels.puffin.blobs} \`deletion-vector-v1\` blobs ` +
      `(pyroaring BitMap64), ${fmtBytes(dels.puffin.bytes)}; (b) ${dels.positionFiles.length} position-delete Parquet files (pyarrow, snappy), ` +
      `sorted by (file_path, pos), ${dels.positionFiles.map(p => `${p.dataFiles} data files / ${fmtInt(p.rows)} rows`).join(', ')}, ${fmtBytes(variants['position deletes'].deleteBytes)}. ` +
      'Each input lists only the delete file (or blob) that covers it.',
    `- Method: \`node bench/gencompact.js --compression zstd <outDir> <list.json>\` (defaults otherwise: batchBytes 32 MiB, 128 MiB target), ` +
      `each run a child process under \`/usr/bin/time -v\`, ${args.runs} run(s) per variant, round robin, warm page cache. Wall = spawn to exit ` +
      `(includes node start-up, ~0.1 s); addon elapsedMs = the result's own; peak RSS = time -v's maximum resident set; idle process (node + addon loaded) ` +
      `${fmtBytes(idle.maxRssBytes)}, bound 3 × batchBytes + 64 MiB = ${fmtBytes(BOUND)}. Every run's rowsRead / rowsDeleted / rowsWritten ` +
      `checked against the generator's count; output rows counted with DuckDB once per variant.`,
    '',
    lines.join('\n'),
    '',
    `- Wall vs no deletes: deletion vectors ${pct(dvCost)}, position deletes ${pct(posCost)}; CPU ${pct(dvCpu)} and ${pct(posCpu)}; ` +
      `peak RSS ${rssUp('deletion vectors')} and ${rssUp('position deletes')} (medians). ` +
      `DV and position-delete outputs hold the same rows (DuckDB sum of hash(_hyp_cache_row_id, ts)): ${same ? 'yes ✓' : 'NO ✗'}.`,
    ...Object.values(stats).some(s => s.errors.length || s.problems.length)
      ? [`- Problems: ${JSON.stringify(Object.fromEntries(VARIANTS.map(v => [v, [...stats[v].errors, ...stats[v].problems]])))}`] : [],
    '',
  ].join('\n')
  console.log('\n' + body)
  if (args.write) {
    writeSection(RESULTS, args.section, body, '# Benchmark results')
    require('./summary').writeSummary()
    console.error(`wrote section "${args.section}" of ${path.relative(process.cwd(), RESULTS)}`)
  }
  fs.writeFileSync(path.join(OUT, `last-${args.section}.json`), JSON.stringify({ args, idle, dels: { ...dels, files: dels.files.length }, results }, null, 1))
}

main().catch(err => { console.error(err && err.stack || err); process.exit(1) })
