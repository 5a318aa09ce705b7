'use strict'
// The behaviours a host needs to swap compactGeneration in for its JS rewrite (README "API",
// index.d.ts), each proved against an independent reader: null dedupe keys, the empty generation,
// partition field names, the default codec, typed partition values, the Iceberg DataFile record,
// byte targets at small sizes, and divert. Expectations come from DuckDB, pyarrow, pyiceberg and
// plain hyparquet reading the inputs and outputs, never from the call's own figures.
// Fixtures are small files written by hyparquet-writer (the host's writer) or pyarrow
// (helpers/dropin.js, helpers/dropin.py).

const fs = require('fs')
const path = require('path')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { hypWriteTable, plainRows, pyWrite, pyMeta, pyBucket } = require('./helpers/dropin')
const { openDuck, sqlString, fileList } = require('./helpers/duck')
const { pyInspect } = require('./helpers/py')
const { makeTmpDir, removeDir, ourFiles, listTree, hashFiles } = require('./helpers/fsutil')
const { expectCompactError, multisetDiff } = require('./helpers/assertions')

let tmp
let duck
let outCounter = 0

beforeAll(async () => {
  tmp = makeTmpDir('dropin')
  duck = await openDuck()
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

const freshOut = tag => path.join(tmp, `out-${tag}-${++outCounter}`)
const sum = xs => xs.reduce((a, b) => a + b, 0)
const TWO_53 = 2n ** 53n

/** mulberry32: deterministic fixture content. */
function prng(seed) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const hex = n => {
    let s = ''
    while (s.length < n) s += ((next() * 4294967296) >>> 0).toString(16).padStart(8, '0')
    return s.slice(0, n)
  }
  return { next, hex, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)) }
}

/** Every row of `files` (optionally filtered) as DuckDB's JSON of the whole row, sorted: a multiset. */
async function rowsOf(files, where = 'true') {
  const rows = await duck.q(`SELECT to_json(t)::VARCHAR AS j FROM (SELECT * FROM read_parquet(${fileList(files)}) WHERE ${where}) AS t`)
  return rows.map(r => r.j).sort()
}

/**
 * DuckDB alone: the rows of `inputs` whose `match` predicate is false, keeping for each non-null
 * `key` only its first occurrence (inputs order, then row order) and every null-key row.
 */
async function firstOccurrenceRows(inputs, key, match = 'false') {
  const order = inputs.map((f, i) => `(${sqlString(f)}, ${i})`).join(', ')
  const rows = await duck.q(`
    WITH o AS (SELECT * FROM (VALUES ${order}) AS o(fname, idx)),
    ranked AS (
      SELECT r.*, row_number() OVER (PARTITION BY r."${key}" ORDER BY o.idx, r.file_row_number) AS rn_
      FROM read_parquet(${fileList(inputs)}, filename = true, file_row_number = true) AS r
      JOIN o ON r.filename = o.fname
      WHERE NOT coalesce((${match}), false))
    SELECT to_json(t)::VARCHAR AS j
    FROM (SELECT * EXCLUDE (filename, file_row_number, rn_) FROM ranked WHERE "${key}" IS NULL OR rn_ = 1) AS t`)
  return rows.map(r => r.j).sort()
}

/** Multiset equality with a short diff on failure. */
function expectSameRows(actual, expected) {
  expect(multisetDiff(expected, actual)).toEqual({ missing: 0, extra: 0, missingSample: [], extraSample: [] })
  expect(actual.length).toBe(expected.length)
}

/** rowsRead = rowsDeleted + diverted.rows + duplicatesDropped + rowsWritten, and each against the files. */
function expectCounts(r, { read, written, dropped = 0, diverted }) {
  expect({
    rowsRead: r.rowsRead, rowsDeleted: r.rowsDeleted, rowsWritten: r.rowsWritten, duplicatesDropped: r.duplicatesDropped,
  }).toEqual({ rowsRead: read, rowsDeleted: 0, rowsWritten: written, duplicatesDropped: dropped })
  expect(r.rowsRead).toBe(r.rowsDeleted + (r.diverted ? r.diverted.rows : 0) + r.duplicatesDropped + r.rowsWritten)
  expect(sum(r.files.map(f => f.recordCount))).toBe(r.rowsWritten)
  if (diverted === undefined) expect(r.diverted).toBeUndefined()
  else expect(r.diverted).toEqual(diverted)
}

// ---------------------------------------------------------------------------------------------

describe('dedupeBy keeps every null-key row', () => {
  const COLS = [
    { name: '_hyp_cache_row_id', fieldId: 1, type: 'string' },
    { name: 'seq', fieldId: 2, type: 'int', required: true },
    { name: 'session_id', fieldId: 3, type: 'string', required: true },
    { name: 'payload', fieldId: 4, type: 'string' },
  ]
  let inputs
  let total

  beforeAll(async () => {
    const dir = path.join(tmp, 'nullkeys')
    fs.mkdirSync(dir)
    inputs = []
    total = 0
    for (let f = 0; f < 4; f++) {
      const n = 90 + 17 * f
      const data = { _hyp_cache_row_id: [], seq: [], session_id: [], payload: [] }
      for (let i = 0; i < n; i++) {
        const g = total + i
        // nulls in every file, repeated strings within and across files
        data._hyp_cache_row_id.push(g % 7 === 3 ? null : `k${(g * 13) % 97}`)
        data.seq.push(g)
        data.session_id.push(`s${g % 2}`)
        data.payload.push(`file ${f} row ${i}`)
      }
      total += n
      const file = path.join(dir, `in-${f}.parquet`)
      await hypWriteTable(file, COLS, data)
      inputs.push(file)
    }
  })

  test.each([
    ['one tuple, small batches', { batchRows: 32 }],
    ['partitioned and sorted (dedupe scope is the whole call)', { partitionBy: [{ column: 'session_id' }], sortBy: [{ column: 'seq', descending: true }] }],
  ])('%s: null-key rows all survive, strings keep their first occurrence (DuckDB)', async (_label, extra) => {
    const expected = await firstOccurrenceRows(inputs, '_hyp_cache_row_id')
    const [{ nulls }] = await duck.q(`SELECT count(*)::INT AS nulls FROM read_parquet(${fileList(inputs)}) WHERE _hyp_cache_row_id IS NULL`)
    // the fixture has what the test is about
    expect(nulls).toBeGreaterThan(10)
    expect(expected.length).toBeLessThan(total - 50)
    const r = await compactGeneration(inputs, { outDir: freshOut('nullkeys'), dedupeBy: '_hyp_cache_row_id', ...extra })
    const out = r.files.map(f => f.path)
    expectSameRows(await rowsOf(out), expected)
    const [{ outNulls }] = await duck.q(`SELECT count(*)::INT AS outNulls FROM read_parquet(${fileList(out)}) WHERE _hyp_cache_row_id IS NULL`)
    expect(outNulls).toBe(nulls)
    expectCounts(r, { read: total, written: expected.length, dropped: total - expected.length })
  })
})

// ---------------------------------------------------------------------------------------------

describe('empty generation', () => {
  test('files: [] resolves with no files and zero counts, and creates nothing (not even outDir)', async () => {
    const top = path.join(tmp, 'empty-gen')
    const outDir = path.join(top, 'gen-2', 'data')
    const r = await compactGeneration([], { outDir })
    expect(r).toEqual(expect.objectContaining({
      files: [], inputFiles: 0, rowsRead: 0, rowsDeleted: 0, rowsWritten: 0, duplicatesDropped: 0, bytesRead: 0, bytesWritten: 0,
    }))
    expect(r.diverted).toBeUndefined()
    expect(fs.existsSync(top)).toBe(false)
  })

  test('with the production options (dedupe, partition, sort, divert) as well', async () => {
    const outDir = path.join(tmp, 'empty-gen-2', 'data')
    const to = path.join(tmp, 'empty-gen-2', 'side', 'diverted.parquet')
    const r = await compactGeneration([], {
      outDir,
      dedupeBy: '_hyp_cache_row_id',
      partitionBy: [{ column: 'session_id' }],
      sortBy: [{ column: 'ts' }],
      sortOrderId: 1,
      divert: { column: 'attributes', path: ['gateway', 'identity_source'], equals: 'gateway_fallback', to },
    })
    expect(r).toEqual(expect.objectContaining({ files: [], rowsRead: 0, rowsWritten: 0, duplicatesDropped: 0, diverted: { path: to, rows: 0 } }))
    expect(fs.existsSync(path.join(tmp, 'empty-gen-2'))).toBe(false)
  })
})

// ---------------------------------------------------------------------------------------------

describe('partition field names', () => {
  let inputs

  beforeAll(() => {
    const dir = path.join(tmp, 'names')
    fs.mkdirSync(dir)
    inputs = [0, 1].map(f => path.join(dir, `in-${f}.parquet`))
    pyWrite(inputs.map((p, f) => {
      const n = 60
      return {
        path: p,
        columns: [
          { name: 'date', type: 'date', fieldId: 1, values: Array.from({ length: n }, (_, i) => 20300 + ((i + f) % 3)) },
          { name: 'session_id', type: 'string', fieldId: 2, values: Array.from({ length: n }, (_, i) => `sess-${(i * 7 + f) % 2}`) },
          { name: 'seq', type: 'int32', fieldId: 3, values: Array.from({ length: n }, (_, i) => f * 1000 + i) },
        ],
      }
    }))
  })

  async function expectTuples(r, dateKey) {
    const tuples = await duck.q(`SELECT DISTINCT (date - DATE '1970-01-01')::INT AS d, session_id FROM read_parquet(${fileList(inputs)})`)
    expect(r.files).toHaveLength(tuples.length) // 3 dates x 2 sessions, far below the default target
    for (const f of r.files) {
      expect(Object.keys(f.partition)).toEqual([dateKey, 'session_id'])
      expect(Object.keys(f.dataFile.partition)).toEqual([dateKey, 'session_id'])
      const inFile = await duck.q(`SELECT DISTINCT (date - DATE '1970-01-01')::INT AS d, session_id FROM read_parquet(${sqlString(f.path)})`)
      expect(inFile).toHaveLength(1)
      expect(f.dataFile.partition).toEqual({ [dateKey]: inFile[0].d, session_id: inFile[0].session_id })
      expect(f.partition).toEqual({ [dateKey]: inFile[0].d, session_id: inFile[0].session_id })
    }
  }

  test("name: 'date' keys the tuple as date (files[].partition and dataFile.partition)", async () => {
    const r = await compactGeneration(inputs, {
      outDir: freshOut('names'),
      partitionBy: [{ column: 'date', transform: 'day', name: 'date' }, { column: 'session_id' }],
    })
    await expectTuples(r, 'date')
  })

  test('without name: Iceberg\'s default date_day', async () => {
    const r = await compactGeneration(inputs, { outDir: freshOut('names'), partitionBy: [{ column: 'date', transform: 'day' }, { column: 'session_id' }] })
    await expectTuples(r, 'date_day')
  })

  test.each([
    ['a number', [{ column: 'date', transform: 'day', name: 5 }]],
    ['an empty string', [{ column: 'date', transform: 'day', name: '' }]],
    ['two fields with the same name', [{ column: 'date', transform: 'day', name: 'p' }, { column: 'session_id', name: 'p' }]],
    ['a name equal to another field\'s default name', [{ column: 'session_id' }, { column: 'date', transform: 'day', name: 'session_id' }]],
  ])('name as %s -> ERR_INVALID_OPTIONS', async (_label, partitionBy) => {
    const outDir = freshOut('names-bad')
    await expectCompactError(() => compactGeneration(inputs, { outDir, partitionBy }), { code: 'ERR_INVALID_OPTIONS', outDir, inputs })
    expect(fs.existsSync(outDir)).toBe(false)
  })
})

// ---------------------------------------------------------------------------------------------

describe('default codec: the one holding most compressed input bytes', () => {
  let snappyGen

  /** codec -> compressed bytes over all column chunks of `paths` (pyarrow). */
  function codecBytes(paths) {
    const out = {}
    for (const m of pyMeta(paths)) for (const [c, b] of Object.entries(m.codecBytes)) out[c] = (out[c] || 0) + b
    return out
  }
  const outputCodecs = r => Object.keys(codecBytes(r.files.map(f => f.path))).sort()

  beforeAll(async () => {
    snappyGen = await hyp.generate({ dir: path.join(tmp, 'codec-hyp'), rows: 240, files: 6, tuples: 2, seed: 23, fatBytes: 3000, rowBytes: 600 })
  })

  test('SNAPPY inputs (hyparquet-writer) and no compression option -> SNAPPY outputs', async () => {
    expect(Object.keys(codecBytes(snappyGen.files))).toEqual(['SNAPPY'])
    const r = await compactGeneration(snappyGen.files, { outDir: freshOut('codec') })
    expect(outputCodecs(r)).toEqual(['SNAPPY'])
  })

  test('plain hyparquet (without hyparquet-compressors) reads every row of the default output', async () => {
    const r = await compactGeneration(snappyGen.files, { outDir: freshOut('codec-plain'), targetFileBytes: 96 << 10, batchRows: 64 })
    expect(r.files.length).toBeGreaterThan(1)
    const expected = await plainRows(snappyGen.files)
    expect(expected).toHaveLength(snappyGen.rows)
    expectSameRows(await plainRows(r.files.map(f => f.path)), expected)
  })

  test("explicit compression: 'zstd' wins over the inputs' SNAPPY", async () => {
    const r = await compactGeneration(snappyGen.files, { outDir: freshOut('codec'), compression: 'zstd' })
    expect(outputCodecs(r)).toEqual(['ZSTD'])
  })

  test('compressionLevel without compression -> ERR_INVALID_OPTIONS', async () => {
    const outDir = freshOut('codec-level')
    await expectCompactError(() => compactGeneration(snappyGen.files, { outDir, compressionLevel: 3 }), {
      code: 'ERR_INVALID_OPTIONS', outDir, inputs: snappyGen.files, message: /compression/,
    })
    expect(fs.existsSync(outDir)).toBe(false)
  })

  // pyarrow inputs of one schema, different codecs and sizes: the big file decides, and it is
  // never the first input (so "the first input's codec" would give another answer).
  test.each([
    ['zstd', [['snappy', 40], ['zstd', 3000], ['gzip', 60]]],
    ['snappy', [['zstd', 60], ['gzip', 40], ['snappy', 3000]]],
    ['gzip', [['snappy', 60], ['gzip', 3000], ['zstd', 40]]],
  ])('mixed pyarrow inputs where %s holds most bytes', async (winner, layout) => {
    const dir = path.join(tmp, `codec-mixed-${winner}`)
    fs.mkdirSync(dir)
    const rng = prng(winner.length * 101)
    const files = layout.map(([codec, n], i) => ({
      path: path.join(dir, `in-${i}-${codec}.parquet`),
      compression: codec,
      columns: [
        { name: 'id', type: 'string', fieldId: 1, values: Array.from({ length: n }, () => rng.hex(20)) },
        { name: 'n', type: 'int64', fieldId: 2, values: Array.from({ length: n }, () => rng.int(0, 1e9)) },
        { name: 'text', type: 'string', fieldId: 3, values: Array.from({ length: n }, () => rng.hex(rng.int(10, 80))) },
      ],
    }))
    pyWrite(files)
    const paths = files.map(f => f.path)
    const bytes = codecBytes(paths)
    const expected = Object.entries(bytes).sort((a, b) => b[1] - a[1])[0][0]
    expect(expected).toBe(winner.toUpperCase()) // the fixture is what the test says
    const r = await compactGeneration(paths, { outDir: freshOut('codec-mixed') })
    expect(outputCodecs(r)).toEqual([expected])
    const r2 = await compactGeneration(paths, { outDir: freshOut('codec-mixed'), compression: 'zstd' })
    expect(outputCodecs(r2)).toEqual(['ZSTD'])
  })
})

// ---------------------------------------------------------------------------------------------

describe('dataFile.partition values typed by the transform', () => {
  const BIG = (TWO_53 + 1n).toString()
  const NEG = (-(TWO_53 + 3n)).toString()
  let inputs

  beforeAll(() => {
    const dir = path.join(tmp, 'pvalues')
    fs.mkdirSync(dir)
    inputs = [0, 1].map(f => path.join(dir, `in-${f}.parquet`))
    const rng = prng(77)
    pyWrite(inputs.map((p, f) => {
      const n = 45
      const k = i => (i + f) % 3 // the three identity tuples, the last all null
      return {
        path: p,
        columns: [
          { name: 'seq', type: 'int32', fieldId: 1, values: Array.from({ length: n }, (_, i) => f * 100 + i) },
          { name: 'big', type: 'int64', fieldId: 2, values: Array.from({ length: n }, (_, i) => [BIG, NEG, null][k(i)]) },
          { name: 'd', type: 'date', fieldId: 3, values: Array.from({ length: n }, (_, i) => [20310, -3, null][k(i)]) },
          // µs past 2^53 (year 2255) and not a whole millisecond
          { name: 'ts', type: 'timestamptz', fieldId: 4, values: Array.from({ length: n }, (_, i) => [(TWO_53 + 7n).toString(), '1700000000123457', null][k(i)]) },
          { name: 'b', type: 'binary', fieldId: 5, values: Array.from({ length: n }, (_, i) => ['00ff10', 'deadbeef', null][k(i)]) },
          { name: 's', type: 'string', fieldId: 6, values: Array.from({ length: n }, () => `user-${rng.int(0, 40)}`) },
          { name: 'n', type: 'int64', fieldId: 7, values: Array.from({ length: n }, () => (BigInt(rng.int(0, 1e6)) * 1000003n + (rng.next() < 0.5 ? TWO_53 : 0n)).toString()) },
        ],
      }
    }))
  })

  /** For each output file: its one distinct value of `expr` (DuckDB), checked to be one. */
  async function valuePerFile(r, expr) {
    const out = []
    for (const f of r.files) {
      const vals = await duck.q(`SELECT DISTINCT ${expr} AS v FROM read_parquet(${sqlString(f.path)})`)
      expect(vals).toHaveLength(1)
      out.push(vals[0].v)
    }
    return out
  }

  test.each([
    ['long -> BigInt (exact past 2^53)', 'big', 'big::VARCHAR', v => (v === null ? null : BigInt(v)), 'bigint'],
    ['date -> days (number)', 'd', "(d - DATE '1970-01-01')::INT", v => v, 'number'],
    ['timestamp -> µs BigInt', 'ts', 'epoch_us(ts)::VARCHAR', v => (v === null ? null : BigInt(v)), 'bigint'],
    ['binary -> Buffer', 'b', 'lower(hex(b))', v => (v === null ? null : Buffer.from(v, 'hex')), 'buffer'],
  ])('identity on %s', async (_label, column, expr, toJs, kind) => {
    const r = await compactGeneration(inputs, { outDir: freshOut('pvalues'), partitionBy: [{ column }] })
    const [{ n }] = await duck.q(`SELECT count(DISTINCT coalesce((${expr})::VARCHAR, 'null'))::INT AS n FROM read_parquet(${fileList(inputs)})`)
    expect(n).toBe(3)
    expect(r.files).toHaveLength(3)
    const values = await valuePerFile(r, expr)
    let nulls = 0
    for (const [i, f] of r.files.entries()) {
      const got = f.dataFile.partition[column]
      expect(Object.keys(f.dataFile.partition)).toEqual([column])
      const want = toJs(values[i])
      if (want === null) {
        nulls++
        expect(got).toBeNull()
        continue
      }
      if (kind === 'buffer') {
        expect(Buffer.isBuffer(got)).toBe(true)
        expect(got.toString('hex')).toBe(want.toString('hex'))
      } else {
        expect(typeof got).toBe(kind)
        expect(got === want).toBe(true) // BigInt equality, exact
        expect(got).toEqual(want)
      }
    }
    expect(nulls).toBe(1)
    if (column === 'big') {
      expect(r.files.map(f => f.dataFile.partition.big).filter(v => v !== null).sort((a, b) => (a < b ? -1 : 1)))
        .toEqual([-(TWO_53 + 3n), TWO_53 + 1n])
    }
  })

  test.each([
    ['string', 's', 16],
    ['long', 'n', 8],
  ])('bucket[N] on a %s column -> number equal to pyiceberg\'s BucketTransform', async (type, column, buckets) => {
    const name = `${column}_b`
    const r = await compactGeneration(inputs, { outDir: freshOut('pbucket'), partitionBy: [{ column, transform: `bucket[${buckets}]`, name }] })
    expect(r.files.length).toBeGreaterThan(2)
    const seen = new Set()
    const perFile = []
    for (const f of r.files) perFile.push((await duck.q(`SELECT DISTINCT ${column}::VARCHAR AS v FROM read_parquet(${sqlString(f.path)})`)).map(x => x.v))
    const hashed = pyBucket(buckets, type, perFile.flat()) // one python call
    for (const [i, f] of r.files.entries()) {
      const before = sum(perFile.slice(0, i).map(v => v.length))
      const expected = [...new Set(hashed.slice(before, before + perFile[i].length))]
      expect(expected).toHaveLength(1)
      expect(typeof f.dataFile.partition[name]).toBe('number')
      expect(f.dataFile.partition).toEqual({ [name]: expected[0] })
      seen.add(expected[0])
    }
    expect(seen.size).toBe(r.files.length)
  })
})

// ---------------------------------------------------------------------------------------------

describe('dataFile: the Iceberg DataFile record of each output', () => {
  const FIELDS = { id: 1, big: 2, s: 3, d: 4, ts: 5, x: 6, opt: 7, part: 8, y: 9 }
  let inputs
  let total

  beforeAll(() => {
    const dir = path.join(tmp, 'datafile')
    fs.mkdirSync(dir)
    inputs = [0, 1, 2].map(f => path.join(dir, `in-${f}.parquet`))
    const rng = prng(5)
    total = 0
    pyWrite(inputs.map((p, f) => {
      const n = 150 + 40 * f
      const part = Array.from({ length: n }, (_, i) => `p${(i + f) % 2}`)
      const cols = {
        id: Array.from({ length: n }, () => rng.int(-5e8, 5e8)),
        big: Array.from({ length: n }, () => (BigInt(rng.int(-1e9, 1e9)) * 1000000007n).toString()),
        // long strings (truncated bounds), some sharing a 16-char prefix
        s: Array.from({ length: n }, () => (rng.next() < 0.3 ? 'shared-prefix-16' : '') + rng.hex(rng.int(4, 30))),
        d: Array.from({ length: n }, () => (rng.next() < 0.1 ? null : rng.int(-400, 30000))),
        ts: Array.from({ length: n }, () => String(rng.int(0, 2e9) * 1000000 + rng.int(0, 999999))),
        x: Array.from({ length: n }, () => (rng.next() < 0.15 ? 'NaN' : rng.next() < 0.1 ? null : rng.next() * 1000 - 500)),
        opt: part.map(p => (p === 'p0' ? null : `o-${rng.hex(6)}`)), // all null in tuple p0
        part,
        // float: NaN, infinities, both zeros
        y: Array.from({ length: n }, (_, i) => (i % 17 === 0 ? 'NaN' : i % 29 === 0 ? (i % 2 ? '-0.0' : '0.0') : i === 3 + f ? (f % 2 ? '-inf' : 'inf') : rng.next() * 200 - 100)),
      }
      total += n
      const type = { id: 'int32', big: 'int64', s: 'string', d: 'date', ts: 'timestamptz', x: 'double', opt: 'string', part: 'string', y: 'float' }
      return { path: p, columns: Object.entries(FIELDS).map(([name, fieldId]) => ({ name, fieldId, type: type[name], values: cols[name] })) }
    }))
  })

  const opts = extra => ({
    outDir: freshOut('datafile'), partitionBy: [{ column: 'part' }], sortBy: [{ column: 'id' }], sortOrderId: 3, batchRows: 64, ...extra,
  })

  test('content, format, path, counts, sizes, split offsets, metric maps and bounds agree with the file (pyarrow, pyiceberg, DuckDB)', async () => {
    const r = await compactGeneration(inputs, opts())
    expect(r.files).toHaveLength(2)
    expect(r.rowsWritten).toBe(total)
    const metas = pyMeta(r.files.map(f => f.path))
    const typesCompared = new Set()
    for (const [i, f] of r.files.entries()) {
      const df = f.dataFile
      const m = metas[i]
      expect(path.isAbsolute(f.path)).toBe(true)
      expect({ content: df.content, file_format: df.file_format, file_path: df.file_path, sort_order_id: df.sort_order_id })
        .toEqual({ content: 0, file_format: 'parquet', file_path: f.path, sort_order_id: 3 })
      expect(f.sortOrderId).toBe(3)
      const size = fs.statSync(f.path).size
      expect({ record_count: df.record_count, file_size_in_bytes: df.file_size_in_bytes })
        .toEqual({ record_count: BigInt(m.rows), file_size_in_bytes: BigInt(size) })
      expect([f.recordCount, f.fileSizeInBytes]).toEqual([m.rows, size])
      expect(typeof df.record_count).toBe('bigint')
      expect(typeof df.file_size_in_bytes).toBe('bigint')
      // split offsets: each row group's first page (pyarrow)
      expect(m.rowGroups.length).toBeGreaterThan(1)
      expect(df.split_offsets).toEqual(m.rowGroups.map(g => BigInt(g.offset)))
      expect(f.splitOffsets).toEqual(m.rowGroups.map(g => g.offset))
      expect(df.partition).toEqual({ part: (await duck.q(`SELECT DISTINCT part FROM read_parquet(${sqlString(f.path)})`))[0].part })

      // maps keyed by top-level field id, every column has one here
      const ids = Object.values(FIELDS).map(String).sort()
      for (const map of ['column_sizes', 'value_counts', 'null_value_counts']) {
        expect([map, Object.keys(df[map]).sort()]).toEqual([map, ids])
        for (const v of Object.values(df[map])) expect(typeof v).toBe('bigint')
      }
      for (const [name, fid] of Object.entries(FIELDS)) {
        const e = m.columns[name]
        const c = f.columns.find(col => col.name === name)
        expect(e.fieldId).toBe(fid)
        expect({ name, values: df.value_counts[fid], nulls: df.null_value_counts[fid], size: df.column_sizes[fid] })
          .toEqual({ name, values: BigInt(e.values), nulls: BigInt(e.nulls), size: BigInt(c.columnSizeBytes) })
        // (pyarrow reports no min/max for the float statistics parquet-rs writes: the floating
        // columns' bounds are checked against the data itself, with DuckDB, below)
        if (name === 'x' || name === 'y') continue
        if (e.lowerHex === undefined) {
          expect([name, df.lower_bounds[fid], df.upper_bounds[fid]]).toEqual([name, undefined, undefined])
          continue
        }
        expect(Buffer.isBuffer(df.lower_bounds[fid]) && Buffer.isBuffer(df.upper_bounds[fid])).toBe(true)
        expect([name, df.lower_bounds[fid].toString('hex'), df.upper_bounds[fid].toString('hex')]).toEqual([name, e.lowerHex, e.upperHex])
        expect([name, c.lowerBoundBytes.toString('hex'), c.upperBoundBytes.toString('hex')]).toEqual([name, e.lowerHex, e.upperHex])
        typesCompared.add(e.type)
      }
      // NaN counts: only the floating columns, equal to DuckDB's count of NaNs in the file
      const [{ nans, ynans, lo, hi, ylo, yhi }] = await duck.q(`SELECT count(*) FILTER (WHERE isnan(x))::INT AS nans, count(*) FILTER (WHERE isnan(y))::INT AS ynans,
        min(x) FILTER (WHERE NOT isnan(x)) AS lo, max(x) FILTER (WHERE NOT isnan(x)) AS hi,
        min(y) FILTER (WHERE NOT isnan(y))::VARCHAR AS ylo, max(y) FILTER (WHERE NOT isnan(y))::VARCHAR AS yhi FROM read_parquet(${sqlString(f.path)})`)
      expect(nans).toBeGreaterThan(0)
      expect(df.nan_value_counts).toEqual({ [FIELDS.x]: BigInt(nans), [FIELDS.y]: BigInt(ynans) })
      // bounds leave NaN out: the data's own extremes without NaN (DuckDB), as Iceberg's 8- and 4-byte floats
      expect([df.lower_bounds[FIELDS.x].readDoubleLE(0), df.upper_bounds[FIELDS.x].readDoubleLE(0)]).toEqual([lo, hi])
      const float = text => Math.fround(Number(text.replace('inf', 'Infinity')))
      expect([df.lower_bounds[FIELDS.y].length, df.lower_bounds[FIELDS.y].readFloatLE(0), df.upper_bounds[FIELDS.y].readFloatLE(0)])
        .toEqual([4, float(ylo), float(yhi)])
    }
    expect([...typesCompared].sort()).toEqual(['date32[day]', 'int32', 'int64', 'string', 'timestamp[us, tz=UTC]'])
    // the all-null tuple's `opt` has no bounds, the other's has
    expect(r.files.filter(f => f.dataFile.lower_bounds[FIELDS.opt] === undefined).map(f => f.dataFile.partition.part)).toEqual(['p0'])
  })

  test('without sortBy: sort_order_id 0', async () => {
    const r = await compactGeneration(inputs, { outDir: freshOut('datafile'), partitionBy: [{ column: 'part' }] })
    expect(r.files.map(f => [f.sortOrderId, f.dataFile.sort_order_id])).toEqual(r.files.map(() => [0, 0]))
  })

  test.each(['file:///wh/t/data', 'file:///wh/t/data/'])('outLocation %s -> file_path is file:///wh/t/data/<name>', async outLocation => {
    const outDir = freshOut('datafile-loc')
    const r = await compactGeneration(inputs, opts({ outDir, outLocation }))
    expect(r.files).toHaveLength(2)
    for (const f of r.files) {
      expect(path.dirname(f.path)).toBe(path.resolve(outDir))
      expect(fs.existsSync(f.path)).toBe(true)
      expect(f.dataFile.file_path).toBe(`file:///wh/t/data/${path.basename(f.path)}`)
    }
  })
})

// ---------------------------------------------------------------------------------------------

describe('small targets roll like large ones', () => {
  /** A few-column table, 2 tuples (one bigger), interleaved across input files; incompressible text. */
  function writeTable(dir, rowsPerTuple, files, seed) {
    fs.mkdirSync(dir)
    const rng = prng(seed)
    const specs = []
    let total = 0
    for (let f = 0; f < files; f++) {
      const session = `sess-${f % 2}`
      const n = Math.round(rowsPerTuple[f % 2] / Math.ceil(files / 2))
      total += n
      specs.push({
        path: path.join(dir, `in-${f}.parquet`),
        columns: [
          { name: '_hyp_cache_row_id', type: 'string', fieldId: 1, values: Array.from({ length: n }, () => rng.hex(24)) },
          { name: 'ts', type: 'timestamptz', fieldId: 2, values: Array.from({ length: n }, () => String(1.7e15 + rng.int(0, 86400e6 / 1000) * 1000 + rng.int(0, 999))) },
          { name: 'session_id', type: 'string', fieldId: 3, values: Array.from({ length: n }, () => session) },
          { name: 'n', type: 'int32', fieldId: 4, values: Array.from({ length: n }, () => rng.int(0, 1e9)) },
          { name: 'text', type: 'string', fieldId: 5, values: Array.from({ length: n }, () => rng.hex(rng.int(20, 60))) },
        ],
      })
    }
    pyWrite(specs)
    return { paths: specs.map(s => s.path), total }
  }

  let small
  let large
  beforeAll(() => {
    small = writeTable(path.join(tmp, 'small-target'), [900, 500], 6, 11)
    large = writeTable(path.join(tmp, 'large-target'), [9000, 5000], 6, 12)
  })

  test.each([
    ['zstd', 4096, 24],
    ['snappy', 4096, 14],
    ['none', 4096, 12],
    ['zstd', 64 << 10, 300],
    ['snappy', 64 << 10, 300],
    ['none', 64 << 10, 200],
  ])('%s, target %i bytes, batchRows %i: every file <= target + its largest row group; near-equal sizes per tuple', async (compression, target, batchRows) => {
    const input = target === 4096 ? small : large
    const r = await compactGeneration(input.paths, {
      outDir: freshOut('target'), targetFileBytes: target, batchRows, compression, partitionBy: [{ column: 'session_id' }],
    })
    expect(r.rowsWritten).toBe(input.total)
    const metas = pyMeta(r.files.map(f => f.path))
    const byTuple = new Map()
    const rowGroupSizes = []
    for (const [i, f] of r.files.entries()) {
      const size = fs.statSync(f.path).size
      const largest = Math.max(...metas[i].rowGroups.map(g => g.compressed))
      rowGroupSizes.push(largest)
      expect({ file: i, size, over: size > target + largest }).toEqual({ file: i, size, over: false })
      const key = f.partition.session_id
      byTuple.set(key, [...(byTuple.get(key) || []), size])
    }
    // the row groups are small against the target, so the bound is tight
    expect(Math.max(...rowGroupSizes)).toBeLessThan(target / 2)
    expect(byTuple.size).toBe(2)
    for (const [tuple, sizes] of byTuple) {
      expect([tuple, sizes.length >= 3]).toEqual([tuple, true]) // several files per tuple: the target binds
      expect({ tuple, sizes, nearEqual: Math.min(...sizes) * 2 >= Math.max(...sizes) }).toEqual({ tuple, sizes, nearEqual: true })
    }
  })
})

// ---------------------------------------------------------------------------------------------

describe('divert', () => {
  const VARIANT_COLS = [
    { name: '_hyp_cache_row_id', fieldId: 1, type: 'string' },
    { name: 'seq', fieldId: 2, type: 'int', required: true },
    { name: 'session_id', fieldId: 3, type: 'string', required: true },
    { name: 'status', fieldId: 4, type: 'int' },
    { name: 'attributes', fieldId: 5, type: 'variant' },
  ]
  const GATEWAY = 'gateway_fallback'
  // VARIANT values at row i % 8: only the first two match attributes.gateway.identity_source == GATEWAY
  const VARIANT_VALUES = [
    i => ({ gateway: { identity_source: GATEWAY, region: 'us-east-1' }, http: { route: '/v1/messages' }, retry: i % 3 }),
    () => ({ 'net.peer.ip': '10.0.0.1', gateway: { instance: 'gw-2', identity_source: GATEWAY } }),
    () => ({ gateway: { identity_source: 'api_key' } }),
    () => null,
    () => ({ gateway: { region: 'eu-west-1' } }),
    () => ({ 'gateway.identity_source': GATEWAY }),
    () => ({ gateway: GATEWAY }),
    () => ({ gateway: { identity_source: [GATEWAY] }, other: { identity_source: GATEWAY } }),
  ]
  // The same, as JSON strings (older files), plus invalid JSON and JSON that is not an object
  const JSON_VALUES = [
    () => JSON.stringify({ gateway: { identity_source: GATEWAY } }),
    () => '{ "x": 1, "gateway" : { "region": "eu", "identity_source" : "gateway_fallback" } }',
    () => JSON.stringify({ gateway: { identity_source: 'api_key' } }),
    () => null,
    () => '{"gateway":{"identity_source":"gateway_fallback"', // does not parse
    () => 'gateway_fallback', // not JSON
    () => JSON.stringify(GATEWAY),
    () => JSON.stringify({ gateway: { region: 'eu' } }),
    () => JSON.stringify({ gateway: { identity_source: 'gateway_fallback_v2' } }),
  ]
  const VARIANT_MATCH = `coalesce(json_type(attributes::JSON, '$.gateway.identity_source') = 'VARCHAR' AND (attributes::JSON ->> '$.gateway.identity_source') = '${GATEWAY}', false)`
  const JSON_MATCH = `CASE WHEN json_valid(attributes) THEN coalesce(json_type(attributes, '$.gateway.identity_source') = 'VARCHAR' AND (attributes ->> '$.gateway.identity_source') = '${GATEWAY}', false) ELSE false END`

  let variantInputs
  let jsonInputs
  let total
  let jsonTotal

  /** 4 files; row ids repeat (some first seen on a matching row, some on a non-matching one); a few null ids. */
  async function writeInputs(dir, cols, values) {
    fs.mkdirSync(dir)
    const files = []
    let g = 0
    const firstSeen = new Map() // id -> whether its first occurrence matches
    let matchedFirstThenUnmatched = 0
    let unmatchedFirstThenMatched = 0
    for (let f = 0; f < 4; f++) {
      const n = 70 + 9 * f
      const data = Object.fromEntries(cols.map(c => [c.name, []]))
      for (let i = 0; i < n; i++, g++) {
        const v = values[g % values.length](g)
        const id = g % 11 === 5 ? null : `id-${(g * 17) % 113}`
        const matches = (g % values.length) < 2
        if (id !== null) {
          if (!firstSeen.has(id)) firstSeen.set(id, matches)
          else if (firstSeen.get(id) && !matches) matchedFirstThenUnmatched++
          else if (!firstSeen.get(id) && matches) unmatchedFirstThenMatched++
        }
        data._hyp_cache_row_id.push(id)
        data.seq.push(g)
        data.session_id.push(`sess-${g % 3}`)
        data.status.push(g % 5 === 0 ? null : [200, 500, 429][g % 3])
        data.attributes.push(v)
      }
      const file = path.join(dir, `in-${f}.parquet`)
      await hypWriteTable(file, cols, data)
      files.push(file)
    }
    // the fixture exercises both ways dedupe could wrongly interact with divert
    expect(matchedFirstThenUnmatched).toBeGreaterThan(2)
    expect(unmatchedFirstThenMatched).toBeGreaterThan(2)
    return { files, total: g }
  }

  beforeAll(async () => {
    ;({ files: variantInputs, total } = await writeInputs(path.join(tmp, 'divert-variant'), VARIANT_COLS, VARIANT_VALUES))
    const jsonCols = VARIANT_COLS.map(c => (c.name === 'attributes' ? { ...c, type: 'string' } : c))
    ;({ files: jsonInputs, total: jsonTotal } = await writeInputs(path.join(tmp, 'divert-json'), jsonCols, JSON_VALUES))
  })

  /** Runs a divert call and checks side file, data files, counts, schema and codec; returns the result. */
  async function expectDivert({ inputs, rows, match, divert, extra = {} }) {
    const outDir = freshOut('divert')
    const before = hashFiles(inputs)
    const sideExpected = await rowsOf(inputs, match)
    expect(sideExpected.length).toBeGreaterThan(5)
    const dedupe = extra.dedupeBy
    const dataExpected = dedupe ? await firstOccurrenceRows(inputs, dedupe, match) : await rowsOf(inputs, `NOT coalesce((${match}), false)`)
    const nonMatching = rows - sideExpected.length
    if (dedupe) expect(dataExpected.length).toBeLessThan(nonMatching)

    const r = await compactGeneration(inputs, { outDir, divert, ...extra })
    expect(r.diverted).toEqual({ path: divert.to, rows: sideExpected.length })
    expect(fs.existsSync(divert.to)).toBe(true)
    expect(r.files.map(f => f.path)).not.toContain(divert.to)
    expect(r.files.map(f => path.resolve(f.path)).includes(path.resolve(divert.to))).toBe(false)
    expect(listTree(path.dirname(divert.to))).toEqual([path.basename(divert.to)]) // no .tmp left beside it
    expectSameRows(await rowsOf([divert.to]), sideExpected)
    expectSameRows(await rowsOf(r.files.map(f => f.path)), dataExpected)
    expectCounts(r, { read: rows, written: dataExpected.length, dropped: nonMatching - dataExpected.length, diverted: { path: divert.to, rows: sideExpected.length } })
    // same schema and codec as the data files
    const [side, ...outs] = pyInspect([divert.to, ...r.files.map(f => f.path)])
    for (const o of outs) {
      expect(side.schema).toBe(o.schema)
      expect(side.arrowSchema).toBe(o.arrowSchema)
      expect(side.codecs).toEqual(o.codecs)
      expect(side.kv).toEqual(o.kv)
    }
    expect(side.schema).toBe(pyInspect([inputs[0]])[0].schema)
    expect(hashFiles(inputs)).toEqual(before)
    return r
  }

  const sideFile = tag => path.join(tmp, `side-${tag}-${++outCounter}`, 'nested', 'diverted.parquet')

  test('(a) VARIANT column at a path: side file holds exactly the matching rows (DuckDB), data files the others', async () => {
    await expectDivert({
      inputs: variantInputs, rows: total, match: VARIANT_MATCH,
      divert: { column: 'attributes', path: ['gateway', 'identity_source'], equals: GATEWAY, to: sideFile('variant') },
    })
  })

  test('(a) with dedupeBy and partitionBy: diverted rows are neither dropped nor drop later rows', async () => {
    const r = await expectDivert({
      inputs: variantInputs, rows: total, match: VARIANT_MATCH,
      divert: { column: 'attributes', path: ['gateway', 'identity_source'], equals: GATEWAY, to: sideFile('variant-dedupe') },
      extra: { dedupeBy: '_hyp_cache_row_id', partitionBy: [{ column: 'session_id' }], sortBy: [{ column: 'seq' }] },
    })
    expect(r.files).toHaveLength(3)
  })

  test('(b) JSON-string column: invalid JSON and rows without the path do not match', async () => {
    await expectDivert({
      inputs: jsonInputs, rows: jsonTotal, match: JSON_MATCH,
      divert: { column: 'attributes', path: ['gateway', 'identity_source'], equals: GATEWAY, to: sideFile('json') },
      extra: { dedupeBy: '_hyp_cache_row_id' },
    })
  })

  test('(b) JSON-string cells are compared as decoded JSON values (escapes in keys and values)', async () => {
    const dir = path.join(tmp, `divert-json-escapes-${++outCounter}`)
    fs.mkdirSync(dir)
    const cells = [
      '{"gateway":{"identity_source":"gateway\\u005ffallback"}}', // \u005f is '_'
      '{"gateway":{"identity\\u005fsource":"gateway_fallback"}}',
      '{"gate\\u0077ay":{"identity_source":"gateway_fallback"}}', // \u0077 is 'w'
      '{"gateway":{"identity_source":"gateway_fallback\\u0000"}}', // a different value
      '{"gateway":{"identity_source":"verified"}}',
    ]
    const data = { seq: [], attributes: [] }
    for (let i = 0; i < 40; i++) {
      data.seq.push(i)
      data.attributes.push(cells[i % cells.length])
    }
    const file = path.join(dir, 'in.parquet')
    await hypWriteTable(file, [{ name: 'seq', fieldId: 1, type: 'int', required: true }, { name: 'attributes', fieldId: 2, type: 'string' }], data)
    const to = path.join(dir, 'side', 'diverted.parquet')
    const expected = await rowsOf([file], JSON_MATCH)
    expect(expected).toHaveLength(24) // DuckDB decodes the escapes: the first three cells match
    const r = await compactGeneration([file], { outDir: path.join(dir, 'out'), divert: { column: 'attributes', path: ['gateway', 'identity_source'], equals: GATEWAY, to } })
    expect(r.diverted).toEqual({ path: to, rows: expected.length })
    expectSameRows(await rowsOf([to]), expected)
    expectSameRows(await rowsOf(r.files.map(f => f.path)), await rowsOf([file], `NOT (${JSON_MATCH})`))
  })

  test('(c) a plain string column', async () => {
    await expectDivert({
      inputs: variantInputs, rows: total, match: "session_id = 'sess-1'",
      divert: { column: 'session_id', equals: 'sess-1', to: sideFile('plain') },
    })
  })

  test('(c) a plain int column compared by value', async () => {
    await expectDivert({
      inputs: jsonInputs, rows: jsonTotal, match: 'status = 500',
      divert: { column: 'status', equals: 500, to: sideFile('plain-int') },
      extra: { dedupeBy: '_hyp_cache_row_id' },
    })
  })

  test('(d) no row matches: no side file, diverted.rows 0, every row in the data files', async () => {
    const to = sideFile('none')
    const r = await compactGeneration(variantInputs, {
      outDir: freshOut('divert-none'),
      divert: { column: 'attributes', path: ['gateway', 'identity_source'], equals: 'nobody', to },
    })
    expect(fs.existsSync(to)).toBe(false)
    expect(fs.existsSync(`${to}.tmp`)).toBe(false)
    expectSameRows(await rowsOf(r.files.map(f => f.path)), await rowsOf(variantInputs))
    expectCounts(r, { read: total, written: total, diverted: { path: to, rows: 0 } })
  })

  test('(e) `to` already exists: ERR_IO naming it, the file untouched, nothing left', async () => {
    const to = path.join(tmp, `side-exists-${++outCounter}`, 'diverted.parquet')
    fs.mkdirSync(path.dirname(to))
    fs.writeFileSync(to, 'not ours')
    const outDir = freshOut('divert-exists')
    await expectCompactError(() => compactGeneration(variantInputs, {
      outDir, divert: { column: 'attributes', path: ['gateway', 'identity_source'], equals: GATEWAY, to },
    }), { code: 'ERR_IO', mentions: [to], outDir, inputs: variantInputs })
    expect(fs.readFileSync(to, 'utf8')).toBe('not ours')
    expect(listTree(path.dirname(to))).toEqual(['diverted.parquet'])
    expect(ourFiles(outDir)).toEqual([])
  })
})
