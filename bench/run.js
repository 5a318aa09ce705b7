#!/usr/bin/env node
'use strict'
// Compaction benchmark driver: gencompact vs a bare parquet-rs loop vs DuckDB vs the old JS loop.
//
//   npm run bench      (= npm run build && cargo build --release --example bare && node bench/run.js)
//   node bench/run.js [flags]
//     --runs N               runs per tool (default 3); medians are reported
//     --only a,b             tools: gencompact, bare, duckdb, duckdb-noshred, old-loop, duckdb-sorted,
//                            duckdb-noshred-sorted, gencompact-tN, gencompact-xN (default: gencompact,
//                            bare, duckdb, duckdb-noshred, old-loop). bare = examples/bare.rs, the
//                            reference: one thread, every input through ParquetRecordBatchReader into
//                            one ArrowWriter, gencompact's codec and level, no bounds or checks
//                            (target/release/examples/bare; gencompact's wall and CPU are reported
//                            as ratios to it). gencompact-tN = gencompact with threads N (e.g.
//                            gencompact-t1,gencompact-t2 side by side); gencompact-xN = N calls at
//                            once in one process (bench/concurrent.js), measured as one process
//     --threads N            gencompact's `threads` (default: the addon's, the available cores)
//     --concurrent N         also run gencompact-xN (N concurrent calls, the gencompact options)
//     --no-verify            gencompact verify: false (the Done-when figures keep verify on)
//     --shape S              seed (default: fixtures/gen-partition.js, hyparquet-writer, SNAPPY) or
//                            mixed-codec (the same rows re-written by pyarrow, bench/mixed-codec.py,
//                            files round robin over SNAPPY, ZSTD, GZIP; cached under bench/data/) or
//                            evolved (mixed-codec, and the newest 10 % of the files gain a column);
//                            the unique shapes, where every row carries its OWN fat value (a ~47 KB
//                            request frame holding the conversation so far; no two rows equal, so
//                            dictionaries overflow; fixtures/gen-unique.py, 52,329 rows, 230 files,
//                            ~2.7 GB decoded), each writer with its default settings:
//                            unique (pyarrow, files round robin over SNAPPY, ZSTD, GZIP),
//                            unique-duckdb (those files re-written by DuckDB's COPY, SNAPPY),
//                            unique-hyparquet (re-written by hyparquet-writer, SNAPPY),
//                            unique-evolved (unique, and the newest 10 % of the files gain a column),
//                            unique-lz4 (unique's rows, files round robin over LZ4_RAW and BROTLI),
//                            unique-varied (less repetitive text: gen-unique.py --novelty 0.5)
//     --scale N              N times the rows and files (the same row shape and tuples; default 1)
//     --rows N --files N --tuples N --seed N --fat-bytes N --row-bytes N
//     --row-group-size N --dup-rate X      generator options (default: the seed shape; the unique
//                            shapes take --rows --files --tuples --seed --fat-bytes, fat = the
//                            request frame's average size)
//     --shuffle              rows in random ts order within each row group (unsorted runs)
//     --input list.json      use these files (JSON array or {files}) instead of generating (e.g. the
//                            unique shape's rows in request_id order, bench/reorder.py)
//     --dedupe               gencompact also dedupes by _hyp_cache_row_id (old-loop always does)
//     --partition            gencompact partitionBy session_id,conversation_id,cwd,date
//     --sort                 gencompact sortBy ts
//     --sort-by COL          gencompact sortBy COL instead (a key unrelated to arrival: every run
//                            overlaps every other)
//     --compression C        gencompact's and bare's codec (default zstd, level 3, like DuckDB's output)
//     --batch-bytes N        gencompact batchBytes (default: the addon's, 32 MiB); the report
//                            states gencompact's peak RSS above the idle process (node with the
//                            addon loaded, measured once the same way) against 3 × batchBytes + 64 MiB
//                            (gencompact-xN: N × 3 × batchBytes + 64 MiB, not a documented bound)
//     --memory-limit 8GB     DuckDB memory_limit (default: DuckDB's own, 80% of RAM)
//     --timeout MIN          kill a run after MIN minutes (default 15)
//     --max-rss GIB          kill a run whose process tree exceeds GIB (default 85% of RAM)
//     --section NAME         RESULTS.md section (default: seed-shaped[-mixed-codec][-partitioned|-sorted|-dedupe]
//                            [-tN...][-xN] after the gencompact-tN / gencompact-xN tools run)
//     --no-write             do not touch RESULTS.md;  --keep  keep output dirs
//
// 1. Generates the input partition once with fixtures/gen-partition.js (the unique shapes:
//    fixtures/gen-unique.py, re-written by bench/unique-rewrite.js) and caches it under
//    bench/data/<params>/ (gitignored; regenerated when the generator's source changes).
// 2. Runs each tool as its own child process under `/usr/bin/time -v`, N times, round robin,
//    into a fresh bench/out/<tool>-<run>/ that is deleted after measuring. A tool that fails
//    once is not retried.
// 3. Records output file count, average/max output file size, wall time, CPU (user, system),
//    peak RSS and page faults (medians over runs); checks each tool's output row count with
//    DuckDB count(*) once.
// 4. Prints a markdown table and writes it into bench/RESULTS.md between
//    <!-- bench:<section> begin --> and <!-- bench:<section> end --> (other text is kept).
//
// The thread-scaling measurements (side by side with bare, medians of 3, verify on):
//   node bench/run.js --only bare,gencompact                     (and --shape mixed-codec)
//   node bench/run.js --only bare,gencompact --sort              (sortBy ts)
//   node bench/run.js --only bare,gencompact --partition --sort --dedupe
//   node bench/run.js --only bare,gencompact-t1,gencompact-t2    (section seed-shaped-t1-t2)
//   node bench/run.js --only bare,gencompact --concurrent 4      (section seed-shaped-x4)
//
// Fat values unique to every row (sections unique-shaped[-duckdb|-hyparquet|-evolved][-scaleN]...):
//   node bench/run.js --only bare,gencompact --shape unique --sort
//   node bench/run.js --only bare,gencompact --shape unique-duckdb      (and unique-hyparquet, unique-evolved)
//   node bench/run.js --only bare,gencompact --shape unique --scale 4   (four times the data)
// The report adds, per tool, user and system CPU (system as % of user+sys) and page faults
// (minor+major from time -v, median; gencompact's against bare's).
//
// The cost of applying Iceberg deletes (DVs, position deletes) on the same cached input:
//   node bench/deletes.js [--runs 3]      (section deletes-seed of bench/RESULTS.md)

const fs = require('fs')
const os = require('os')
const path = require('path')
const {
  listParquet, writeSection, ROOT, TIME, DEDUPE_COLUMN, SEED_SHAPE,
  MiB, fmtBytes, fmtSec, median, sqlList, ensureInput, ensureMixedCodec, runTimed,
  ensureUnique, UNIQUE_SHAPE, UNIQUE_SHAPES,
} = require('./files')
const { execFileSync } = require('child_process')

const BENCH = __dirname
const OUT = path.join(BENCH, 'out')
const RESULTS = path.join(BENCH, 'RESULTS.md')
const PARTITION_COLUMNS = ['session_id', 'conversation_id', 'cwd', 'date'] // the table's identity spec
const SORT_COLUMN = 'ts'
// SEED_SHAPE (the seed's partition) and the input generation/caching live in bench/files.js.

// duckdb*: `COPY ... FILE_SIZE_BYTES '128MB'`; -noshred keeps VARIANT unshredded (see duckdb.js),
// -sorted adds ORDER BY ts.
const ALL_TOOLS = ['gencompact', 'bare', 'duckdb', 'duckdb-noshred', 'old-loop', 'duckdb-sorted', 'duckdb-noshred-sorted']
const DEFAULT_TOOLS = ['gencompact', 'bare', 'duckdb', 'duckdb-noshred', 'old-loop']
const SHAPES = ['seed', 'mixed-codec', 'evolved', ...UNIQUE_SHAPES]
const isUnique = shape => UNIQUE_SHAPES.includes(shape)
const BARE = path.join(ROOT, 'target', 'release', 'examples', process.platform === 'win32' ? 'bare.exe' : 'bare')
// gencompact with a `threads` value (gencompact-t2) or N concurrent calls in one process (gencompact-x4)
const THREADS_TOOL = /^gencompact-t(\d+)$/
const CONCURRENT_TOOL = /^gencompact-x(\d+)$/
const isGencompact = tool => tool === 'gencompact' || THREADS_TOOL.test(tool) || CONCURRENT_TOOL.test(tool)
const callsOf = tool => { const m = tool.match(CONCURRENT_TOOL); return m ? Number(m[1]) : 1 }

// ---------------------------------------------------------------- arguments

function parseArgs(argv) {
  const a = {
    runs: 3, only: DEFAULT_TOOLS, gen: { ...SEED_SHAPE }, genExtra: {}, genSet: {}, scale: 1,
    input: null, dedupe: false, partition: false, sort: false, batchBytes: null, memoryLimit: null, section: null, write: true, keep: false,
    shape: 'seed', threads: null, concurrent: null, verify: true,
    timeoutMin: 15, maxRssGiB: Math.floor(os.totalmem() / 1024 ** 3 * 0.85),
  }
  const num = (v, flag) => {
    const n = Number(v)
    if (!Number.isFinite(n)) throw new Error(`${flag} needs a number, got ${v}`)
    return n
  }
  for (let i = 0; i < argv.length; i++) {
    const f = argv[i]
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${f} needs a value`)
      return argv[++i]
    }
    switch (f) {
      case '--runs': a.runs = num(next(), f); break
      case '--only': a.only = next().split(',').map(s => s.trim()).filter(Boolean); break
      case '--rows': a.gen.rows = a.genSet.rows = num(next(), f); break
      case '--files': a.gen.files = a.genSet.files = num(next(), f); break
      case '--tuples': a.gen.tuples = a.genSet.tuples = num(next(), f); break
      case '--seed': a.gen.seed = a.genSet.seed = num(next(), f); break
      case '--fat-bytes': a.gen.fatBytes = a.genSet.fatBytes = num(next(), f); break
      case '--row-bytes': a.gen.rowBytes = a.genSet.rowBytes = num(next(), f); break
      case '--scale': a.scale = num(next(), f); break
      case '--row-group-size': a.genExtra.rowGroupSize = num(next(), f); break
      case '--dup-rate': a.genExtra.dupRate = num(next(), f); break
      case '--shuffle': a.genExtra.shuffle = 1; break
      case '--input': a.input = path.resolve(next()); break
      case '--dedupe': a.dedupe = true; break
      case '--partition': a.partition = true; break
      case '--sort': a.sort = true; break
      case '--sort-by': a.sort = true; a.sortColumn = next(); break
      case '--batch-bytes': a.batchBytes = num(next(), f); break
      case '--compression': a.compression = next(); break
      case '--threads': a.threads = num(next(), f); break
      case '--concurrent': a.concurrent = num(next(), f); break
      case '--no-verify': a.verify = false; break
      case '--shape': a.shape = next(); break
      case '--memory-limit': a.memoryLimit = next(); break
      case '--section': a.section = next(); break
      case '--no-write': a.write = false; break
      case '--keep': a.keep = true; break
      case '--timeout': a.timeoutMin = num(next(), f); break
      case '--max-rss': a.maxRssGiB = num(next(), f); break
      case '-h': case '--help':
        console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(2).filter((l, i, ls) => ls.slice(0, i + 1).every(x => x.startsWith('//')))
          .map(l => l.replace(/^\/\/ ?/, '')).join('\n'))
        process.exit(0)
        break
      default: throw new Error(`unknown argument ${f}`)
    }
  }
  if (a.concurrent != null) {
    if (!(Number.isInteger(a.concurrent) && a.concurrent >= 1)) throw new Error('--concurrent needs a positive integer')
    if (!a.only.includes(`gencompact-x${a.concurrent}`)) a.only = [...a.only, `gencompact-x${a.concurrent}`]
  }
  for (const t of a.only) {
    if (!ALL_TOOLS.includes(t) && !THREADS_TOOL.test(t) && !CONCURRENT_TOOL.test(t)) {
      throw new Error(`unknown tool ${t} (known: ${ALL_TOOLS.join(', ')}, gencompact-tN, gencompact-xN)`)
    }
  }
  if (!SHAPES.includes(a.shape)) throw new Error(`unknown --shape ${a.shape} (known: ${SHAPES.join(', ')})`)
  if (a.shape !== 'seed' && a.input) throw new Error('--shape applies to the generated input, not --input')
  if (!(a.runs >= 1)) throw new Error('--runs must be >= 1')
  if (!(Number.isInteger(a.scale) && a.scale >= 1)) throw new Error('--scale needs a positive integer')
  if (a.scale !== 1 && a.input) throw new Error('--scale applies to the generated input, not --input')
  if (isUnique(a.shape)) {
    if (Object.keys(a.genExtra).length || a.genSet.rowBytes != null) {
      throw new Error(`--shape ${a.shape} takes --rows --files --tuples --seed --fat-bytes --scale only`)
    }
    // the unique generator's own defaults; what was given on the command line wins
    const g = { ...UNIQUE_SHAPE, ...a.genSet }
    a.uniqueGen = { rows: g.rows * a.scale, files: g.files * a.scale, tuples: g.tuples, seed: g.seed, fatBytes: g.fatBytes }
  }
  if (!a.section) {
    const isSeed = !a.input && Object.keys(a.genExtra).length === 0 &&
      Object.entries(SEED_SHAPE).every(([k, v]) => a.gen[k] === v)
    const isUniqueDefault = Object.keys(a.genSet).length === 0
    a.section = (isUnique(a.shape)
      ? (isUniqueDefault ? 'unique-shaped' : `unique-r${a.uniqueGen.rows / a.scale}-f${a.uniqueGen.files / a.scale}-t${a.uniqueGen.tuples}-fat${a.uniqueGen.fatBytes}`) +
        a.shape.slice('unique'.length)
      : (isSeed ? 'seed-shaped' : a.input ? `input-${path.basename(a.input, '.json')}`
        : `r${a.gen.rows}-f${a.gen.files}-t${a.gen.tuples}-fat${a.gen.fatBytes}-row${a.gen.rowBytes}`) +
        (a.shape !== 'seed' ? `-${a.shape}` : '')) +
      (a.scale !== 1 ? `-scale${a.scale}` : '') +
      (a.partition ? '-partitioned' : '') + (a.sort ? (a.sortColumn && a.sortColumn !== SORT_COLUMN ? `-sorted-by-${a.sortColumn}` : '-sorted') : '') + (a.dedupe ? '-dedupe' : '') +
      (a.batchBytes ? `-bb${a.batchBytes}` : '') + (a.threads ? `-threads${a.threads}` : '') + (a.verify ? '' : '-noverify') +
      a.only.filter(t => THREADS_TOOL.test(t) || CONCURRENT_TOOL.test(t)).map(t => '-' + t.replace('gencompact-', '')).join('')
  }
  if (!isUnique(a.shape) && a.scale !== 1) {
    a.gen.rows *= a.scale
    a.gen.files *= a.scale
  }
  return a
}

// ---------------------------------------------------------------- small helpers

function ratio(x, base) { return x != null && base ? `${(x / base).toFixed(2)}×` : '—' }
function fmtCount(n) { return n == null ? '—' : Math.round(n).toLocaleString('en-US') }
const faultsOf = r => r.minorFaults != null && r.majorFaults != null ? r.minorFaults + r.majorFaults : null
const sysShareOf = r => r.userMs != null && r.sysMs != null && r.userMs + r.sysMs > 0 ? r.sysMs / (r.userMs + r.sysMs) : null
function sh(cmd, args) {
  try { return execFileSync(cmd, args, { encoding: 'utf8' }).trim() } catch { return '' }
}

// ---------------------------------------------------------------- running one tool

function toolCommand(tool, outDir, listFile, args) {
  const node = process.execPath
  if (isGencompact(tool)) {
    const t = tool.match(THREADS_TOOL)
    const threads = t ? Number(t[1]) : args.threads
    const extra = [
      ...(args.dedupe ? ['--dedupe', DEDUPE_COLUMN] : []),
      ...(args.partition ? ['--partition-by', PARTITION_COLUMNS.join(',')] : []),
      ...(args.sort ? ['--sort-by', args.sortColumn || SORT_COLUMN] : []),
      ...(args.batchBytes ? ['--batch-bytes', String(args.batchBytes)] : []),
      ...(threads ? ['--threads', String(threads)] : []),
      ...(args.verify ? [] : ['--no-verify']),
      // zstd unless told otherwise, as DuckDB writes: the addon's default (the inputs' codec)
      // would write SNAPPY here and change what the recorded sizes compare.
      '--compression', codecOf(args),
    ]
    if (CONCURRENT_TOOL.test(tool)) {
      return [node, path.join(BENCH, 'concurrent.js'), '--calls', String(callsOf(tool)), ...extra, outDir, listFile]
    }
    return [node, path.join(BENCH, 'gencompact.js'), ...extra, outDir, listFile]
  }
  switch (tool) {
    case 'bare':
      // The same codec as gencompact's run; one output file, no partitioning, sorting or dedupe.
      // (the inputs as `@list.json`: thousands of paths do not fit a command line)
      return [BARE, path.join(outDir, 'bare.parquet'), codecOf(args), `@${listFile}`]
    case 'duckdb':
    case 'duckdb-sorted':
    case 'duckdb-noshred':
    case 'duckdb-noshred-sorted': {
      const extra = [...(tool.includes('sorted') ? ['--sorted'] : []),
        ...(tool.includes('noshred') ? ['--no-shred'] : []),
        ...(args.memoryLimit ? ['--memory-limit', args.memoryLimit] : [])]
      return [node, path.join(BENCH, 'duckdb.js'), ...extra, outDir, listFile]
    }
    case 'old-loop':
      return [node, path.join(BENCH, 'old-loop.js'), outDir, listFile]
    case 'idle':
      return [node, path.join(BENCH, 'gencompact.js'), '--idle']
  }
  throw new Error(`unknown tool ${tool}`)
}

function codecOf(args) { return args.compression || 'zstd' }

function runOnce(tool, run, listFile, args) {
  const outDir = path.join(OUT, `${tool}-${run}`)
  const cmd = toolCommand(tool, outDir, listFile, args)
  return runTimed(cmd, { outDir, timeFile: path.join(OUT, `${tool}-${run}.time`), maxRssGiB: args.maxRssGiB, timeoutMin: args.timeoutMin })
    .then(r => ({ tool, run, ...r }))
}


async function verifyOutput(duck, res) {
  const files = res.files.map(f => f.path)
  if (!files.length) return { rows: 0 }
  const n = (await duck.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM read_parquet(${sqlList(files)})`)).getRowObjectsJS()[0].n
  const schema = (await duck.runAndReadAll(
    `SELECT count(*) FILTER (WHERE field_id IS NOT NULL)::BIGINT AS with_ids, count(*)::BIGINT AS cols FROM parquet_schema(${sqlList([files[0]])})`
  )).getRowObjectsJS()[0]
  const kv = (await duck.runAndReadAll(
    `SELECT count(*)::BIGINT AS k FROM parquet_kv_metadata(${sqlList([files[0]])}) WHERE decode(key) = 'iceberg.schema'`
  )).getRowObjectsJS()[0]
  return { rows: Number(n), fieldIds: Number(schema.with_ids), icebergSchema: Number(kv.k) > 0 }
}

// ---------------------------------------------------------------- report

function machineSummary() {
  const cpu = (os.cpus()[0] || {}).model || 'unknown cpu'
  const free = sh('free', ['-g']).split('\n').find(l => l.startsWith('Mem:')) || ''
  const [, total, used, freeG, , , avail] = free.trim().split(/\s+/)
  return {
    nproc: sh('nproc', []) || String(os.cpus().length),
    cpu,
    mem: free ? `free -g: total ${total} GiB, used ${used}, free ${freeG}, available ${avail}` : `${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB`,
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
  }
}

function expectedRows(tool, input, args) {
  const dedupes = tool === 'old-loop' || (isGencompact(tool) && args.dedupe)
  return callsOf(tool) * (dedupes && input.distinctIds != null ? input.distinctIds : input.rowCount)
}

// gencompact's documented memory bound above an idle process: 3 × batchBytes + 64 MiB (README);
// for N concurrent calls, N × 3 × batchBytes + 64 MiB (each call's batches; not a documented bound).
function rssBound(tool, args) {
  const batchBytes = args.batchBytes || 32 * MiB
  return { batchBytes, calls: callsOf(tool), bound: callsOf(tool) * 3 * batchBytes + 64 * MiB }
}

const MIXED_KEYS = ['dir', 'writer', 'codecs', 'variantKept', 'evolvedFiles', 'from']

function buildReport({ args, input, results, verify, machine, duckdbVersion, command, started, idle }) {
  const tools = args.only
  const stats = {}
  for (const tool of tools) {
    const rs = results.filter(r => r.tool === tool)
    const ok = rs.filter(r => r.ok)
    const last = ok[ok.length - 1]
    const sizes = last ? last.files.map(f => f.size) : []
    const counts = [...new Set(ok.map(r => r.files.length))]
    stats[tool] = {
      runs: rs.length,
      ok: ok.length,
      fileCount: last ? last.files.length : null,
      fileCounts: counts,
      avg: sizes.length ? sizes.reduce((a, b) => a + b, 0) / sizes.length : null,
      max: sizes.length ? Math.max(...sizes) : null,
      total: sizes.length ? sizes.reduce((a, b) => a + b, 0) : null,
      wall: median(ok.map(r => r.wallMs)),
      wallMin: ok.length ? Math.min(...ok.map(r => r.wallMs)) : null,
      wallMax: ok.length ? Math.max(...ok.map(r => r.wallMs)) : null,
      rss: median(ok.map(r => r.maxRssBytes)),
      cpu: median(ok.map(r => r.cpuMs)),
      user: median(ok.map(r => r.userMs)),
      sys: median(ok.map(r => r.sysMs)),
      sysShare: median(ok.map(sysShareOf)),
      faults: median(ok.map(faultsOf)),
      majorFaults: median(ok.map(r => r.majorFaults)),
      errors: rs.filter(r => !r.ok).map(r => r.error),
      summary: last && last.summary,
    }
  }
  const firstGencompact = tools.find(t => isGencompact(t) && stats[t].ok)
  const base = firstGencompact ? stats[firstGencompact] : null
  const bare = stats.bare && stats.bare.ok ? stats.bare : null
  const withBare = tools.includes('bare')
  const withIdle = idle && idle.ok && tools.some(isGencompact)

  // gencompact's peak RSS above the idle process (worst run) against its bound
  const aboveIdle = tool => {
    const worst = Math.max(...results.filter(r => r.tool === tool && r.ok).map(r => r.maxRssBytes))
    const { bound } = rssBound(tool, args)
    return { worst, above: worst - idle.maxRssBytes, bound, within: worst - idle.maxRssBytes <= bound }
  }

  const rows = []
  rows.push('| tool | output files | avg file | max file | rows out (expected) | wall, median (min–max) | CPU user+sys | user / sys (sys % of CPU) | peak RSS, median | page faults, median (major) |' +
    (withIdle ? ' peak above idle (bound) |' : '') + (withBare ? ' wall / CPU vs bare | faults vs bare |' : '') +
    ' wall vs gencompact | RSS vs gencompact | field ids / iceberg.schema kept |')
  rows.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|' + (withIdle ? '---:|' : '') + (withBare ? '---:|---:|' : '') + '---:|---:|---|')
  const cpuSplit = (user, sys, share) => user == null || sys == null ? '—' : `${fmtSec(user)} / ${fmtSec(sys)} (${share == null ? '—' : (100 * share).toFixed(1)} %)`
  const faultsCell = (faults, major) => faults == null ? '—' : `${fmtCount(faults)} (${fmtCount(major)})`
  for (const tool of tools) {
    const s = stats[tool]
    const extra = (withIdle ? ' |' : '') + (withBare ? ' | |' : '')
    if (!s.ok) {
      const f = results.find(r => r.tool === tool && !r.ok)
      const why = (s.errors[0] || 'failed').slice(0, 200).replace(/\|/g, '\\|')
      rows.push(`| ${tool} | **failed** (${s.runs} of ${s.runs} run${s.runs > 1 ? 's' : ''}): ${why} | | | | ${fmtSec(f && f.wallMs)} until failure | ${fmtSec(f && f.cpuMs)} | ` +
        `${f ? cpuSplit(f.userMs, f.sysMs, sysShareOf(f)) : '—'} | ${fmtBytes(f && f.maxRssBytes)} at failure | ${f ? faultsCell(faultsOf(f), f.majorFaults) : '—'} until failure |${extra} | | |`)
      continue
    }
    let idleCell = ''
    if (withIdle) {
      if (isGencompact(tool)) {
        const m = aboveIdle(tool)
        idleCell = ` ${fmtBytes(m.above)} (${fmtBytes(m.bound)}) ${m.within ? '✓' : '✗'} |`
      } else idleCell = ' |'
    }
    const bareCell = withBare ? ` ${tool === 'bare' ? '1.00× / 1.00×' : bare ? `${ratio(s.wall, bare.wall)} / ${ratio(s.cpu, bare.cpu)}` : '—'} |` +
      ` ${tool === 'bare' ? '1.00×' : bare ? ratio(s.faults, bare.faults) : '—'} |` : ''
    const v = verify[tool]
    const exp = expectedRows(tool, input, args)
    const rowsCell = v ? `${v.rows.toLocaleString('en-US')}${v.rows === exp ? ' ✓' : ` ✗ (expected ${exp.toLocaleString('en-US')})`}` : '—'
    const kept = v ? `${v.fieldIds ? `${v.fieldIds} ids` : 'no ids'} / ${v.icebergSchema ? 'yes' : 'no'}` : '—'
    const count = s.fileCounts.length > 1 ? `${s.fileCount} (runs: ${s.fileCounts.join('/')})` : `${s.fileCount}`
    rows.push(`| ${tool} | ${count} | ${fmtBytes(s.avg)} | ${fmtBytes(s.max)} | ${rowsCell} | ${fmtSec(s.wall)} (${fmtSec(s.wallMin)}–${fmtSec(s.wallMax)}) | ${fmtSec(s.cpu)} | ` +
      `${cpuSplit(s.user, s.sys, s.sysShare)} | ${fmtBytes(s.rss)} | ${faultsCell(s.faults, s.majorFaults)} |${idleCell}${bareCell} ${ratio(s.wall, base && base.wall)} | ${ratio(s.rss, base && base.rss)} | ${kept} |`)
  }
  const table = rows.join('\n')

  const g = input.params || {}
  const genDesc = args.input
    ? `file list ${args.input.startsWith(ROOT) ? path.relative(ROOT, args.input) : args.input}`
    : isUnique(args.shape) ? uniqueDesc(args, input)
    : `fixtures/gen-partition.js ${JSON.stringify(Object.fromEntries(Object.entries(g).filter(([k]) => !MIXED_KEYS.includes(k))))}` +
      (args.shape !== 'seed' ? `, re-written by bench/mixed-codec.py (${g.writer}; files per codec ${JSON.stringify(g.codecs)}, ` +
        `${g.variantKept ? 'VARIANT annotation kept' : 'VARIANT columns written as plain groups of two binaries: pyarrow drops the annotation'}` +
        `${g.evolvedFiles ? `; the newest ${g.evolvedFiles} files add a nullable string column \`region\`` : ''})` : '')
  const notes = []
  if (tools.some(t => t.startsWith('duckdb'))) {
    notes.push('- DuckDB (v1.5.x) auto-shreds VARIANT columns when it writes Parquet. On these key-rich JSON values ' +
      '(tool definitions with generated property names) the shredded schema runs to thousands of leaf columns, and ' +
      'time and memory grew super-linearly with rows in our probes, so plain `duckdb` fails (out of memory, DuckDB\'s ' +
      'own accounting) on the full partition. `duckdb-noshred` adds `SHREDDING {<each VARIANT column>: \'VARCHAR\'}`, a scalar shredding ' +
      'no object matches, so values stay in the unshredded `value` binary (plus an all-null `typed_value` column). ' +
      'DuckDB output drops Parquet field ids and the `iceberg.schema` key-value metadata, and makes REQUIRED columns OPTIONAL.')
  }
  for (const tool of tools) {
    const s = stats[tool]
    if (s.summary && s.summary.settings) notes.push(`- ${tool}: DuckDB ${s.summary.duckdbVersion}, settings ${JSON.stringify(s.summary.settings)}; \`${s.summary.sql}\``)
    if (s.errors.length) notes.push(`- ${tool}: ${s.errors.length} failed run(s); last error: \`${s.errors[s.errors.length - 1].slice(0, 300)}\``)
    if (tool === 'old-loop' && s.summary) notes.push(`- old-loop: ${s.summary.rowsRead} rows read, ${s.summary.duplicatesDropped} duplicates dropped, ~${s.summary.avgRowsPerFile} rows per flush/file (10,000 rows or 32 MiB estimated, one file per flush, hyparquet-writer SNAPPY)`)
    if (isGencompact(tool) && s.summary) {
      const calls = s.summary.calls ? `${s.summary.calls} concurrent calls in one process (each call's wall: ${s.summary.callWallMs.map(fmtSec).join(', ')}); ` : ''
      notes.push(`- ${tool}: ${calls}options ${JSON.stringify(s.summary.options)}; ${s.summary.rowsRead} rows read, ${s.summary.duplicatesDropped ?? 0} duplicates dropped; row groups per file ${JSON.stringify(s.summary.rowGroups.length > 40 ? summarize(s.summary.rowGroups) : s.summary.rowGroups)}`)
      const spill = s.summary.spill
      if (s.summary.mostDescriptors != null) {
        notes.push(`- ${tool}: \`peakMemoryBytes\` ${fmtBytes(s.summary.peakMemoryBytes)}; spill ${fmtCount(spill ? spill.runs : 0)} runs, ` +
          `${fmtCount(spill ? spill.mergePasses : 0)} merge passes; at most ${fmtCount(s.summary.mostDescriptors)} descriptors open while the call ran ` +
          `(${fmtCount(s.summary.mostDescriptors - s.summary.idleDescriptors)} above the ${fmtCount(s.summary.idleDescriptors)} of the process before it; /proc/self/fd polled every 5 ms; last run)`)
      }
      if (spill && spill.runs > 0) {
        const ratio = spill.peakBytes / input.bytes
        notes.push(`- ${tool} spill (the result's \`spill\`): ${fmtCount(spill.runs)} runs, ${fmtBytes(spill.bytes)} written; at most ${fmtBytes(spill.peakBytes)} on disk at once, ` +
          `${ratio.toFixed(2)}× the inputs' ${fmtBytes(input.bytes)} on disk (at most 1.5×): ${ratio <= 1.5 ? 'within ✓' : 'EXCEEDED ✗'}`)
      }
    }
    if (isGencompact(tool) && s.ok && idle && idle.ok) {
      const { batchBytes, calls } = rssBound(tool, args)
      const m = aboveIdle(tool)
      notes.push(`- ${tool} memory bound: idle process (node + addon loaded) ${fmtBytes(idle.maxRssBytes)} (${fmtCount(faultsOf(idle))} page faults); worst peak over the runs ${fmtBytes(m.worst)}, ` +
        `i.e. ${fmtBytes(m.above)} above idle, against ${calls > 1 ? `${calls} × ` : ''}3 × batchBytes + 64 MiB = ${fmtBytes(m.bound)} (batchBytes ${fmtBytes(batchBytes)}${calls > 1 ? '; N calls: not a documented bound' : ''}): ${m.within ? 'within ✓' : 'EXCEEDED ✗'}`)
    }
    if (tool === 'bare' && s.ok) {
      notes.push(`- bare: \`target/release/examples/bare <out> ${codecOf(args)} <inputs>\` (examples/bare.rs, this repository's parquet/arrow versions): one thread, ` +
        'every input through `ParquetRecordBatchReader` (1,024-row batches) into one `ArrowWriter` (parquet-rs default writer properties but the codec), ' +
        'one output file, no partitioning, sorting, dedupe, byte bounds or verify. "wall / CPU vs bare" = median over median.')
    }
  }

  return [
    `## Compaction benchmark — ${args.section}`,
    '',
    `- Date: ${started.toISOString()}`,
    `- Machine: nproc ${machine.nproc}, ${machine.cpu}; ${machine.mem}; ${machine.kernel}; node ${machine.node}; DuckDB ${duckdbVersion}`,
    `- Input${args.shape !== 'seed' ? ` (shape ${args.shape})` : ''}: ${input.files.length} files, ${(input.rowCount ?? input.rows ?? 0).toLocaleString('en-US')} rows` +
      (input.distinctIds != null ? ` (${input.distinctIds.toLocaleString('en-US')} distinct \`${DEDUPE_COLUMN}\`)` : '') +
      `, ${fmtBytes(input.bytes)} on disk (avg ${fmtBytes(input.bytes / input.files.length)}/file), ` +
      `${fmtBytes(input.parquetUncompressedBytes)} Parquet-uncompressed${input.decodedBytes ? `, ${fmtBytes(input.decodedBytes)} decoded (value bytes)` : ''}, ` +
      `${input.inputRowGroups} row groups; ${genDesc}`,
    `- Command: \`${command}\``,
    `- Method: each tool is a separate child process under \`/usr/bin/time -v\`, ${args.runs} run(s) each, round robin, fresh output dir per run ` +
      `(deleted after measuring), warm page cache. Wall = spawn to exit as seen by the driver (includes node start-up); ` +
      `peak RSS = "Maximum resident set size" from time -v; page faults = its minor + major ("major" in brackets), CPU its user and system time. Sizes from the last run (KiB/MiB = 1024-based). Rows checked once with DuckDB \`count(*)\`; ` +
      (tools.includes('old-loop') ? `old-loop dedupes by \`${DEDUPE_COLUMN}\`${args.dedupe ? ', gencompact too (--dedupe)' : ', gencompact and DuckDB do not (defaults)'}. ` : '') +
      `gencompact options: ${args.partition ? 'partitionBy ' + PARTITION_COLUMNS.join(',') : 'no partitionBy (tuples are mixed in a file)'}${args.sort ? ', sortBy ' + (args.sortColumn || SORT_COLUMN) : ''}` +
      `${args.dedupe ? ', dedupeBy ' + DEDUPE_COLUMN : ''}, compression ${codecOf(args)}, threads ${args.threads || 'default (available cores)'}, verify ${args.verify ? 'on' : 'off'}.`,
    '',
    table,
    '',
    ...(notes.length ? ['Notes:', ...notes, ''] : []),
  ].join('\n')
}

// The unique shapes: the generator's parameters, the writer, and what the fat column's pages hold.
function uniqueDesc(args, input) {
  const g = input.params || {}
  const gen = Object.fromEntries(['rows', 'files', 'tuples', 'seed', 'fatBytes'].map(k => [k, g[k]]))
  const f = input.facts && input.facts.fat
  let pages = ''
  if (f && f.pages) {
    const p = f.pages
    const data = Object.entries(p.dataPages).map(([k, v]) => `${v.pages.toLocaleString('en-US')} ${k} pages (${v.values.toLocaleString('en-US')} values)`).join(', ')
    pages = `; fat column \`${f.column}\`: every value distinct on a sample (${f.sample.distinct.toLocaleString('en-US')} of ${f.sample.rows.toLocaleString('en-US')} rows), ` +
      `avg ${fmtBytes(f.sample.avgValueBytes)}; ${p.dictionaryPages ? `${p.dictionaryPages} dictionary pages holding ${p.dictionaryValues.toLocaleString('en-US')} values ` +
      `(largest ${fmtBytes(p.largestDictionaryPage)} uncompressed), ` : 'no dictionary pages, '}${data}; largest data page ${fmtBytes(p.largestDataPage)} uncompressed; ` +
      `compression of the fat column by codec ${JSON.stringify(f.ratioByCodec)}`
  }
  return `fixtures/gen-unique.py ${JSON.stringify(gen)}${args.scale !== 1 ? ` (--scale ${args.scale})` : ''}, written by ${g.writer}` +
    `${g.from ? ` from ${g.from}` : ''} with its default settings (files per codec ${JSON.stringify(g.codecs)})` +
    `${g.evolvedFiles ? `; the newest ${g.evolvedFiles} files add a nullable string column \`region\`` : ''}${pages}`
}

function summarize(xs) {
  return { files: xs.length, min: Math.min(...xs), median: median(xs), max: Math.max(...xs) }
}

function writeResults(section, body) {
  writeSection(RESULTS, section, body, '# Benchmark results\n\nSections are rewritten by `node bench/run.js`; text outside the markers is kept.')
  require('./summary').writeSummary()
}

// ---------------------------------------------------------------- main

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const started = new Date()
  const invoked = `node bench/run.js${process.argv.slice(2).map(a => ' ' + a).join('')}`
  const command = process.env.npm_lifecycle_event === 'bench'
    ? `npm run bench${process.argv.length > 2 ? ' --' + process.argv.slice(2).map(a => ' ' + a).join('') : ''}` : invoked

  if (!fs.existsSync(TIME)) throw new Error(`${TIME} not found (apt-get install time)`)
  if (args.only.some(isGencompact) && !fs.existsSync(path.join(ROOT, 'index.js'))) {
    console.error('warning: index.js not found — the gencompact runs will fail (build the addon first: npm run build)')
  }

  const { DuckDBInstance } = require('@duckdb/node-api')
  const db = await DuckDBInstance.create(':memory:')
  const duck = await db.connect()
  await duck.run('SET threads=2')
  const duckdbVersion = (await duck.runAndReadAll('SELECT version() AS v')).getRowObjectsJS()[0].v

  let input
  if (isUnique(args.shape)) input = await ensureUnique(args.uniqueGen, duck, args.shape)
  else {
    const seedInput = await ensureInput(args, duck)
    input = args.shape !== 'seed' ? await ensureMixedCodec(seedInput, duck, args.shape) : seedInput
  }
  if (args.only.includes('bare') && !fs.existsSync(BARE)) {
    throw new Error(`${path.relative(ROOT, BARE)} not found: cargo build --release --example bare (npm run bench builds it)`)
  }
  fs.mkdirSync(OUT, { recursive: true })
  const listFile = path.join(OUT, 'input-files.json')
  fs.writeFileSync(listFile, JSON.stringify(input.files))
  console.error(`input: ${input.files.length} files, ${input.rowCount} rows, ${fmtBytes(input.bytes)}; tools ${args.only.join(', ')}; ${args.runs} run(s)`)

  const idle = args.only.some(isGencompact) ? await runOnce('idle', 0, listFile, args) : null
  if (idle) process.stderr.write(`idle process (node + addon): ${fmtBytes(idle.maxRssBytes)} RSS\n`)
  const results = []
  const verify = {}
  const failed = new Set()
  for (let run = 1; run <= args.runs; run++) {
    for (const tool of args.only) {
      if (failed.has(tool)) continue // a tool that failed once is not retried
      process.stderr.write(`run ${run}/${args.runs} ${tool} ... `)
      const r = await runOnce(tool, run, listFile, args)
      results.push(r)
      if (r.ok) {
        const total = r.files.reduce((a, f) => a + f.size, 0)
        process.stderr.write(`${fmtSec(r.wallMs)}, ${fmtBytes(r.maxRssBytes)} RSS, ${r.files.length} files (${fmtBytes(total)})\n`)
        if (!verify[tool]) {
          verify[tool] = await verifyOutput(duck, r)
          const exp = expectedRows(tool, input, args)
          process.stderr.write(`  rows ${verify[tool].rows} (expected ${exp})${verify[tool].rows === exp ? '' : '  MISMATCH'}\n`)
        }
      } else {
        failed.add(tool)
        process.stderr.write(`FAILED (exit ${r.code}${r.signal ? ', ' + r.signal : ''}${r.exitStatus != null ? ', time: status ' + r.exitStatus : ''})\n${r.error}\n`)
      }
      if (!args.keep) fs.rmSync(r.outDir, { recursive: true, force: true })
    }
  }
  duck.closeSync()
  db.closeSync()

  const report = buildReport({ args, input, results, verify, machine: machineSummary(), duckdbVersion, command, started, idle })
  console.log('\n' + report)
  if (args.write) {
    writeResults(args.section, report)
    console.error(`wrote section "${args.section}" of ${path.relative(process.cwd(), RESULTS)}`)
  }
  fs.writeFileSync(path.join(OUT, `last-${args.section}.json`), JSON.stringify({ args, input: { ...input, files: input.files.length }, results }, null, 1))
}

main().catch(err => { console.error(err && err.stack || err); process.exit(1) })
