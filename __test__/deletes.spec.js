'use strict'
// Iceberg deletes (README "deletes"; index.d.ts InputFile / DeleteSource), proven against
// references that are not gencompact. helpers/deletes.py builds a format-v2 table with pyiceberg
// (five data files of several row groups, duplicate and null row ids; their table locations are
// file:// URLs, their local paths plain paths) and writes, per the Iceberg spec, position-delete
// Parquet files, Puffin deletion-vector-v1 blobs and equality-delete Parquet files.
//
// Expected rows: DuckDB applies the spec's rules (anti-join on file_path = location and
// pos = file_row_number; DV positions as pyiceberg's Puffin reader decodes the blob; null-safe
// equality on the columns carrying the listed field ids; first occurrence of each non-null row id),
// and wherever pyiceberg's own scan can apply the deletes (position deletes; Puffin files, which its
// scan applies by referenced-data-file) its result must agree with DuckDB's first. Output rows are
// read back by pyarrow and compared as a row multiset of every column. The outputs' `dataFile`
// records are then committed to a new pyiceberg table, whose manifest entries and scan are checked.

const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { compactGeneration } = require('..')
const { makeTmpDir, removeDir, hashFiles, existingOutDir, expectForeignFileKept } = require('./helpers/fsutil')
const { expectCompactError, multisetDiff } = require('./helpers/assertions')

const PY = path.join(__dirname, 'helpers', 'deletes.py')

function py(op, req) {
  const out = execFileSync('python3', [PY], { input: JSON.stringify({ op, ...req }), encoding: 'utf8', maxBuffer: 256 << 20 })
  return JSON.parse(out)
}

/** JSON for helpers/deletes.py: BigInt -> {$big}, Buffer -> {$buf: hex}. */
function tagged(v) {
  return JSON.parse(JSON.stringify(v, function replacer(k, x) {
    const raw = this[k]
    if (typeof raw === 'bigint') return { $big: raw.toString() }
    if (Buffer.isBuffer(raw)) return { $buf: raw.toString('hex') }
    return x
  }))
}

let tmp
let crafted
let build // helpers/deletes.py build
let data // [{ path, location, rows, rowGroups }]
let ds // delete files
let scenarios
let expected // helpers/deletes.py expect, per scenario
let inputHashes
let n = 0

const pos = name => ({ kind: 'position', path: ds[name].path })
const eq = name => ({ kind: 'equality', path: ds[name].path, fieldIds: ds[name].fieldIds })
const dv = (name, i) => ds[name].blobs.filter(b => b.data === i)
  .map(b => ({ kind: 'deletion-vector', path: ds[name].path, offset: b.offset, length: b.length }))
/** One InputFile per data file; with its table location (a file:// URL) or the default (its path). */
const inputs = (byLocation, deletesOf) => data.map((f, i) => ({ path: f.path, ...(byLocation ? { location: f.location } : {}), deletes: deletesOf(i) }))

const MIXED = i => [
  [pos('P1'), pos('P2'), ...dv('PF', 0), eq('E1'), eq('E2')],
  [pos('P1'), pos('P2'), eq('E1')],
  [...dv('PF', 2), pos('P1'), eq('E2')],
  [pos('P2'), eq('E2')],
  [...dv('PF', 4)],
][i]

/** name -> { inputs, opts, oracle (the pyiceberg scan that must agree), sources (each must delete rows) } */
function defineScenarios() {
  return {
    'position deletes, location a file:// URL': {
      inputs: inputs(true, () => [pos('P1'), pos('P2')]), oracle: 'positionUrl', sources: ['P1', 'P2'] },
    'position deletes, default location (the path)': {
      inputs: inputs(false, () => [pos('P1'), pos('P2')]), oracle: 'positionPlain', sources: ['P1', 'P2'] },
    'deletion vectors (files without deletes given as strings)': {
      inputs: data.map((f, i) => (dv('PF', i).length ? { path: f.path, location: f.location, deletes: dv('PF', i) } : f.path)),
      oracle: 'dvUrl', sources: ['PF'] },
    'deletion vectors, default location (the path)': {
      inputs: inputs(false, i => dv('PF_PLAIN', i)), oracle: 'dvPlain', sources: ['PF_PLAIN'] },
    'equality deletes (E1 on the first three files only; E2 with a null key and an unlisted column)': {
      inputs: inputs(true, i => (i < 3 ? [eq('E1'), eq('E2')] : [eq('E2')])), sources: ['E1', 'E2'] },
    'equality deletes matched by field id (the delete file names the column differently)': {
      inputs: inputs(true, () => [eq('E3')]), sources: ['E3'] },
    'equality deletes with an int column for a long (widening)': {
      inputs: inputs(true, () => [eq('E4')]), sources: ['E4'] },
    'mixed: DV + position + equality on overlapping rows': {
      inputs: inputs(true, MIXED), sources: ['P1', 'P2', 'PF', 'E1', 'E2'], overlapping: true },
    'mixed, with dedupeBy + partitionBy + sortBy + outLocation + small batches': {
      inputs: inputs(true, MIXED), sources: ['P1', 'P2', 'PF', 'E1', 'E2'], overlapping: true,
      opts: {
        dedupeBy: '_hyp_cache_row_id', partitionBy: [{ column: 'date' }], sortBy: [{ column: 'ts' }, { column: '_hyp_cache_row_id' }],
        sortOrderId: 1, batchRows: 64, outLocation: 'OUTDIR_URL',
      } },
  }
}

function allInputFiles() {
  const dels = Object.values(ds).map(d => d.path)
  return [...data.map(f => f.path), ...dels]
}

beforeAll(() => {
  tmp = makeTmpDir('deletes')
  crafted = path.join(tmp, 'crafted')
  fs.mkdirSync(crafted)
  build = py('build', { dir: path.join(tmp, 'table'), seed: 20261203 })
  data = build.dataFiles
  ds = build.deletes
  scenarios = defineScenarios()
  expected = py('expect', {
    scenarios: Object.fromEntries(Object.entries(scenarios).map(([k, s]) => [k, { inputs: s.inputs, dedupeBy: s.opts && s.opts.dedupeBy }])),
  })
  inputHashes = hashFiles(allInputFiles())
})

afterAll(() => removeDir(tmp))

describe('the fixture and its references', () => {
  test('data files: several row groups each, table locations differ from the local paths', () => {
    expect(data).toHaveLength(5)
    for (const f of data) {
      expect(f.rowGroups).toBeGreaterThan(1)
      expect(f.location).toBe(`file://${f.path}`)
    }
  })

  test('DuckDB\'s expected rows equal pyiceberg\'s own scans wherever pyiceberg applies the deletes', () => {
    for (const [name, s] of Object.entries(scenarios).filter(([, sc]) => sc.oracle)) {
      const ice = build.pyiceberg[s.oracle]
      const e = expected[name]
      expect([name, ice.manifests]).toEqual([name, [0, 1]]) // a data manifest and a delete manifest
      expect([name, ice.rows, ice.digest]).toEqual([name, e.rows, e.digest])
      expect(e.rows).toBe(e.rowsRead - e.rowsDeleted)
    }
  })

  test('every delete source removes rows, a row deleted twice counts once, and dedupe has work', () => {
    for (const [name, s] of Object.entries(scenarios)) {
      const e = expected[name]
      expect([name, e.rowsRead]).toEqual([name, data.reduce((a, f) => a + f.rows, 0)])
      expect([name, e.rowsDeleted > 0]).toEqual([name, true])
      for (const src of s.sources) expect([name, src, e.perSource[ds[src].path] > 0]).toEqual([name, src, true])
      const sum = Object.values(e.perSource).reduce((a, b) => a + b, 0)
      if (s.overlapping) expect([name, sum > e.rowsDeleted]).toEqual([name, true])
      expect([name, e.duplicatesDropped > 0]).toEqual([name, Boolean(s.opts && s.opts.dedupeBy)])
    }
    // the default-location scenarios apply other rows of the same files than the URL ones
    expect(expected['position deletes, default location (the path)'].digest)
      .not.toBe(expected['position deletes, location a file:// URL'].digest)
  })
})

describe.each([
  'position deletes, location a file:// URL',
  'position deletes, default location (the path)',
  'deletion vectors (files without deletes given as strings)',
  'deletion vectors, default location (the path)',
  'equality deletes (E1 on the first three files only; E2 with a null key and an unlisted column)',
  'equality deletes matched by field id (the delete file names the column differently)',
  'equality deletes with an int column for a long (widening)',
  'mixed: DV + position + equality on overlapping rows',
  'mixed, with dedupeBy + partitionBy + sortBy + outLocation + small batches',
])('%s', name => {
  let s
  let e
  let result
  let outDir
  let check
  let opts

  beforeAll(async () => {
    s = scenarios[name]
    e = expected[name]
    outDir = path.join(tmp, `out-${++n}`)
    opts = { outDir, ...(s.opts || {}) }
    if (opts.outLocation) opts.outLocation = `file://${outDir}/`
    result = await compactGeneration(s.inputs, opts)
    check = py('check', {
      warehouse: path.join(tmp, `committed-${n}`),
      inputPath: data[0].path,
      outputs: result.files.map(f => ({ path: f.path, dataFile: tagged(f.dataFile) })),
      partitionBy: (opts.partitionBy || []).map(p => ({ column: p.column, name: p.name || p.column })),
      sortBy: opts.sortBy || [],
    })
  })

  test('counts: rowsRead, rowsDeleted (each row once), duplicatesDropped, rowsWritten as the spec rules give them', () => {
    const { rowsRead, rowsDeleted, duplicatesDropped, rowsWritten, inputFiles } = result
    expect({ inputFiles, rowsRead, rowsDeleted, duplicatesDropped, rowsWritten }).toEqual({
      inputFiles: data.length, rowsRead: e.rowsRead, rowsDeleted: e.rowsDeleted, duplicatesDropped: e.duplicatesDropped, rowsWritten: e.rows,
    })
    expect(rowsRead).toBe(rowsDeleted + duplicatesDropped + rowsWritten)
    expect(result.diverted).toBeUndefined()
    expect(result.files.reduce((a, f) => a + f.recordCount, 0)).toBe(rowsWritten)
  })

  test('rows: exactly the expected row multiset, every column, as pyarrow reads the outputs', () => {
    const got = check.outputs
    expect(multisetDiff(e.lines, got.lines)).toEqual({ missing: 0, extra: 0, missingSample: [], extraSample: [] })
    expect({ rows: got.rows, digest: got.digest }).toEqual({ rows: e.rows, digest: e.digest })
  })

  test('output files: the inputs\' schema and field ids, record counts, tuples and order', () => {
    expect(result.files.length).toBeGreaterThan(0)
    for (const [i, f] of result.files.entries()) {
      const pf = check.perFile[i]
      expect(pf.path).toBe(f.path)
      expect({ sameSchema: pf.sameSchema, rows: pf.rows, rowGroups: pf.rowGroups })
        .toEqual({ sameSchema: true, rows: f.recordCount, rowGroups: f.rowGroups })
      expect(pf.fieldIds).toEqual({ _hyp_cache_row_id: 1, session_id: 2, date: 3, ts: 4, n: 5, attrs: 6 })
      if (opts.partitionBy) {
        expect(pf.tuples).toHaveLength(1)
        expect(JSON.parse(pf.tuples[0])).toEqual([f.dataFile.partition.date])
        expect(f.partition).toEqual(f.dataFile.partition)
      }
      if (opts.sortBy) {
        expect(pf.sorted).toBe(true)
        expect([f.sortOrderId, f.dataFile.sort_order_id]).toEqual([opts.sortOrderId, opts.sortOrderId])
      }
    }
    if (opts.partitionBy) {
      // one file per date tuple (the null date included): the data holds four
      expect(new Set(check.perFile.map(p => p.tuples[0])).size).toBe(result.files.length)
    }
  })

  test('a new pyiceberg table of the returned dataFile records: its entries carry our metrics and its scan equals the outputs', () => {
    const t = check.table
    expect(t.scan.digest).toBe(check.outputs.digest)
    expect(t.scan.rows).toBe(result.rowsWritten)
    expect(t.summary).toMatchObject({ 'added-records': String(result.rowsWritten), 'added-data-files': String(result.files.length) })
    const num = m => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Number(v)]))
    const hex = m => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, v.toString('hex')]))
    const byPath = new Map(t.entries.map(x => [x.file_path, x]))
    expect(t.entries).toHaveLength(result.files.length)
    for (const f of result.files) {
      const d = f.dataFile
      expect(typeof d.record_count).toBe('bigint')
      expect(typeof d.file_size_in_bytes).toBe('bigint')
      expect(d.file_path).toBe(opts.outLocation ? `${opts.outLocation}${path.basename(f.path)}` : f.path)
      const x = byPath.get(d.file_path)
      expect(x).toBeDefined()
      const { lowerDecoded, upperDecoded, ...entry } = x
      expect(entry).toEqual({
        file_path: d.file_path, content: 0, file_format: 'PARQUET',
        partition: Object.fromEntries(Object.entries(d.partition).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])),
        record_count: f.recordCount, file_size_in_bytes: fs.statSync(f.path).size,
        column_sizes: num(d.column_sizes), value_counts: num(d.value_counts), null_value_counts: num(d.null_value_counts),
        nan_value_counts: num(d.nan_value_counts),
        lower_bounds: hex(d.lower_bounds), upper_bounds: hex(d.upper_bounds),
        split_offsets: d.split_offsets.map(Number), sort_order_id: d.sort_order_id, deletes: 0,
      })
      expect(Number(d.record_count)).toBe(f.recordCount)
      expect(Number(d.file_size_in_bytes)).toBe(f.fileSizeInBytes)
      // bounds are those of the surviving rows (pyiceberg decodes the bytes), not the inputs'
      const real = check.perFile.find(p => p.path === f.path).minMax
      for (const fid of ['1', '2', '3', '4', '5']) {
        if (real[fid][0] === null) continue
        expect([fid, lowerDecoded[fid], upperDecoded[fid]]).toEqual([fid, real[fid][0], real[fid][1]])
      }
    }
  })
})

describe('failures: typed error naming the file, nothing left in outDir, inputs untouched', () => {
  /** The failing call's inputs: data file `first` (at its URL location) with `deletes`, then data file 3. */
  const call = (deletes, outDir, first) => () => compactGeneration([
    { path: data[first].path, location: data[first].location, deletes },
    { path: data[3].path, location: data[3].location, deletes: [pos('P2')] },
  ], { outDir })
  const copyWith = (src, name, edit) => {
    const buf = Buffer.from(fs.readFileSync(src))
    const out = path.join(crafted, name)
    fs.writeFileSync(out, edit(buf))
    return out
  }
  const blob0 = () => ds.PF.blobs.find(b => b.data === 0)
  const fail = async (deletes, code, mentions, extraInputs = [], first = 0) => {
    const outDir = existingOutDir(tmp)
    await expectCompactError(call(deletes, outDir, first), { code, mentions, outDir, inputs: [...allInputFiles(), ...extraInputs] })
    expectForeignFileKept(outDir)
  }

  test.each([
    ['position', p => ({ kind: 'position', path: p })],
    ['deletion-vector', p => ({ kind: 'deletion-vector', path: p, offset: 4, length: 40 })],
    ['equality', p => ({ kind: 'equality', path: p, fieldIds: [1] })],
  ])('a missing %s delete file -> ERR_INPUT_NOT_FOUND', async (kind, make) => {
    const missing = path.join(tmp, 'gone', `${kind}-deletes.bin`)
    await fail([pos('P2'), make(missing)], 'ERR_INPUT_NOT_FOUND', [missing])
  })

  test('a truncated position-delete Parquet file -> ERR_INPUT_CORRUPT', async () => {
    const bad = copyWith(ds.P1.path, 'P1-truncated.parquet', b => b.subarray(0, Math.floor(b.length / 2)))
    await fail([{ kind: 'position', path: bad }], 'ERR_INPUT_CORRUPT', [bad], [bad])
  })

  test('a truncated equality-delete Parquet file -> ERR_INPUT_CORRUPT', async () => {
    const bad = copyWith(ds.E2.path, 'E2-truncated.parquet', b => b.subarray(0, b.length - 9))
    await fail([{ kind: 'equality', path: bad, fieldIds: ds.E2.fieldIds }], 'ERR_INPUT_CORRUPT', [bad], [bad])
  })

  test('a deletion vector with a bad magic -> ERR_INPUT_CORRUPT', async () => {
    const b = blob0()
    const bad = copyWith(ds.PF.path, 'PF-bad-magic.puffin', buf => { buf[b.offset + 4] ^= 0xff; return buf })
    await fail([{ kind: 'deletion-vector', path: bad, offset: b.offset, length: b.length }], 'ERR_INPUT_CORRUPT', [bad], [bad])
  })

  test('a deletion vector with a bad CRC -> ERR_INPUT_CORRUPT', async () => {
    const b = blob0()
    const bad = copyWith(ds.PF.path, 'PF-bad-crc.puffin', buf => { buf[b.offset + b.length - 1] ^= 0x01; return buf })
    await fail([{ kind: 'deletion-vector', path: bad, offset: b.offset, length: b.length }], 'ERR_INPUT_CORRUPT', [bad], [bad])
  })

  test('a deletion vector whose bitmap bytes are damaged (CRC recomputed) -> ERR_INPUT_CORRUPT', async () => {
    const b = blob0()
    const bad = copyWith(ds.PF.path, 'PF-bad-bitmap.puffin', buf => {
      // the 64-bit portable bitmap starts with its 8-byte little-endian count of 32-bit bitmaps
      buf.writeUInt32LE(0x7fffffff, b.offset + 8)
      const len = buf.readUInt32BE(b.offset)
      buf.writeUInt32BE(crc32(buf.subarray(b.offset + 4, b.offset + 4 + len)), b.offset + 4 + len)
      return buf
    })
    await fail([{ kind: 'deletion-vector', path: bad, offset: b.offset, length: b.length }], 'ERR_INPUT_CORRUPT', [bad], [bad])
  })

  test('a deletion vector offset past the end of the Puffin file -> ERR_INPUT_CORRUPT', async () => {
    const b = blob0()
    await fail([{ kind: 'deletion-vector', path: ds.PF.path, offset: ds.PF.size + 100, length: b.length }], 'ERR_INPUT_CORRUPT', [ds.PF.path])
  })

  test('a deletion vector length running past the end of the Puffin file -> ERR_INPUT_CORRUPT', async () => {
    const b = blob0()
    await fail([{ kind: 'deletion-vector', path: ds.PF.path, offset: b.offset, length: ds.PF.size - b.offset + 64 }], 'ERR_INPUT_CORRUPT', [ds.PF.path])
  })

  test('a deletion vector whose referenced-data-file is another file -> ERR_INVALID_OPTIONS naming both', async () => {
    const other = ds.PF.blobs.find(b => b.data === 2)
    await fail(dv('PF', 2), 'ERR_INVALID_OPTIONS', [data[0].location, other.referencedDataFile])
  })

  test('a deletion vector referencing the plain path when the input\'s location is its URL -> ERR_INVALID_OPTIONS', async () => {
    const plain = ds.PF_PLAIN.blobs.find(b => b.data === 1)
    expect(plain.referencedDataFile).toBe(data[1].path)
    await fail(dv('PF_PLAIN', 1), 'ERR_INVALID_OPTIONS', [data[1].location, plain.referencedDataFile], [], 1)
  })
})

test('every input (data and delete files) is byte-identical after all the calls', () => {
  expect(hashFiles(allInputFiles())).toEqual(inputHashes)
})

/** CRC-32 (IEEE, as zlib), for re-framing a damaged blob. */
function crc32(buf) {
  let c = ~0
  for (const byte of buf) {
    c ^= byte
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1))
  }
  return (~c) >>> 0
}

// ---------------------------------------------------------------- issue 41: crafted deletion vectors

describe('crafted deletion vectors (tests/corpus-deletes, written by its make.py)', () => {
  const CORPUS = path.join(__dirname, '..', 'tests', 'corpus-deletes')
  const cases = JSON.parse(fs.readFileSync(path.join(CORPUS, 'cases.json'), 'utf8'))
  const data = path.join(CORPUS, cases.data)
  const byName = name => {
    const c = cases.cases.find(x => x.file === name)
    return { path: path.join(CORPUS, c.file), offset: c.offset, length: c.length }
  }
  const call = (dv, outDir) => () => compactGeneration(
    [{ path: data, location: cases.location, deletes: [{ kind: 'deletion-vector', ...dv }] }], { outDir })

  test.each([
    ['dv-dup-key0-123-then-5.puffin', 'key 0 repeats key 0', 'rejects'],
    ['dv-dup-key0-5-then-123.puffin', 'key 0 repeats key 0', 'rejects'],
    ['dv-keys-descending.puffin', 'key 0 comes after key 1', 'rejects'],
    ['dv-cardinality-mismatch.puffin', 'cardinality is 4, the vector holds 3', 'reads'],
  ])('%s -> ERR_INPUT_CORRUPT naming the Puffin file, nothing left', async (name, says, pyroaring) => {
    const dv = byName(name)
    // CRoaring (pyroaring) refuses the repeated and descending keys too; the cardinality case is
    // a valid vector whose footer disagrees with it
    expect(py('crafted', { data, puffin: dv.path, offset: dv.offset, length: dv.length }).pyroaring).toBe(pyroaring)
    const outDir = existingOutDir(tmp)
    const err = await expectCompactError(call(dv, outDir), { code: 'ERR_INPUT_CORRUPT', mentions: [dv.path, says], outDir, inputs: [data, dv.path] })
    expect(err.path).toBe(dv.path)
    expectForeignFileKept(outDir)
  })

  test.each([
    ['dv-65536-full-runs.puffin', 0],
    ['dv-65536-runs-partial.puffin', 4],
  ])('%s (65,536 run containers under key 0, 926 KB) removes exactly its rows, as pyroaring + pyarrow say', async (name, survivors) => {
    const dv = byName(name)
    expect(fs.statSync(dv.path).size).toBeGreaterThan(900_000)
    const outDir = path.join(tmp, `crafted-${name}`)
    const before = hashFiles([data, dv.path])
    const result = await call(dv, outDir)()
    const ref = py('crafted', { data, puffin: dv.path, offset: dv.offset, length: dv.length, outputs: result.files.map(f => f.path) })
    expect(ref.pyroaring).toBe('reads')
    expect(ref.expected).toHaveLength(survivors)
    expect(ref.got).toEqual(ref.expected)
    expect({ rowsRead: result.rowsRead, rowsDeleted: result.rowsDeleted, rowsWritten: result.rowsWritten })
      .toEqual({ rowsRead: 10, rowsDeleted: 10 - survivors, rowsWritten: survivors })
    // only the outputs (no .tmp, no spill) in outDir
    const left = fs.existsSync(outDir) ? fs.readdirSync(outDir).sort() : []
    expect(left).toEqual(result.files.map(f => path.basename(f.path)).sort())
    expect(hashFiles([data, dv.path])).toEqual(before)
  })
})

describe('an abort while a big delete file loads', () => {
  // The call runs in a child (the test-only notes are read from the real environment, which jest
  // sandboxes); the child aborts 300 ms after the `plan` progress event, while the deletes stage
  // is loading: a position-delete file of 30M positions (decoded in batches of 4,096 rows), or
  // 1,000 deletion vectors of 65,536 run containers each (the crafted 926 KB one, listed 1,000
  // times: before the vectors were joined as bitmaps, the first alone took minutes and the abort
  // was ignored). With GENCOMPACT_TEST_NOTES the stage says on stderr how far it got when it ended.
  const SCRIPT = `
    const { compactGeneration } = require(process.argv[1])
    const { files, opts, afterMs } = JSON.parse(process.argv[2])
    const ac = new AbortController()
    let timer
    let abortedAt
    const t0 = performance.now()
    compactGeneration(files, { ...opts, signal: ac.signal, onProgress: p => {
      if (p.phase === 'plan' && !timer) timer = setTimeout(() => { abortedAt = performance.now(); ac.abort() }, afterMs)
    } }).then(
      r => console.log(JSON.stringify({ outcome: 'resolved', rowsDeleted: r.rowsDeleted, ms: performance.now() - t0 })),
      e => console.log(JSON.stringify({ outcome: 'rejected', code: e.code, latencyMs: abortedAt === undefined ? null : performance.now() - abortedAt })))
  `
  const ROWS = 30_000_000
  const VECTORS = 1000
  const CORPUS = path.join(__dirname, '..', 'tests', 'corpus-deletes')

  /** Runs the call in the child; returns [delete-file rows, vectors] the stage had read when it stopped. */
  function abortInChild(files, opts) {
    const outDir = existingOutDir(tmp)
    const r = require('child_process').spawnSync(process.execPath,
      ['-e', SCRIPT, path.join(__dirname, '..'), JSON.stringify({ files, opts: { outDir, ...opts }, afterMs: 300 })],
      { env: { ...process.env, GENCOMPACT_TEST_NOTES: '1' }, encoding: 'utf8', timeout: 120_000 })
    const outcome = JSON.parse(r.stdout.trim().split('\n').pop())
    const notes = r.stderr.split('\n').filter(l => l.startsWith('gencompact-test: deletes'))
    console.log(`abort while loading deletes: ${JSON.stringify(outcome)}; ${notes.join('; ')}`)
    expect(outcome).toMatchObject({ outcome: 'rejected', code: 'ERR_ABORTED' })
    expectForeignFileKept(outDir)
    // the deletes stage itself ended on the abort, part-way through
    expect(notes).toHaveLength(1)
    const m = /^gencompact-test: deletes stopped \(ERR_ABORTED\) after (\d+) delete-file rows and (\d+) deletion vectors$/.exec(notes[0])
    expect(m).not.toBeNull()
    return [Number(m[1]), Number(m[2])]
  }

  test('in a position-delete file: rejects ERR_ABORTED before the file is read, nothing left', () => {
    const big = path.join(tmp, 'big-positions.parquet')
    expect(py('bigPositionDeletes', { path: big, location: data[0].location, rows: ROWS }).rows).toBe(ROWS)
    const [rows, vectors] = abortInChild([{ path: data[0].path, location: data[0].location, deletes: [{ kind: 'position', path: big }] }], { batchRows: 4096 })
    expect(rows).toBeGreaterThan(0)
    expect(rows).toBeLessThan(ROWS)
    expect(vectors).toBe(0)
  })

  test('among huge deletion vectors: rejects ERR_ABORTED before they are all joined, nothing left', () => {
    const cases = JSON.parse(fs.readFileSync(path.join(CORPUS, 'cases.json'), 'utf8'))
    const c = cases.cases.find(x => x.file === 'dv-65536-full-runs.puffin')
    const dv = { kind: 'deletion-vector', path: path.join(CORPUS, c.file), offset: c.offset, length: c.length }
    const files = [{ path: path.join(CORPUS, cases.data), location: cases.location, deletes: Array(VECTORS).fill(dv) }]
    const [rows, vectors] = abortInChild(files, {})
    expect(rows).toBe(0)
    expect(vectors).toBeLessThan(VECTORS)
  })
})
