'use strict'
// Interop matrix for nested columns and decimals: inputs written by pyarrow (an independent
// writer; list, list<string>, struct with a list child, map, list<struct>, list<list>,
// fixed_size_binary, decimal(9,2) / (18,4) / (38,10) stored as INT32 / INT64 / FIXED_LEN_BYTE_ARRAY,
// µs UTC timestamps, Parquet field ids, mixed input codecs and data page versions) are compacted
// with every output codec, and pyarrow, DuckDB and hyparquet + hyparquet-compressors each read the
// outputs exactly as they read the inputs: same schema and types, same row multiset, decimals
// exact and timestamps to the microsecond. Every comparison is inputs vs outputs through the same
// independent reader. (The production 56-column VARIANT shape is interop.spec.js's.)

const path = require('path')
const { execFileSync } = require('child_process')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { openDuck, fileList } = require('./helpers/duck')
const { makeTmpDir, removeDir, hashFiles } = require('./helpers/fsutil')
const { multisetDiff } = require('./helpers/assertions')

const KiB = 1024
// option -> codec name in DuckDB's parquet_metadata
const CODECS = { zstd: 'ZSTD', snappy: 'SNAPPY', gzip: 'GZIP', lz4: 'LZ4_RAW', none: 'UNCOMPRESSED' }
const COLUMNS = ['id', 'ts', 'li', 'ls', 'st', 'm', 'd9', 'd18', 'd38', 'lst', 'fsb', 'll']
const NO_DIFF = { missing: 0, extra: 0, missingSample: [], extraSample: [] }
const NESTED_PY = path.join(__dirname, 'helpers', 'nested.py')

/** helpers/nested.py (pyarrow): `gen <dir>` or `compare <json>`, one line of JSON back. */
function nestedPy(...args) {
  return JSON.parse(execFileSync('python3', [NESTED_PY, ...args], { encoding: 'utf8', maxBuffer: 256 << 20 }))
}

let tmp
let duck
let gen // { files, rows }
let inputHashes
let inputDuck
let inputHyp
const outputs = {} // codec -> { result, paths }

/**
 * DuckDB's view of a set of files, order-independent: row count, distinct ids, exact µs sum of
 * `ts`, and per column the non-null count, a hash sum and an md5 of every value as VARCHAR
 * (decimals exact, timestamps with µs, nested values spelled out) in id order; plus column types.
 */
async function duckFingerprint(files) {
  const src = `read_parquet(${fileList(files)})`
  const [totals] = await duck.q(`SELECT count(*)::VARCHAR AS rows, count(DISTINCT id)::VARCHAR AS ids, sum(epoch_us(ts))::VARCHAR AS ts_us FROM ${src}`)
  const [nonNull] = await duck.q(`SELECT count(COLUMNS(*))::VARCHAR FROM ${src}`)
  const [hashSum] = await duck.q(`SELECT sum(hash(COLUMNS(*)))::VARCHAR FROM ${src}`)
  const [valuesMd5] = await duck.q(`SELECT md5(string_agg(coalesce(COLUMNS(*)::VARCHAR, '<null>'), '|' ORDER BY id)) FROM ${src}`)
  const [types] = await duck.q(`SELECT typeof(COLUMNS(*)) FROM ${src} LIMIT 1`)
  return { totals, nonNull, hashSum, valuesMd5, types }
}

beforeAll(async () => {
  tmp = makeTmpDir('matrix')
  gen = nestedPy('gen', path.join(tmp, 'in'))
  inputHashes = hashFiles(gen.files)
  duck = await openDuck()
  inputDuck = await duckFingerprint(gen.files)
  inputHyp = await hyp.rowDigests(gen.files, { idColumn: 'id' })
  for (const codec of Object.keys(CODECS)) {
    // 64 KiB batches: many row groups; a 256 KiB target: several files per codec
    const result = await compactGeneration(gen.files, {
      outDir: path.join(tmp, `out-${codec}`), compression: codec, batchBytes: 64 * KiB, targetFileBytes: 256 * KiB, fileNamePrefix: codec,
    })
    outputs[codec] = { result, paths: result.files.map(f => f.path) }
  }
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

describe('the inputs (sanity)', () => {
  test('six pyarrow files of one schema, several row groups, mixed codecs; every column has nulls and values', async () => {
    expect(gen.files.length).toBe(6)
    const metas = await Promise.all(gen.files.map(f => duck.metadata(f)))
    expect(new Set(metas.flatMap(m => m.map(c => c.compression)))).toEqual(new Set(['SNAPPY', 'ZSTD', 'GZIP', 'UNCOMPRESSED']))
    expect(Math.max(...metas.map(m => new Set(m.map(c => c.rg)).size))).toBeGreaterThan(1)
    const schemas = await Promise.all(gen.files.map(f => duck.schema(f)))
    for (const s of schemas) expect(s).toEqual(schemas[0])
    expect(inputDuck.totals).toEqual({ rows: String(gen.rows), ids: String(gen.rows), ts_us: expect.any(String) })
    for (const c of COLUMNS.slice(1)) {
      expect(Number(inputDuck.nonNull[c])).toBeGreaterThan(0)
      expect(Number(inputDuck.nonNull[c])).toBeLessThan(gen.rows)
    }
    expect(inputDuck.types).toEqual({
      id: 'BIGINT', ts: 'TIMESTAMP WITH TIME ZONE', li: 'INTEGER[]', ls: 'VARCHAR[]', st: 'STRUCT(a INTEGER, b VARCHAR, c DOUBLE[])',
      m: 'MAP(VARCHAR, BIGINT)', d9: 'DECIMAL(9,2)', d18: 'DECIMAL(18,4)', d38: 'DECIMAL(38,10)', lst: 'STRUCT(x INTEGER, y VARCHAR)[]',
      fsb: 'BLOB', ll: 'INTEGER[][]',
    })
    expect(schemas[0].filter(e => e.type === 'INT32' || e.type === 'INT64' || e.type === 'FIXED_LEN_BYTE_ARRAY').filter(e => e.converted_type === 'DECIMAL').map(e => e.type))
      .toEqual(['INT32', 'INT64', 'FIXED_LEN_BYTE_ARRAY'])
  })

  test('the fingerprints ignore file order but see one row go missing (the checks can fail)', async () => {
    const swapped = [gen.files[1], gen.files[0], ...gen.files.slice(2)]
    expect(await duckFingerprint(swapped)).toEqual(inputDuck)
    const lessOne = await duckFingerprint(gen.files.slice(1)) // in-0 holds a single row
    for (const c of COLUMNS) expect(lessOne.valuesMd5[c]).not.toBe(inputDuck.valuesMd5[c])
    const hypLessOne = await hyp.rowDigests(gen.files.slice(1), { idColumn: 'id' })
    expect(multisetDiff(inputHyp.entries, hypLessOne.entries).missing).toBe(1)
    const py = nestedPy('compare', JSON.stringify({ inputs: gen.files, outputs: gen.files.slice(1) }))
    expect(py.tableEquals).toBe(false)
    expect(py.firstDiff).not.toBeNull()
  })
})

describe.each(Object.keys(CODECS))('compression %s', codec => {
  test('several files and row groups; every column chunk carries the codec; inputs untouched', async () => {
    const { result, paths } = outputs[codec]
    expect(result.rowsWritten).toBe(gen.rows)
    expect(paths.length).toBeGreaterThan(1)
    expect(result.files.reduce((n, f) => n + f.rowGroups, 0)).toBeGreaterThan(paths.length)
    for (const f of paths) {
      const meta = await duck.metadata(f)
      expect([...new Set(meta.map(m => m.compression))]).toEqual([CODECS[codec]])
    }
    expect(hashFiles(gen.files)).toEqual(inputHashes)
  })

  test('pyarrow: same Parquet and Arrow schema (field ids, decimals, nested), kv metadata, and the same rows exactly', () => {
    const py = nestedPy('compare', JSON.stringify({ inputs: gen.files, outputs: outputs[codec].paths }))
    expect(py.inputSchemas.length).toBe(1)
    expect(py.outputSchemas).toEqual(py.inputSchemas)
    expect(py.outputArrowSchemas).toEqual([py.inputArrowSchema])
    expect(py.arrowSchemaEquals).toBe(true)
    for (const kv of py.outputKv) expect(kv).toEqual(py.inputKv)
    expect(py.inputKv).toEqual({ 'ARROW:schema': expect.any(String), 'gencompact.test': 'matrix' })
    expect({ inputRows: py.inputRows, outputRows: py.outputRows, firstDiff: py.firstDiff }).toEqual({ inputRows: gen.rows, outputRows: gen.rows, firstDiff: null })
    expect(py.tableEquals).toBe(true)
  })

  test('DuckDB: parquet_schema of every output equals the input (below the root); types, counts, µs sum and per-column values equal', async () => {
    // the root element alone is the separate test at the end of this file
    const inSchema = await duck.schema(gen.files[0])
    for (const f of outputs[codec].paths) expect((await duck.schema(f)).slice(1)).toEqual(inSchema.slice(1))
    expect(await duckFingerprint(outputs[codec].paths)).toEqual(inputDuck)
  })

  test('hyparquet + hyparquet-compressors: same schema elements (below the root) and row multiset (every column, µs timestamps as bigint)', async () => {
    // hyparquet decodes DECIMAL to a JS number (a float64: d18 and d38 keep ~16 significant digits
    // here); their exactness is what the pyarrow and DuckDB checks prove.
    const inSchema = (await hyp.metadata(gen.files[0])).schema
    for (const f of outputs[codec].paths) expect((await hyp.metadata(f)).schema.slice(1)).toEqual(inSchema.slice(1))
    const out = await hyp.rowDigests(outputs[codec].paths, { idColumn: 'id' })
    expect(out.columns).toEqual([...COLUMNS].sort())
    expect(out.count).toBe(gen.rows)
    expect(multisetDiff(inputHyp.entries, out.entries)).toEqual(NO_DIFF)
  })
})

test('hyparquet decodes the nested output columns to JS structures (maps to objects, µs timestamps to bigint)', async () => {
  const rows = await hyp.sampleRows(outputs.zstd.paths[0], { limit: 200 })
  const some = pick => rows.find(pick)
  expect(some(r => r.ts !== null).ts).toEqual(expect.any(BigInt))
  const m = some(r => r.m && Object.keys(r.m).length).m
  expect([Array.isArray(m), Object.keys(m)[0]]).toEqual([false, 'k0'])
  const st = some(r => r.st && Array.isArray(r.st.c)).st
  expect(Object.keys(st)).toEqual(['a', 'b', 'c'])
  expect(some(r => r.ll && r.ll.some(l => Array.isArray(l) && l.length)).ll).toEqual(expect.arrayContaining([expect.any(Array)]))
  expect(Object.keys(some(r => r.lst && r.lst.some(e => e)).lst.find(e => e))).toEqual(['x', 'y'])
  expect(some(r => r.d38 !== null).d38).toEqual(expect.any(Number))
  expect(some(r => r.fsb !== null).fsb).toBeInstanceOf(Uint8Array)
})

test('the root schema element of every output equals the input\'s, but for its repetition (DuckDB parquet_schema, hyparquet)', async () => {
  // pyarrow (parquet-cpp) writes repetition_type REQUIRED on the root; parquet.thrift says the root
  // has none, parquet-rs drops it when it reads a footer and writes none (README: "Schema"). Name,
  // child count and everything else of the root must still match.
  const withoutRepetition = ({ repetition_type: _r, repetition: _h, ...rest }) => rest
  const inDuck = withoutRepetition((await duck.schema(gen.files[0]))[0])
  const inHyp = withoutRepetition((await hyp.metadata(gen.files[0])).schema[0])
  expect(inDuck).toEqual(expect.objectContaining({ name: 'schema', num_children: COLUMNS.length }))
  for (const { paths } of Object.values(outputs)) {
    for (const f of paths) {
      const outDuck = (await duck.schema(f))[0]
      expect(outDuck.repetition_type ?? null).toBe(null)
      expect(withoutRepetition(outDuck)).toEqual(inDuck)
      expect(withoutRepetition((await hyp.metadata(f)).schema[0])).toEqual(inHyp)
    }
  }
})
