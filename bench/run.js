#!/usr/bin/env node
'use strict'
// Compaction benchmark driver: gencompact vs DuckDB vs the old JS loop.
//
//   npm run bench                      (= npm run build && node bench/run.js)
//   node bench/run.js [--runs 3] [--only gencompact,duckdb,old-loop,duckdb-sorted]
//                     [--rows 52329] [--files 230] [--tuples 30] [--seed 1]
//                     [--fat-bytes N] [--row-bytes N] [--row-group-size N] [--dup-rate X]
//                     [--input list.json] [--dedupe] [--memory-limit 8GB]
//                     [--section NAME] [--no-write] [--keep]
//
// 1. Generates the input partition once with fixtures/gen-partition.js and caches it
//    under bench/data/<params>/ (gitignored); --input uses an existing file list instead.
// 2. Runs each tool as its own child process under `/usr/bin/time -v`, N times, round
//    robin, into a fresh bench/out/<tool>-<run>/ that is deleted after measuring.
// 3. Records output file count, average/max output file size, wall time and peak RSS
//    (medians over runs); checks each tool's output row count with DuckDB count(*) once.
// 4. Prints a markdown table and writes it into bench/RESULTS.md between
//    <!-- bench:<section> begin --> and <!-- bench:<section> end --> (other text is kept).

const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawn, execFileSync } = require('child_process')

const ROOT = path.resolve(__dirname, '..')
const BENCH = __dirname
const DATA = path.join(BENCH, 'data')
const OUT = path.join(BENCH, 'out')
const RESULTS = path.join(BENCH, 'RESULTS.md')
const GENERATOR = path.join(ROOT, 'fixtures', 'gen-partition.js')
const TIME = '/usr/bin/time'
const DEDUPE_COLUMN = '_hyp_cache_row_id'

// The seed's partition: 52,329 rows in 230 files. Per-row widths come from the generator's
// "Seed-shaped" header line (its author tunes them to ~40 KB decoded per row, ~90 MB on disk).
const SEED_SHAPE = { rows: 52329, files: 230, tuples: 30, seed: 1, ...seedWidths() }

function seedWidths() {
  const w = { fatBytes: 30000, rowBytes: 10000 }
  try {
    const src = fs.readFileSync(GENERATOR, 'utf8')
    const line = src.split('\n').find(l => /--rows 52329\b/.test(l)) || ''
    const fat = line.match(/--fat-bytes (\d+)/)
    const row = line.match(/--row-bytes (\d+)/)
    if (fat) w.fatBytes = Number(fat[1])
    if (row) w.rowBytes = Number(row[1])
  } catch { /* generator not there yet: fallback widths */ }
  return w
}
const ALL_TOOLS = ['gencompact', 'duckdb', 'old-loop', 'duckdb-sorted']
const DEFAULT_TOOLS = ['gencompact', 'duckdb', 'old-loop']

// ---------------------------------------------------------------- arguments

function parseArgs(argv) {
  const a = {
    runs: 3, only: DEFAULT_TOOLS, gen: { ...SEED_SHAPE }, genExtra: {},
    input: null, dedupe: false, memoryLimit: null, section: null, write: true, keep: false,
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
      case '--rows': a.gen.rows = num(next(), f); break
      case '--files': a.gen.files = num(next(), f); break
      case '--tuples': a.gen.tuples = num(next(), f); break
      case '--seed': a.gen.seed = num(next(), f); break
      case '--fat-bytes': a.gen.fatBytes = num(next(), f); break
      case '--row-bytes': a.gen.rowBytes = num(next(), f); break
      case '--row-group-size': a.genExtra.rowGroupSize = num(next(), f); break
      case '--dup-rate': a.genExtra.dupRate = num(next(), f); break
      case '--input': a.input = path.resolve(next()); break
      case '--dedupe': a.dedupe = true; break
      case '--memory-limit': a.memoryLimit = next(); break
      case '--section': a.section = next(); break
      case '--no-write': a.write = false; break
      case '--keep': a.keep = true; break
      case '-h': case '--help':
        console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 21).map(l => l.replace(/^\/\/ ?/, '')).join('\n'))
        process.exit(0)
        break
      default: throw new Error(`unknown argument ${f}`)
    }
  }
  for (const t of a.only) if (!ALL_TOOLS.includes(t)) throw new Error(`unknown tool ${t} (known: ${ALL_TOOLS.join(', ')})`)
  if (!(a.runs >= 1)) throw new Error('--runs must be >= 1')
  if (!a.section) {
    const isSeed = !a.input && Object.keys(a.genExtra).length === 0 &&
      Object.entries(SEED_SHAPE).every(([k, v]) => a.gen[k] === v)
    a.section = isSeed ? 'seed-shaped' : a.input ? `input-${path.basename(a.input, '.json')}`
      : `r${a.gen.rows}-f${a.gen.files}-t${a.gen.tuples}-fat${a.gen.fatBytes}-row${a.gen.rowBytes}`
  }
  return a
}

// ---------------------------------------------------------------- small helpers

const MiB = 1024 * 1024
function fmtBytes(n) {
  if (n == null || !Number.isFinite(n)) return '—'
  if (n >= 1024 * MiB) return `${(n / 1024 / MiB).toFixed(2)} GiB`
  if (n >= MiB) return `${(n / MiB).toFixed(1)} MiB`
  if (n >= 1024) return `${(n / 1024).toFixed(0)} KiB`
  return `${n} B`
}
function fmtSec(ms) { return ms == null ? '—' : `${(ms / 1000).toFixed(2)} s` }
function median(xs) {
  const s = xs.filter(x => x != null).sort((a, b) => a - b)
  if (!s.length) return null
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
function ratio(x, base) { return x != null && base ? `${(x / base).toFixed(2)}×` : '—' }
function sh(cmd, args) {
  try { return execFileSync(cmd, args, { encoding: 'utf8' }).trim() } catch { return '' }
}
function listParquet(dir) {
  const out = []
  if (!fs.existsSync(dir)) return out
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name)
    if (ent.isDirectory()) out.push(...listParquet(p))
    else if (ent.name.endsWith('.parquet')) out.push(p)
  }
  return out.sort()
}
function sqlList(files) { return '[' + files.map(f => `'${f.replace(/'/g, "''")}'`).join(', ') + ']' }

// ---------------------------------------------------------------- input partition

function dataKey(gen, extra) {
  const parts = [`r${gen.rows}`, `f${gen.files}`, `t${gen.tuples}`, `s${gen.seed}`, `fat${gen.fatBytes}`, `row${gen.rowBytes}`]
  for (const [k, v] of Object.entries(extra).sort()) parts.push(`${k}${v}`)
  return parts.join('-')
}

async function ensureInput(args, duck) {
  if (args.input) {
    const j = JSON.parse(fs.readFileSync(args.input, 'utf8'))
    const files = Array.isArray(j) ? j : j.files
    const m = { params: { input: args.input }, files, bytes: files.reduce((a, f) => a + fs.statSync(f).size, 0) }
    return { ...m, ...(await describeInput(duck, files)), manifestPath: args.input, generated: false }
  }
  const dir = path.join(DATA, dataKey(args.gen, args.genExtra))
  const manifestPath = path.join(dir, 'manifest.json')
  if (fs.existsSync(manifestPath)) {
    const m = JSON.parse(fs.readFileSync(manifestPath, 'utf8'))
    if (m.files.every(f => fs.existsSync(f))) return { ...m, manifestPath, generated: false }
  }
  if (!fs.existsSync(GENERATOR)) {
    throw new Error(`${path.relative(ROOT, GENERATOR)} not found: cannot generate the input (use --input list.json)`)
  }
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const params = { dir, ...args.gen, codec: 'SNAPPY', ...args.genExtra }
  console.error(`generating input partition in ${path.relative(ROOT, dir)} ${JSON.stringify({ ...params, dir: undefined })} ...`)
  const t0 = Date.now()
  // The generator runs in its own process with a roomy heap; it reports its result as JSON.
  const script = `
    const { generatePartition } = require(${JSON.stringify(GENERATOR)})
    generatePartition(${JSON.stringify(params)}).then(r => {
      require('fs').writeFileSync(${JSON.stringify(path.join(dir, '.gen-result.json'))},
        JSON.stringify({ files: r.files, rows: r.rows, bytes: r.bytes }))
    }).catch(e => { console.error(e && e.stack || e); process.exit(1) })`
  await new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--max-old-space-size=8192', '-e', script], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] })
    p.on('exit', code => code === 0 ? resolve() : reject(new Error(`generator exited with ${code}`)))
  })
  const r = JSON.parse(fs.readFileSync(path.join(dir, '.gen-result.json'), 'utf8'))
  const files = r.files.map(f => path.resolve(f))
  const m = {
    params: { ...params, dir: path.relative(ROOT, dir) },
    files,
    rows: r.rows,
    bytes: r.bytes ?? files.reduce((a, f) => a + fs.statSync(f).size, 0),
    generatedMs: Date.now() - t0,
    generatedAt: new Date().toISOString(),
    generatorHeader: generatorHeader(),
  }
  Object.assign(m, await describeInput(duck, files))
  fs.writeFileSync(manifestPath, JSON.stringify(m, null, 1))
  console.error(`generated ${files.length} files, ${m.rowCount} rows, ${fmtBytes(m.bytes)} in ${fmtSec(m.generatedMs)}`)
  return { ...m, manifestPath, generated: true }
}

function generatorHeader() {
  try {
    const src = fs.readFileSync(GENERATOR, 'utf8')
    const m = src.match(/^(?:#!.*\n)?\s*((?:\/\/.*\n)+|\/\*[\s\S]*?\*\/)/)
    return m ? m[1].trim().slice(0, 4000) : null
  } catch { return null }
}

async function describeInput(duck, files) {
  const list = sqlList(files)
  const r = (await duck.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM read_parquet(${list})`)).getRowObjectsJS()[0]
  const cols = (await duck.runAndReadAll(`SELECT name FROM parquet_schema(${sqlList([files[0]])})`)).getRowObjectsJS().map(x => x.name)
  let distinct = null
  if (cols.includes(DEDUPE_COLUMN)) {
    distinct = Number((await duck.runAndReadAll(
      `SELECT count(DISTINCT ${DEDUPE_COLUMN})::BIGINT AS d FROM read_parquet(${list})`)).getRowObjectsJS()[0].d)
  }
  const meta = (await duck.runAndReadAll(
    `SELECT sum(total_uncompressed_size)::BIGINT AS u, count(DISTINCT (file_name, row_group_id))::BIGINT AS rg
       FROM parquet_metadata(${list})`)).getRowObjectsJS()[0]
  return {
    rowCount: Number(r.n),
    distinctIds: distinct,
    parquetUncompressedBytes: Number(meta.u),
    inputRowGroups: Number(meta.rg),
  }
}

// ---------------------------------------------------------------- running one tool

function toolCommand(tool, outDir, listFile, args) {
  const node = process.execPath
  switch (tool) {
    case 'gencompact': {
      const extra = args.dedupe ? ['--dedupe', DEDUPE_COLUMN] : []
      return [node, path.join(BENCH, 'gencompact.js'), ...extra, outDir, listFile]
    }
    case 'duckdb':
    case 'duckdb-sorted': {
      const extra = [...(tool === 'duckdb-sorted' ? ['--sorted'] : []),
        ...(args.memoryLimit ? ['--memory-limit', args.memoryLimit] : [])]
      return [node, path.join(BENCH, 'duckdb.js'), ...extra, outDir, listFile]
    }
    case 'old-loop':
      return [node, path.join(BENCH, 'old-loop.js'), outDir, listFile]
  }
  throw new Error(`unknown tool ${tool}`)
}

function parseTimeV(text) {
  const get = re => { const m = text.match(re); return m ? m[1] : null }
  const wall = get(/Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)/)
  let wallMs = null
  if (wall) wallMs = Math.round(wall.split(':').reduce((acc, x) => acc * 60 + Number(x), 0) * 1000)
  const kb = get(/Maximum resident set size \(kbytes\): (\d+)/)
  const user = get(/User time \(seconds\): ([\d.]+)/)
  const sys = get(/System time \(seconds\): ([\d.]+)/)
  const exit = get(/Exit status: (\d+)/)
  const sig = get(/Command terminated by signal (\d+)/)
  return {
    timeWallMs: wallMs,
    maxRssBytes: kb ? Number(kb) * 1024 : null,
    cpuMs: user && sys ? Math.round((Number(user) + Number(sys)) * 1000) : null,
    exitStatus: exit != null ? Number(exit) : null,
    signal: sig != null ? Number(sig) : null,
  }
}

function runOnce(tool, run, listFile, args) {
  const outDir = path.join(OUT, `${tool}-${run}`)
  fs.rmSync(outDir, { recursive: true, force: true })
  const timeFile = path.join(OUT, `${tool}-${run}.time`)
  const cmd = toolCommand(tool, outDir, listFile, args)
  return new Promise(resolve => {
    const t0 = process.hrtime.bigint()
    const p = spawn(TIME, ['-v', '-o', timeFile, ...cmd], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', d => { stdout += d })
    p.stderr.on('data', d => { stderr += d })
    p.on('exit', (code, signal) => {
      const wallMs = Number(process.hrtime.bigint() - t0) / 1e6
      const tv = fs.existsSync(timeFile) ? parseTimeV(fs.readFileSync(timeFile, 'utf8')) : {}
      fs.rmSync(timeFile, { force: true })
      let summary = null
      const line = stdout.trim().split('\n').filter(l => l.startsWith('{')).pop()
      if (line) { try { summary = JSON.parse(line) } catch { /* not JSON */ } }
      const files = listParquet(outDir).map(f => ({ path: f, size: fs.statSync(f).size }))
      const ok = code === 0 && !signal
      resolve({
        tool, run, ok, code, signal, outDir, wallMs, ...tv, summary, files,
        error: ok ? null : errorLine(stderr, code, signal, tv),
      })
    })
  })
}

// The most telling line of a failed child's stderr (the error message, not the stack).
function errorLine(stderr, code, signal, tv) {
  const lines = stderr.split('\n').map(l => l.trim()).filter(Boolean)
  const msg = lines.find(l => /error|ERR_|abort|out of memory|heap/i.test(l) && !l.startsWith('at ')) || lines[0]
  const how = tv && tv.signal != null ? `killed by signal ${tv.signal}` : `exit ${code}${signal ? ' ' + signal : ''}`
  return msg ? `${how}: ${msg}` : how
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
  const dedupes = tool === 'old-loop' || (tool === 'gencompact' && args.dedupe)
  return dedupes && input.distinctIds != null ? input.distinctIds : input.rowCount
}

function buildReport({ args, input, results, verify, machine, duckdbVersion, command, started }) {
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
      errors: rs.filter(r => !r.ok).map(r => r.error),
      summary: last && last.summary,
    }
  }
  const base = stats.gencompact && stats.gencompact.ok ? stats.gencompact : null

  const rows = []
  rows.push('| tool | output files | avg file | max file | rows out (expected) | wall, median (min–max) | CPU user+sys | peak RSS, median | wall vs gencompact | RSS vs gencompact | field ids / iceberg.schema kept |')
  rows.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
  for (const tool of tools) {
    const s = stats[tool]
    if (!s.ok) {
      const why = (s.errors[0] || 'failed').slice(0, 160).replace(/\|/g, '\\|')
      rows.push(`| ${tool} | failed (${s.runs}/${s.runs} runs): ${why} | | | | | | | | | |`)
      continue
    }
    const v = verify[tool]
    const exp = expectedRows(tool, input, args)
    const rowsCell = v ? `${v.rows.toLocaleString('en-US')}${v.rows === exp ? ' ✓' : ` ✗ (expected ${exp.toLocaleString('en-US')})`}` : '—'
    const kept = v ? `${v.fieldIds ? `${v.fieldIds} ids` : 'no ids'} / ${v.icebergSchema ? 'yes' : 'no'}` : '—'
    const count = s.fileCounts.length > 1 ? `${s.fileCount} (runs: ${s.fileCounts.join('/')})` : `${s.fileCount}`
    rows.push(`| ${tool} | ${count} | ${fmtBytes(s.avg)} | ${fmtBytes(s.max)} | ${rowsCell} | ${fmtSec(s.wall)} (${fmtSec(s.wallMin)}–${fmtSec(s.wallMax)}) | ${fmtSec(s.cpu)} | ${fmtBytes(s.rss)} | ${ratio(s.wall, base && base.wall)} | ${ratio(s.rss, base && base.rss)} | ${kept} |`)
  }
  const table = rows.join('\n')

  const g = input.params || {}
  const genDesc = args.input
    ? `file list ${args.input.startsWith(ROOT) ? path.relative(ROOT, args.input) : args.input}`
    : `fixtures/gen-partition.js ${JSON.stringify(Object.fromEntries(Object.entries(g).filter(([k]) => k !== 'dir')))}`
  const notes = []
  for (const tool of tools) {
    const s = stats[tool]
    if (s.summary && s.summary.settings) notes.push(`- ${tool}: DuckDB ${s.summary.duckdbVersion}, settings ${JSON.stringify(s.summary.settings)}; \`${s.summary.sql}\``)
    if (s.errors.length) notes.push(`- ${tool}: ${s.errors.length} failed run(s); last error: \`${s.errors[s.errors.length - 1].slice(0, 300)}\``)
    if (tool === 'old-loop' && s.summary) notes.push(`- old-loop: ${s.summary.rowsRead} rows read, ${s.summary.duplicatesDropped} duplicates dropped, ~${s.summary.avgRowsPerFile} rows per flush/file (10,000 rows or 32 MiB estimated, one file per flush, hyparquet-writer SNAPPY)`)
    if (tool === 'gencompact' && s.summary) notes.push(`- gencompact: options ${JSON.stringify(s.summary.options)}; ${s.summary.rowsRead} rows read, ${s.summary.duplicatesDropped ?? 0} duplicates dropped; row groups per file ${JSON.stringify(s.summary.rowGroups)}`)
  }

  return [
    `## Compaction benchmark — ${args.section}`,
    '',
    `- Date: ${started.toISOString()}`,
    `- Machine: nproc ${machine.nproc}, ${machine.cpu}; ${machine.mem}; ${machine.kernel}; node ${machine.node}; DuckDB ${duckdbVersion}`,
    `- Input: ${input.files.length} files, ${(input.rowCount ?? input.rows ?? 0).toLocaleString('en-US')} rows` +
      (input.distinctIds != null ? ` (${input.distinctIds.toLocaleString('en-US')} distinct \`${DEDUPE_COLUMN}\`)` : '') +
      `, ${fmtBytes(input.bytes)} on disk (avg ${fmtBytes(input.bytes / input.files.length)}/file), ` +
      `${fmtBytes(input.parquetUncompressedBytes)} Parquet-uncompressed, ${input.inputRowGroups} row groups; ${genDesc}`,
    `- Command: \`${command}\``,
    `- Method: each tool is a separate child process under \`/usr/bin/time -v\`, ${args.runs} run(s) each, round robin, fresh output dir per run ` +
      `(deleted after measuring), warm page cache. Wall = spawn to exit as seen by the driver (includes node start-up); ` +
      `peak RSS = "Maximum resident set size" from time -v. Sizes from the last run (KiB/MiB = 1024-based). Rows checked once with DuckDB \`count(*)\`; ` +
      `old-loop dedupes by \`${DEDUPE_COLUMN}\`${args.dedupe ? ', gencompact too (--dedupe)' : ', gencompact and DuckDB do not (defaults)'}.`,
    '',
    table,
    '',
    ...(notes.length ? ['Notes:', ...notes, ''] : []),
  ].join('\n')
}

function writeSection(section, body) {
  const begin = `<!-- bench:${section} begin -->`
  const end = `<!-- bench:${section} end -->`
  const block = `${begin}\n${body.trim()}\n${end}`
  let text = fs.existsSync(RESULTS) ? fs.readFileSync(RESULTS, 'utf8') : '# Benchmark results\n\nSections are rewritten by `node bench/run.js`; text outside the markers is kept.\n'
  const i = text.indexOf(begin)
  const j = text.indexOf(end)
  if (i >= 0 && j > i) text = text.slice(0, i) + block + text.slice(j + end.length)
  else text = text.replace(/\s*$/, '\n\n') + block + '\n'
  fs.writeFileSync(RESULTS, text)
}

// ---------------------------------------------------------------- main

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const started = new Date()
  const invoked = `node bench/run.js${process.argv.slice(2).map(a => ' ' + a).join('')}`
  const command = process.env.npm_lifecycle_event === 'bench'
    ? `npm run bench${process.argv.length > 2 ? ' --' + process.argv.slice(2).map(a => ' ' + a).join('') : ''}` : invoked

  if (!fs.existsSync(TIME)) throw new Error(`${TIME} not found (apt-get install time)`)
  if (args.only.includes('gencompact') && !fs.existsSync(path.join(ROOT, 'index.js'))) {
    console.error('warning: index.js not found — the gencompact runs will fail (build the addon first: npm run build)')
  }

  const { DuckDBInstance } = require('@duckdb/node-api')
  const db = await DuckDBInstance.create(':memory:')
  const duck = await db.connect()
  await duck.run('SET threads=2')
  const duckdbVersion = (await duck.runAndReadAll('SELECT version() AS v')).getRowObjectsJS()[0].v

  const input = await ensureInput(args, duck)
  fs.mkdirSync(OUT, { recursive: true })
  const listFile = path.join(OUT, 'input-files.json')
  fs.writeFileSync(listFile, JSON.stringify(input.files))
  console.error(`input: ${input.files.length} files, ${input.rowCount} rows, ${fmtBytes(input.bytes)}; tools ${args.only.join(', ')}; ${args.runs} run(s)`)

  const results = []
  const verify = {}
  for (let run = 1; run <= args.runs; run++) {
    for (const tool of args.only) {
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
        process.stderr.write(`FAILED (exit ${r.code}${r.signal ? ', ' + r.signal : ''}${r.exitStatus != null ? ', time: status ' + r.exitStatus : ''})\n${r.error}\n`)
      }
      if (!args.keep) fs.rmSync(r.outDir, { recursive: true, force: true })
    }
  }
  duck.closeSync()
  db.closeSync()

  const report = buildReport({ args, input, results, verify, machine: machineSummary(), duckdbVersion, command, started })
  console.log('\n' + report)
  if (args.write) {
    writeSection(args.section, report)
    console.error(`wrote section "${args.section}" of ${path.relative(process.cwd(), RESULTS)}`)
  }
  fs.writeFileSync(path.join(OUT, `last-${args.section}.json`), JSON.stringify({ args, input: { ...input, files: input.files.length }, results }, null, 1))
}

main().catch(err => { console.error(err && err.stack || err); process.exit(1) })
