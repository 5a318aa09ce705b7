'use strict'
// The output files and the metrics compactGeneration returns, committed to a REAL Iceberg table
// (pyiceberg 0.12, SQL catalog on SQLite, one fast-append snapshot of DataFiles built only from the
// returned metrics), then read back: the manifest entries, full and filtered scans (checked against
// DuckDB reading the files), and which files the partition and metrics evaluators let through.
// The Python side is helpers/iceberg.py (one process, JSON in and out).
//
// pyiceberg 0.12 limitations this works around, and asserts to be the only ones:
//  - it has no `variant` type: the table schema is the outputs' `iceberg.schema` minus its VARIANT
//    fields (their metrics are still committed, keyed by their field ids);
//  - it writes manifests for format v1/v2 only, so the table is v2 (production's is v3);
//  - it reads a file by field id only when every field, nested ones included, has one; VARIANT
//    children have none (as in Iceberg), so the table carries a name mapping built from the file's
//    own top-level field ids, which are checked separately against the schema's.

const crypto = require('crypto')
const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { openDuck, sqlString, fileList } = require('./helpers/duck')
const { makeTmpDir, removeDir } = require('./helpers/fsutil')

const IDENTITY = ['session_id', 'conversation_id', 'cwd', 'date']
const DIGEST_COLUMNS = ['_hyp_cache_row_id', 'ts', ...IDENTITY]
const HELPER = path.join(__dirname, 'helpers', 'iceberg.py')
const SORT_ORDER_ID = 1

let tmp
let duck
let gen
let inputSchemaText
let firstOccurrence // DuckDB's checksum of the inputs' first occurrences

const byPath = (a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)
const paths = files => files.map(f => f.path).sort()
const hex = b => (b === undefined ? undefined : Buffer.from(b).toString('hex'))

/** What helpers/iceberg.py computes over a scan, computed by DuckDB over the output files. */
async function duckDigest(files, where = 'true') {
  const cols = DIGEST_COLUMNS.map(c => (c === 'ts' ? 'epoch_us(ts)::VARCHAR' : `coalesce("${c}"::VARCHAR, '')`)).join(` || chr(9) || `)
  const rows = await duck.q(`SELECT ${cols} AS line FROM read_parquet(${fileList(files)}) WHERE ${where}`)
  const [{ ts }] = await duck.q(`SELECT coalesce(sum(epoch_us(ts)), 0)::VARCHAR AS ts FROM read_parquet(${fileList(files)}) WHERE ${where}`)
  // Python's sorted() on str = code point order = UTF-8 byte order
  const lines = rows.map(r => Buffer.from(r.line, 'utf8')).sort(Buffer.compare)
  const joined = Buffer.concat(lines.flatMap((l, i) => (i ? [Buffer.from('\n'), l] : [l])))
  const digest = crypto.createHash('sha256').update(joined).digest('hex')
  return { rows: rows.length, tsSum: ts, digest }
}

function predicate(f) {
  if (f.column === 'ts') {
    if (f.op === 'ge') return `epoch_us(ts) >= ${f.value}`
    if (f.op === 'le') return `epoch_us(ts) <= ${f.value}`
    if (f.op === 'between') return `epoch_us(ts) BETWEEN ${f.lo} AND ${f.hi}`
  }
  if (f.op === 'eq') return `"${f.column}" = ${sqlString(f.value)}`
  throw new Error(`no predicate for ${JSON.stringify(f)}`)
}

beforeAll(async () => {
  tmp = makeTmpDir('iceberg')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 1800, files: 30, tuples: 5, seed: 41, dupRate: 0.02 })
  duck = await openDuck()
  inputSchemaText = (await duck.kv(gen.files[0])).find(r => r.key === 'iceberg.schema').value
  firstOccurrence = await duck.firstOccurrenceChecksum(gen.files, '_hyp_cache_row_id')
})

/**
 * Compacts the generation with `extra` options, reads the outputs with DuckDB, commits them to a
 * fresh table with helpers/iceberg.py and returns { result, perFile, filters, ice }.
 */
async function commitAndRead(tag, extra) {
  const result = await compactGeneration(gen.files, {
    outDir: path.join(tmp, `out-${tag}`),
    partitionBy: IDENTITY.map(column => ({ column })),
    sortBy: [{ column: 'ts' }],
    sortOrderId: SORT_ORDER_ID,
    dedupeBy: '_hyp_cache_row_id',
    ...extra,
  })
  const outs = result.files.map(f => f.path)

  // the files' real ts ranges and tuples, as DuckDB reads them (not the returned metrics)
  const perFile = {}
  for (const r of await duck.q(`SELECT filename, min(epoch_us(ts))::VARCHAR AS lo, max(epoch_us(ts))::VARCHAR AS hi,
      any_value(session_id) AS session_id, any_value(cwd) AS cwd, count(DISTINCT session_id)::INT AS sessions
      FROM read_parquet(${fileList(outs)}, filename = true) GROUP BY filename`)) {
    perFile[r.filename] = { lo: BigInt(r.lo), hi: BigInt(r.hi), session_id: r.session_id, cwd: r.cwd, sessions: r.sessions }
  }
  const los = Object.values(perFile).map(p => p.lo).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const his = Object.values(perFile).map(p => p.hi).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  const n = los.length
  const num = b => {
    const v = Number(b)
    if (!Number.isSafeInteger(v)) throw new Error(`ts ${b} is not a safe integer`)
    return v
  }
  const overlaps = (lo, hi) => p => perFile[p].hi >= lo && perFile[p].lo <= hi
  const MIN = -(1n << 62n)
  const MAX = 1n << 62n
  const filters = [
    // inclusive edges: a file whose max (min) is exactly the bound must be kept
    { name: 'ts >= smallest max', column: 'ts', op: 'ge', value: num(his[0]), expected: overlaps(his[0], MAX) },
    { name: 'ts >= second-smallest max + 1', column: 'ts', op: 'ge', value: num(his[1] + 1n), expected: overlaps(his[1] + 1n, MAX) },
    { name: 'ts <= largest min', column: 'ts', op: 'le', value: num(los[n - 1]), expected: overlaps(MIN, los[n - 1]) },
    { name: 'ts <= second-largest min - 1', column: 'ts', op: 'le', value: num(los[n - 2] - 1n), expected: overlaps(MIN, los[n - 2] - 1n) },
    // (every file spans most of the day: a window can cut files on one side only)
    { name: 'ts between (smallest min, second-largest min)', column: 'ts', op: 'between', lo: num(los[0]), hi: num(los[n - 2] - 1n),
      expected: overlaps(los[0], los[n - 2] - 1n) },
    { name: 'ts between (second-smallest max, largest max)', column: 'ts', op: 'between', lo: num(his[1] + 1n), hi: num(his[n - 1]),
      expected: overlaps(his[1] + 1n, his[n - 1]) },
    ...result.files.map((f, i) => ({ name: `session_id of file ${i}`, column: 'session_id', op: 'eq', value: perFile[f.path].session_id,
      expected: p => perFile[p].session_id === perFile[f.path].session_id })),
    ...result.files.map((f, i) => ({ name: `cwd of file ${i}`, column: 'cwd', op: 'eq', value: perFile[f.path].cwd,
      expected: p => perFile[p].cwd === perFile[f.path].cwd })),
    { name: 'session_id absent', column: 'session_id', op: 'eq', value: '00000000-0000-4000-a000-000000000000', expected: () => false },
  ]

  const request = {
    warehouse: fs.mkdtempSync(path.join(tmp, `warehouse-${tag}-`)),
    partitionBy: IDENTITY,
    sortBy: 'ts',
    sortOrderId: SORT_ORDER_ID,
    digestColumns: DIGEST_COLUMNS,
    // DataFiles are built from these figures only: the call's result, Buffers as hex
    files: result.files.map(f => ({
      path: f.path,
      partition: f.partition,
      recordCount: f.recordCount,
      fileSizeInBytes: f.fileSizeInBytes,
      splitOffsets: f.splitOffsets,
      sortOrderId: f.sortOrderId,
      columns: f.columns.map(c => ({
        name: c.name, fieldId: c.fieldId, columnSizeBytes: c.columnSizeBytes, valueCount: c.valueCount,
        nullValueCount: c.nullValueCount, nanValueCount: c.nanValueCount,
        lowerHex: hex(c.lowerBoundBytes), upperHex: hex(c.upperBoundBytes),
      })),
    })),
    filters: filters.map(({ expected, ...f }) => f),
  }
  const ice = JSON.parse(execFileSync('python3', [HELPER], { input: JSON.stringify(request), encoding: 'utf8', maxBuffer: 256 << 20 }))
  return { result, perFile, filters, ice }
}

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

describe.each([
  ['one row group per file (the production options)', 'default', {}, n => n === 1],
  ['several row groups per file (batchRows 128)', 'rg128', { batchRows: 128 }, n => n > 1],
])('an Iceberg table over the outputs (pyiceberg 0.12, SQL catalog): %s', (_, tag, extra, rowGroupsOk) => {
  let result
  let perFile
  let filters
  let ice
  beforeAll(async () => {
    ({ result, perFile, filters, ice } = await commitAndRead(tag, extra))
  })

  test('the production shape: one file per tuple, duplicates dropped, every file claiming the sort order', () => {
    expect(result.files).toHaveLength(5)
    expect(result.duplicatesDropped).toBeGreaterThan(0)
    for (const f of result.files) {
      expect(perFile[f.path].sessions).toBe(1)
      expect(f.sortOrderId).toBe(SORT_ORDER_ID)
      expect(f.splitOffsets).toHaveLength(f.rowGroups)
      expect([f.rowGroups, rowGroupsOk(f.rowGroups)]).toEqual([f.rowGroups, true])
    }
  })

  test('the schema is the outputs\' iceberg.schema (the inputs\' text), minus only the VARIANT fields pyiceberg cannot parse', () => {
    const outs = paths(result.files)
    expect(Object.keys(ice.icebergSchemaKv).sort()).toEqual(outs)
    for (const p of outs) expect(ice.icebergSchemaKv[p]).toBe(inputSchemaText)
    const declared = JSON.parse(inputSchemaText).fields
    const variants = declared.filter(f => f.type === 'variant')
    expect(variants).toHaveLength(7)
    expect(ice.schemaParse.ok).toBe(false)
    expect(ice.rejected.map(r => [r.id, r.name, r.type])).toEqual(variants.map(f => [f.id, f.name, 'variant']))
    for (const r of ice.rejected) expect(r.error).toMatch(/Unsupported field type: 'variant'/)
    // the created table keeps every other field with its id (pyiceberg re-assigns ids on create)
    expect(ice.schemaFields.map(f => [f.id, f.name])).toEqual(declared.filter(f => f.type !== 'variant').map(f => [f.id, f.name]))
    // and the files' Parquet field ids are the schema's (the name mapping reads by name)
    for (const p of outs) expect(ice.fileFieldIds[p]).toEqual(Object.fromEntries(declared.map(f => [f.name, f.id])))
    // identity spec on the four columns, fields 1000..1003; sort order 1 on ts asc nulls first
    const id = name => declared.find(f => f.name === name).id
    expect(ice.spec).toEqual(IDENTITY.map((name, i) => ({ sourceId: id(name), fieldId: 1000 + i, name, transform: 'identity' })))
    expect(ice.sortOrder).toEqual({ orderId: SORT_ORDER_ID, fields: [{ sourceId: id('ts'), direction: 'ASC', nullOrder: 'NULLS FIRST' }] })
    expect(ice.formatVersion).toBe(2)
  })

  test('one fast-append snapshot whose summary adds up to the call\'s totals', () => {
    expect(ice.snapshotSummary).toMatchObject({
      operation: 'Operation.APPEND',
      'added-data-files': String(result.files.length),
      'added-records': String(result.rowsWritten),
      'added-files-size': String(result.bytesWritten),
      'total-records': String(result.rowsWritten),
      'changed-partition-count': String(result.files.length),
    })
  })

  test('the manifest entries read back hold exactly the returned metrics, and file sizes are the real ones', () => {
    const files = [...result.files].sort(byPath)
    const entries = [...ice.entries].sort(byPath)
    expect(entries.map(e => e.path)).toEqual(files.map(f => f.path))
    for (const [i, f] of files.entries()) {
      const e = entries[i]
      const cols = f.columns.filter(c => c.fieldId !== undefined)
      expect(cols).toHaveLength(f.columns.length) // every top-level field carries its id
      const map = (key, pick = c => c[key]) => Object.fromEntries(cols.filter(c => pick(c) !== undefined).map(c => [String(c.fieldId), pick(c)]))
      expect(e).toEqual({
        path: f.path, content: 0, fileFormat: 'PARQUET', specId: 0,
        partition: f.partition,
        recordCount: f.recordCount, fileSizeInBytes: f.fileSizeInBytes, splitOffsets: f.splitOffsets, sortOrderId: SORT_ORDER_ID,
        columnSizes: map('columnSizeBytes'), valueCounts: map('valueCount'), nullValueCounts: map('nullValueCount'),
        nanValueCounts: map('nanValueCount'),
        lowerHex: map(null, c => hex(c.lowerBoundBytes)), upperHex: map(null, c => hex(c.upperBoundBytes)),
        lowerDecoded: e.lowerDecoded, upperDecoded: e.upperDecoded,
      })
      // pyiceberg's decoding of the committed bound bytes gives back the returned typed bounds
      for (const c of cols.filter(col => col.lowerBoundBytes !== undefined)) {
        expect([c.name, e.lowerDecoded[c.fieldId], e.upperDecoded[c.fieldId]]).toEqual([c.name, c.lowerBound, c.upperBound])
      }
      expect(Object.keys(e.lowerDecoded).length).toBeGreaterThan(40)
      expect(fs.statSync(f.path).size).toBe(f.fileSizeInBytes)
    }
    // tbl.inspect.files() agrees
    expect([...ice.inspectFiles].sort(byPath)).toEqual(files.map(f => ({
      path: f.path, recordCount: f.recordCount, fileSizeInBytes: f.fileSizeInBytes, splitOffsets: f.splitOffsets, sortOrderId: SORT_ORDER_ID,
    })))
  })

  test('the returned metrics equal what pyiceberg derives from each footer itself (its add_files path)', () => {
    for (const f of result.files) {
      const s = ice.pyicebergStats[f.path]
      const inSchema = f.columns.filter(c => ice.schemaFields.some(sf => sf.id === c.fieldId))
      const map = pick => Object.fromEntries(inSchema.filter(c => pick(c) !== undefined).map(c => [String(c.fieldId), pick(c)]))
      expect(s.recordCount).toBe(f.recordCount)
      expect(s.splitOffsets).toEqual(f.splitOffsets)
      expect(s.partition).toEqual(IDENTITY.map(k => f.partition[k]))
      expect(s.columnSizes).toEqual(map(c => c.columnSizeBytes))
      expect(s.valueCounts).toEqual(map(c => c.valueCount))
      expect(s.nullValueCounts).toEqual(map(c => c.nullValueCount))
      expect(s.lowerHex).toEqual(map(c => hex(c.lowerBoundBytes)))
      expect(s.upperHex).toEqual(map(c => hex(c.upperBoundBytes)))
    }
  })

  test('a full scan returns exactly the first occurrences of the inputs, as DuckDB reads the outputs', async () => {
    const outs = result.files.map(f => f.path)
    const expected = firstOccurrence
    const { perColumn, ...output } = await duck.checksum(outs)
    expect(output).toEqual(expected)
    const d = await duckDigest(outs)
    expect({ rows: ice.full.rows, tsSum: ice.full.tsSum, digest: ice.full.digest }).toEqual(d)
    expect(ice.full.rows).toBe(Number(expected.n))
    expect(ice.full.tsSum).toBe(expected.ts_us)
    expect(ice.full.rows).toBe(result.rowsWritten)
    expect(ice.full.columns).toEqual(ice.schemaFields.map(f => f.name))
  })

  test('ts filters plan exactly the files whose real ts range overlaps them (metrics pruning), and return DuckDB\'s rows', async () => {
    const all = paths(result.files)
    let pruning = 0
    for (const f of filters.filter(x => x.column === 'ts')) {
      const got = ice.filters[f.name]
      const expected = all.filter(f.expected)
      expect([f.name, got.planned]).toEqual([f.name, expected])
      expect([f.name, got.metricsPass]).toEqual([f.name, expected])
      expect([f.name, got.partitionPass]).toEqual([f.name, all]) // ts is no partition source
      const d = await duckDigest(all, predicate(f))
      expect([f.name, { rows: got.rows, tsSum: got.tsSum, digest: got.digest }]).toEqual([f.name, d])
      expect(got.rows).toBeGreaterThan(0)
      if (expected.length > 0 && expected.length < all.length) pruning++
    }
    expect(pruning).toBeGreaterThanOrEqual(4)
  })

  test('session_id / cwd filters plan exactly that tuple\'s file by partition alone, and return DuckDB\'s rows', async () => {
    const all = paths(result.files)
    for (const f of filters.filter(x => x.column !== 'ts')) {
      const got = ice.filters[f.name]
      const expected = all.filter(f.expected)
      expect([f.name, got.planned]).toEqual([f.name, expected])
      expect([f.name, got.partitionPass]).toEqual([f.name, expected])
      const d = await duckDigest(all, predicate(f))
      expect([f.name, { rows: got.rows, tsSum: got.tsSum, digest: got.digest }]).toEqual([f.name, d])
      if (f.name !== 'session_id absent') {
        expect(expected).toHaveLength(1)
        expect(got.rows).toBe(result.files.find(x => x.path === expected[0]).recordCount)
      } else {
        expect(got.rows).toBe(0)
      }
    }
  })
})
