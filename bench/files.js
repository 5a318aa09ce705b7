'use strict'
// Shared by the bench scripts: the input files, given as paths or as one JSON file holding an
// array (or `{ files }`), the Parquet files a tool wrote, and the marked sections of the reports;
// for the drivers (bench/run.js, bench/deletes.js) also the generated, cached input partition
// (ensureInput), its mixed-codec pyarrow re-write (ensureMixedCodec, bench/mixed-codec.py), the
// unique-fat-value shapes (ensureUnique: fixtures/gen-unique.py, bench/unique-rewrite.js) and one
// measured child run under `/usr/bin/time -v` (runTimed).
const fs = require('fs')
const path = require('path')
const { spawn, spawnSync } = require('child_process')

const ROOT = path.resolve(__dirname, '..')
const DATA = path.join(__dirname, 'data')
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
function sqlList(files) { return '[' + files.map(f => `'${f.replace(/'/g, "''")}'`).join(', ') + ']' }

function readFileList(args) {
  if (args.length === 1 && args[0].endsWith('.json')) {
    const j = JSON.parse(fs.readFileSync(args[0], 'utf8'))
    return Array.isArray(j) ? j : j.files
  }
  return args
}

/** Every .parquet file under `dir` (recursively), sorted. */
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

/**
 * Writes `body` into `file` between <!-- bench:<section> begin --> and <!-- bench:<section> end -->
 * (appended when absent; the rest of the file is kept). `title` heads a file that does not exist.
 */
function writeSection(file, section, body, title) {
  const begin = `<!-- bench:${section} begin -->`
  const end = `<!-- bench:${section} end -->`
  const block = `${begin}\n${body.trim()}\n${end}`
  let text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : `${title}\n`
  const i = text.indexOf(begin)
  const j = text.indexOf(end)
  if (i >= 0 && j > i) text = text.slice(0, i) + block + text.slice(j + end.length)
  else text = text.replace(/\s*$/, '\n\n') + block + '\n'
  fs.writeFileSync(file, text)
}

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
    const same = !fs.existsSync(GENERATOR) || m.generatorSha === generatorSha()
    if (same && m.files.every(f => fs.existsSync(f))) return { ...m, manifestPath, generated: false }
    if (!same) console.error('fixtures/gen-partition.js changed since the cached input was generated: regenerating')
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
    generatorSha: generatorSha(),
    generatorHeader: generatorHeader(),
  }
  Object.assign(m, await describeInput(duck, files))
  fs.writeFileSync(manifestPath, JSON.stringify(m, null, 1))
  console.error(`generated ${files.length} files, ${m.rowCount} rows, ${fmtBytes(m.bytes)} in ${fmtSec(m.generatedMs)}`)
  return { ...m, manifestPath, generated: true }
}

// ---------------------------------------------------------------- the mixed-codec shape

const MIXED_CODEC = path.join(__dirname, 'mixed-codec.py')
const MIXED_CODECS = ['snappy', 'zstd', 'gzip']

function fileSha(file) {
  return require('crypto').createHash('sha1').update(fs.readFileSync(file)).digest('hex').slice(0, 12)
}

/**
 * The same rows as `input` (a generated partition from ensureInput), re-written by pyarrow
 * (bench/mixed-codec.py) with the files spread round robin over SNAPPY, ZSTD and GZIP: a second
 * writer's pages, dictionaries and codecs on the seed's row shape. Cached beside the source as
 * bench/data/<source>-mixed-codec/ and rewritten when the source or the script changes.
 */
async function ensureMixedCodec(input, duck, shape = 'mixed-codec') {
  const srcDir = path.dirname(input.manifestPath)
  const dir = `${srcDir}-${shape}`
  const manifestPath = path.join(dir, 'manifest.json')
  // 'evolved': the newest 10 % of the files gain a column (two schemas to unify)
  const addColumnNewest = shape === 'evolved' ? 0.1 : 0
  const source = { manifest: fileSha(input.manifestPath), script: fileSha(MIXED_CODEC), codecs: MIXED_CODECS, addColumnNewest }
  if (fs.existsSync(manifestPath)) {
    const m = JSON.parse(fs.readFileSync(manifestPath, 'utf8'))
    if (JSON.stringify(m.source) === JSON.stringify(source) && m.files.every(f => fs.existsSync(f))) {
      return { ...m, manifestPath, generated: false }
    }
    console.error('the source partition or bench/mixed-codec.py changed: rewriting the mixed-codec shape')
  }
  if (spawnSync('python3', ['-c', 'import pyarrow'], { stdio: 'ignore' }).status !== 0) {
    throw new Error('--shape mixed-codec needs python3 with pyarrow (python3 -m pip install pyarrow)')
  }
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  console.error(`writing the mixed-codec shape (pyarrow; ${MIXED_CODECS.join(', ')}) in ${path.relative(ROOT, dir)} ...`)
  const t0 = Date.now()
  const specFile = path.join(dir, '.spec.json')
  fs.writeFileSync(specFile, JSON.stringify({ out: dir, files: input.files, codecs: MIXED_CODECS, addColumnNewest }))
  const r = spawnSync('python3', [MIXED_CODEC, specFile], { encoding: 'utf8', maxBuffer: 64 * MiB })
  if (r.status !== 0) throw new Error(`bench/mixed-codec.py failed (exit ${r.status}): ${r.stderr}`)
  const res = JSON.parse(r.stdout.trim().split('\n').pop())
  const m = {
    params: { ...input.params, dir: path.relative(ROOT, dir), writer: `pyarrow ${res.pyarrow}`, codecs: res.codecs, variantKept: res.variantKept, evolvedFiles: res.evolvedFiles, from: path.relative(ROOT, srcDir) },
    files: res.files,
    rows: res.rows,
    bytes: res.bytes,
    generatedMs: Date.now() - t0,
    generatedAt: new Date().toISOString(),
    source,
  }
  Object.assign(m, await describeInput(duck, res.files))
  fs.writeFileSync(manifestPath, JSON.stringify(m, null, 1))
  console.error(`wrote ${m.files.length} files (${JSON.stringify(res.codecs)}), ${m.rowCount} rows, ${fmtBytes(m.bytes)} in ${fmtSec(m.generatedMs)}` +
    (res.variantKept ? '' : '; VARIANT columns are plain groups of two binaries (pyarrow drops the annotation)'))
  return { ...m, manifestPath, generated: true }
}

// ---------------------------------------------------------------- the unique-fat-value shapes

const UNIQUE_GENERATOR = path.join(ROOT, 'fixtures', 'gen-unique.py')
const UNIQUE_REWRITE = path.join(__dirname, 'unique-rewrite.js')
// fixtures/gen-unique.py's defaults: ~52 KB decoded per row, ~47 KB of it the row's own request frame
const UNIQUE_SHAPE = { rows: 52329, files: 230, tuples: 30, seed: 1, fatBytes: 47000 }
const UNIQUE_SHAPES = ['unique', 'unique-duckdb', 'unique-hyparquet', 'unique-evolved', 'unique-lz4', 'unique-varied']
// fixtures/gen-unique.py's options for the pyarrow-written unique shapes beside its defaults
const UNIQUE_OPTIONS = { 'unique-lz4': ['--codecs', 'lz4,brotli'], 'unique-varied': ['--novelty', '0.5'] }

function pythonWithPyarrow(shape) {
  if (spawnSync('python3', ['-c', 'import pyarrow'], { stdio: 'ignore' }).status !== 0) {
    throw new Error(`--shape ${shape} needs python3 with pyarrow (python3 -m pip install pyarrow)`)
  }
}

/** Facts about the written files (fixtures/gen-unique.py --check): rows, bytes, the fat column's pages. */
function checkShape(dir) {
  const r = spawnSync('python3', [UNIQUE_GENERATOR, '--check', dir], { encoding: 'utf8', maxBuffer: 64 * MiB })
  if (r.status !== 0) return { error: (r.stderr || '').trim().split('\n').pop() }
  return JSON.parse(r.stdout)
}

/**
 * The unique shapes: every row carries its own ~47 KB request frame (the conversation so far).
 * `unique`: fixtures/gen-unique.py, pyarrow, files round robin over SNAPPY, ZSTD, GZIP;
 * `unique-evolved`: the same with the newest 10 % of the files gaining a nullable `region` column;
 * `unique-lz4`: the same rows, files round robin over LZ4 (pyarrow's `lz4`: LZ4_RAW) and BROTLI;
 * `unique-varied`: rows of less repetitive text (half the lines of a message fresh, not 3 %);
 * `unique-duckdb` / `unique-hyparquet`: the `unique` files re-written file by file by DuckDB /
 * hyparquet-writer with their default settings (bench/unique-rewrite.js). `gen` holds rows, files,
 * tuples, seed, fatBytes (rows and files already scaled). Cached under bench/data/unique-<params>[-<writer>]/
 * and rewritten when the generator (or the re-writer, or the source files) change.
 */
async function ensureUnique(gen, duck, shape) {
  if (!UNIQUE_SHAPES.includes(shape)) throw new Error(`not a unique shape: ${shape}`)
  const key = `unique-r${gen.rows}-f${gen.files}-t${gen.tuples}-s${gen.seed}-fat${gen.fatBytes}`
  const writer = ['unique', 'unique-evolved', 'unique-lz4', 'unique-varied'].includes(shape) ? 'pyarrow' : shape.slice('unique-'.length)
  const dir = path.join(DATA, key + (shape === 'unique' ? '' : shape.slice('unique'.length)))
  const manifestPath = path.join(dir, 'manifest.json')
  let source
  let base = null
  if (writer === 'pyarrow') {
    source = { generator: fileSha(UNIQUE_GENERATOR), gen, addColumnNewest: shape === 'unique-evolved' ? 0.1 : 0 }
    if (UNIQUE_OPTIONS[shape]) source.options = UNIQUE_OPTIONS[shape]
  } else {
    base = await ensureUnique(gen, duck, 'unique')
    source = { from: fileSha(base.manifestPath), rewrite: fileSha(UNIQUE_REWRITE), writer }
  }
  if (fs.existsSync(manifestPath)) {
    const m = JSON.parse(fs.readFileSync(manifestPath, 'utf8'))
    if (JSON.stringify(m.source) === JSON.stringify(source) && m.files.every(f => fs.existsSync(f))) {
      return { ...m, manifestPath, generated: false }
    }
    console.error(`the generator, the re-writer or the source files changed: rewriting the ${shape} shape`)
  }
  pythonWithPyarrow(shape)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const t0 = Date.now()
  let res
  if (writer === 'pyarrow') {
    console.error(`generating the ${shape} shape (fixtures/gen-unique.py, pyarrow) in ${path.relative(ROOT, dir)} ${JSON.stringify(gen)} ...`)
    const argv = [UNIQUE_GENERATOR, '--dir', dir, '--rows', gen.rows, '--files', gen.files, '--tuples', gen.tuples,
      '--seed', gen.seed, '--fat-bytes', gen.fatBytes, '--add-column-newest', source.addColumnNewest, '--progress',
      ...(source.options || [])].map(String)
    const r = spawnSync('python3', argv, { encoding: 'utf8', maxBuffer: 256 * MiB, stdio: ['ignore', 'pipe', 'inherit'] })
    if (r.status !== 0) throw new Error(`fixtures/gen-unique.py failed (exit ${r.status})`)
    res = JSON.parse(r.stdout.trim().split('\n').pop())
    res.writer = `pyarrow ${res.pyarrow}`
  } else {
    console.error(`writing the ${shape} shape (${writer}, default settings) from ${path.relative(ROOT, path.dirname(base.manifestPath))} in ${path.relative(ROOT, dir)} ...`)
    const specFile = path.join(dir, '.spec.json')
    fs.writeFileSync(specFile, JSON.stringify({ writer, out: dir, files: base.files }))
    const r = spawnSync(process.execPath, ['--max-old-space-size=8192', UNIQUE_REWRITE, specFile],
      { cwd: ROOT, encoding: 'utf8', maxBuffer: 256 * MiB, stdio: ['ignore', 'pipe', 'inherit'] })
    if (r.status !== 0) throw new Error(`bench/unique-rewrite.js failed (exit ${r.status})`)
    res = JSON.parse(r.stdout.trim().split('\n').pop())
    res.writer = res.version
    res.decodedBytes = base.decodedBytes
    res.codecs = { snappy: res.files.length }
    res.from = path.relative(ROOT, path.dirname(base.manifestPath))
  }
  const m = {
    params: { ...gen, dir: path.relative(ROOT, dir), writer: res.writer, codecs: res.codecs, evolvedFiles: res.evolvedFiles || 0, ...(res.from ? { from: res.from } : {}) },
    files: res.files,
    rows: res.rows,
    bytes: res.bytes,
    decodedBytes: res.decodedBytes,
    generatedMs: Date.now() - t0,
    generatedAt: new Date().toISOString(),
    source,
  }
  Object.assign(m, await describeInput(duck, res.files))
  if (m.rows == null) m.rows = m.rowCount
  m.facts = checkShape(dir)
  fs.writeFileSync(manifestPath, JSON.stringify(m, null, 1))
  console.error(`wrote ${m.files.length} files (${m.params.writer}), ${m.rowCount} rows, ${fmtBytes(m.bytes)} on disk, ` +
    `${fmtBytes(m.decodedBytes)} decoded, in ${fmtSec(m.generatedMs)}`)
  return { ...m, manifestPath, generated: true }
}

function generatorSha() {
  return require('crypto').createHash('sha1').update(fs.readFileSync(GENERATOR)).digest('hex').slice(0, 12)
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

// ---------------------------------------------------------------- one measured run

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
  const minor = get(/Minor \(reclaiming a frame\) page faults: (\d+)/)
  const major = get(/Major \(requiring I\/O\) page faults: (\d+)/)
  return {
    timeWallMs: wallMs,
    maxRssBytes: kb ? Number(kb) * 1024 : null,
    cpuMs: user && sys ? Math.round((Number(user) + Number(sys)) * 1000) : null,
    userMs: user ? Math.round(Number(user) * 1000) : null,
    sysMs: sys ? Math.round(Number(sys) * 1000) : null,
    minorFaults: minor != null ? Number(minor) : null,
    majorFaults: major != null ? Number(major) : null,
    exitStatus: exit != null ? Number(exit) : null,
    signal: sig != null ? Number(sig) : null,
  }
}

/**
 * Runs `cmd` ([program, ...args]) under `/usr/bin/time -v` in its own process group, with a
 * watchdog (kills the tree past `maxRssGiB` or `timeoutMin`); `outDir` is emptied first and its
 * Parquet files listed after. Resolves { ok, code, signal, outDir, wallMs, timeWallMs, maxRssBytes,
 * cpuMs, userMs, sysMs, minorFaults, majorFaults, exitStatus, signal, summary (the last JSON line on
 * stdout), files, error }.
 */
function runTimed(cmd, { outDir, timeFile, maxRssGiB, timeoutMin }) {
  killOnExit()
  fs.rmSync(outDir, { recursive: true, force: true })
  return new Promise(resolve => {
    const t0 = process.hrtime.bigint()
    // own process group, so the watchdog can kill time + node + anything they started
    const p = spawn(TIME, ['-v', '-o', timeFile, ...cmd], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    current = p
    let stdout = ''
    let stderr = ''
    let killed = null
    let treePeak = 0
    p.stdout.on('data', d => { stdout += d })
    p.stderr.on('data', d => { stderr += d })
    // Watchdog: a runaway tool must not take the (shared) machine down with it.
    const maxRss = maxRssGiB * 1024 ** 3
    const kill = why => {
      if (killed) return
      killed = why
      try { process.kill(-p.pid, 'SIGKILL') } catch { /* gone */ }
    }
    const poll = setInterval(() => {
      const rss = treeRss(p.pid)
      if (rss > treePeak) treePeak = rss
      if (rss > maxRss) kill(`watchdog: RSS ${fmtBytes(rss)} > --max-rss ${maxRssGiB} GiB`)
    }, 250)
    const timer = setTimeout(() => kill(`watchdog: timeout after ${timeoutMin} min`), timeoutMin * 60e3)
    p.on('exit', (code, signal) => {
      clearInterval(poll)
      clearTimeout(timer)
      current = null
      const wallMs = Number(process.hrtime.bigint() - t0) / 1e6
      const tv = fs.existsSync(timeFile) ? parseTimeV(fs.readFileSync(timeFile, 'utf8')) : {}
      fs.rmSync(timeFile, { force: true })
      let summary = null
      const line = stdout.trim().split('\n').filter(l => l.startsWith('{')).pop()
      if (line) { try { summary = JSON.parse(line) } catch { /* not JSON */ } }
      const files = listParquet(outDir).map(f => ({ path: f, size: fs.statSync(f).size }))
      const ok = code === 0 && !signal && !killed
      if (killed) tv.maxRssBytes = treePeak
      resolve({
        ok, code, signal, outDir, wallMs, ...tv, summary, files,
        error: ok ? null : killed ? `${killed} (after ${fmtSec(wallMs)})` : errorLine(stderr, code, signal, tv),
      })
    })
  })
}

// The running child; the driver kills its process group when it exits (handlers installed by the
// first runTimed, so the tool scripts that require this module keep the default signal handling).
let current = null
let handlers = false
function killOnExit() {
  if (handlers) return
  handlers = true
  process.on('exit', () => { if (current) try { process.kill(-current.pid, 'SIGKILL') } catch { /* gone */ } })
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))
}

// Resident bytes of a process and all its descendants (Linux /proc).
function treeRss(pid) {
  let total = 0
  const stack = [pid]
  while (stack.length) {
    const p = stack.pop()
    try {
      const m = fs.readFileSync(`/proc/${p}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/)
      if (m) total += Number(m[1]) * 1024
      for (const t of fs.readdirSync(`/proc/${p}/task`)) {
        const kids = fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').trim()
        if (kids) stack.push(...kids.split(/\s+/).map(Number))
      }
    } catch { /* exited meanwhile */ }
  }
  return total
}

// The most telling line of a failed child's stderr (the error message, not the stack).
function errorLine(stderr, code, signal, tv) {
  const lines = stderr.split('\n').map(l => l.trim()).filter(Boolean)
  const msg = lines.find(l => /error|ERR_|abort|out of memory|heap/i.test(l) && !l.startsWith('at ')) || lines[0]
  const how = tv && tv.signal != null ? `killed by signal ${tv.signal}` : `exit ${code}${signal ? ' ' + signal : ''}`
  return msg ? `${how}: ${msg}` : how
}

module.exports = {
  readFileList, listParquet, writeSection,
  ROOT, DATA, GENERATOR, TIME, DEDUPE_COLUMN, SEED_SHAPE,
  MiB, fmtBytes, fmtSec, median, sqlList,
  dataKey, ensureInput, ensureMixedCodec, describeInput, parseTimeV, runTimed,
  ensureUnique, UNIQUE_SHAPE, UNIQUE_SHAPES,
}
