'use strict'
// The outputs are read by the production reader (hyparquet + hyparquet-compressors), DuckDB and
// pyarrow exactly as the inputs are: same Parquet schema (field ids, logical types, VARIANT),
// same `iceberg.schema`, same rows, for every compression. Plus the snappy size question and
// the schema evolution promised by the README.

const fs = require('fs')
const path = require('path')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { openDuck } = require('./helpers/duck')
const { pyInspect } = require('./helpers/py')
const { makeTmpDir, removeDir, totalSize, hashFiles } = require('./helpers/fsutil')
const { multisetDiff } = require('./helpers/assertions')

const MiB = 1024 * 1024
const CODECS = {
  // option -> [name in DuckDB's parquet_metadata, name in pyarrow's metadata]
  zstd: ['ZSTD', 'ZSTD'],
  gzip: ['GZIP', 'GZIP'],
  lz4: ['LZ4_RAW', 'LZ4'], // pyarrow names the LZ4_RAW codec 'LZ4' (its framed legacy one is LZ4_HADOOP)
  none: ['UNCOMPRESSED', 'UNCOMPRESSED'],
  snappy: ['SNAPPY', 'SNAPPY'],
}
const VARIANTS = ['tool_definitions', 'tool_args', 'raw_request_frame', 'raw_response_frame', 'attributes', 'usage_detail', 'error_detail']

let tmp
let duck
let gen
let inputDigests
let inputChecksum
let inputPy
const outputs = {} // codec -> { outDir, result, paths }

beforeAll(async () => {
  tmp = makeTmpDir('interop')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 1200, files: 24, tuples: 4, seed: 11, dupRate: 0.01 })
  duck = await openDuck()
  inputDigests = await hyp.rowDigests(gen.files)
  inputChecksum = await duck.checksum(gen.files)
  inputPy = pyInspect(gen.files)
  for (const codec of Object.keys(CODECS)) {
    const outDir = path.join(tmp, `out-${codec}`)
    // small batches: several row groups (and, with the small target, several files)
    const result = await compactGeneration(gen.files, { outDir, compression: codec, batchBytes: 4 * MiB, targetFileBytes: 2 * MiB, fileNamePrefix: codec })
    outputs[codec] = { outDir, result, paths: result.files.map(f => f.path) }
  }
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

describe('schema is identical', () => {
  test('the inputs agree with each other (sanity)', () => {
    const schemas = new Set(inputPy.map(p => p.schema))
    expect(schemas.size).toBe(1)
    expect(inputPy[0].schema).toContain('Variant')
    expect(inputPy[0].schema).toContain('field_id=56')
  })

  test.each(Object.keys(CODECS))('pyarrow: pq.ParquetFile(output).schema prints like the input (%s)', codec => {
    const py = pyInspect(outputs[codec].paths)
    for (const p of py) {
      expect(p.schema).toBe(inputPy[0].schema)
      expect(p.arrowSchema).toBe(inputPy[0].arrowSchema)
    }
  })

  test('iceberg.schema key-value metadata is kept, equal to the input (pyarrow, DuckDB, hyparquet)', async () => {
    const inputKv = inputPy[0].kv
    expect(Object.keys(inputKv)).toEqual(['iceberg.schema'])
    expect(JSON.parse(inputKv['iceberg.schema'])).toEqual(gen.schema)
    for (const codec of Object.keys(CODECS)) {
      for (const p of pyInspect(outputs[codec].paths)) expect(p.kv).toEqual(inputKv)
    }
    const f = outputs.zstd.paths[0]
    expect(await duck.kv(f)).toEqual(await duck.kv(gen.files[0]))
    const hm = await hyp.metadata(f)
    expect(hm.keyValue).toEqual([{ key: 'iceberg.schema', value: inputKv['iceberg.schema'] }])
  })

  test('DuckDB parquet_schema and hyparquet schema elements equal the input', async () => {
    const inDuck = await duck.schema(gen.files[0])
    const inHyp = (await hyp.metadata(gen.files[0])).schema
    expect(inDuck.filter(r => r.logical_type && r.logical_type.includes('Variant')).length + inHyp.filter(e => e.logicalType && e.logicalType.includes('VARIANT')).length).toBeGreaterThan(0)
    for (const codec of Object.keys(CODECS)) {
      for (const f of outputs[codec].paths) {
        expect(await duck.schema(f)).toEqual(inDuck)
        expect((await hyp.metadata(f)).schema).toEqual(inHyp)
      }
    }
  })
})

describe('VARIANT values', () => {
  test('hyparquet decodes the VARIANT columns of the outputs to the same JS values as the inputs', async () => {
    const columns = ['_hyp_cache_row_id', ...VARIANTS]
    const input = await hyp.rowDigests(gen.files, { columns })
    const output = await hyp.rowDigests(outputs.zstd.paths, { columns })
    expect(output.columns).toEqual([...columns].sort())
    expect(output.count).toBe(gen.rows)
    expect(multisetDiff(input.entries, output.entries)).toEqual({ missing: 0, extra: 0, missingSample: [], extraSample: [] })
  })

  test('they decode to JSON-like values, not to { metadata, value } binaries', async () => {
    const [row] = await hyp.sampleRows(outputs.zstd.paths[0], { columns: VARIANTS, limit: 1 })
    expect(Array.isArray(row.tool_definitions.tools)).toBe(true)
    expect(row.tool_definitions.tools.length).toBeGreaterThan(0)
    expect(Array.isArray(row.raw_request_frame.messages)).toBe(true)
    expect(typeof row.attributes['http.route']).toBe('string')
  })

  test('DuckDB reads them as VARIANT in inputs and outputs', async () => {
    const types = async f => (await duck.q(`SELECT ${VARIANTS.map(c => `typeof(${c}) AS ${c}`).join(', ')} FROM read_parquet('${f}') LIMIT 1`))[0]
    const expected = Object.fromEntries(VARIANTS.map(c => [c, 'VARIANT']))
    expect(await types(gen.files[0])).toEqual(expected)
    expect(await types(outputs.zstd.paths[0])).toEqual(expected)
  })
})

describe.each(Object.keys(CODECS))('compression %s', codec => {
  test('every column chunk carries the codec (DuckDB, pyarrow)', async () => {
    const [duckName, pyName] = CODECS[codec]
    for (const f of outputs[codec].paths) {
      const meta = await duck.metadata(f)
      expect([...new Set(meta.map(m => m.compression))]).toEqual([duckName])
    }
    for (const p of pyInspect(outputs[codec].paths)) expect(p.codecs).toEqual([pyName])
  })

  test('hyparquet + hyparquet-compressors reads every input row back', async () => {
    const output = await hyp.rowDigests(outputs[codec].paths)
    expect(output.count).toBe(gen.rows)
    expect(multisetDiff(inputDigests.entries, output.entries)).toEqual({ missing: 0, extra: 0, missingSample: [], extraSample: [] })
  })

  test('DuckDB checksums equal the input', async () => {
    expect(await duck.checksum(outputs[codec].paths)).toEqual(inputChecksum)
  })

  test('pyarrow reads every row', () => {
    const py = pyInspect(outputs[codec].paths)
    expect(py.reduce((n, p) => n + p.readRows, 0)).toBe(gen.rows)
    expect(py.reduce((n, p) => n + p.numRows, 0)).toBe(gen.rows)
  })
})

describe('snappy output size vs the SNAPPY input', () => {
  const sizes = []
  let novel // a fixture whose text lines are all fresh (novelty 1)

  beforeAll(async () => {
    novel = await hyp.generate({ dir: path.join(tmp, 'in-novel'), rows: 1200, files: 24, tuples: 4, seed: 11, novelty: 1 })
  })

  afterAll(() => {
    // the sizes, printed whatever the assertions said
    console.log(`snappy output vs input (bytes):\n${sizes.map(s => `  ${s.fixture.padEnd(16)} ${s.options.padEnd(22)} input ${s.input}  output ${s.output}  (${(100 * s.output / s.input).toFixed(1)}%, ${s.files} file(s), ${s.rowGroups} row group(s))`).join('\n')}`)
  })

  async function snappyRun(label, fixture, options, optionsLabel) {
    const outDir = path.join(tmp, `snappy-${label}-${optionsLabel}`)
    const r = await compactGeneration(fixture.files, { outDir, compression: 'snappy', fileNamePrefix: 's', ...options })
    const output = totalSize(r.files.map(f => f.path))
    const entry = { fixture: label, options: optionsLabel, input: fixture.bytes, output, files: r.files.length, rowGroups: r.files.reduce((n, f) => n + f.rowGroups, 0) }
    sizes.push(entry)
    return entry
  }

  test('default batches (32 MiB): output <= input (novelty 0.03, request frames replay history)', async () => {
    const e = await snappyRun('novelty-0.03', gen, {}, 'batchBytes=32MiB')
    expect(e.output).toBeLessThanOrEqual(e.input)
  })

  test('default batches (32 MiB): output <= input (novelty 1: every text line fresh)', async () => {
    const e = await snappyRun('novelty-1', novel, {}, 'batchBytes=32MiB')
    expect(e.output).toBeLessThanOrEqual(e.input)
  })

})

describe('schema unification (by field id, else by name)', () => {
  test('a type widened in a later file (int -> long) is unified to long, values kept (DuckDB)', async () => {
    const dir = path.join(tmp, 'widened')
    fs.mkdirSync(dir)
    const widened = path.join(dir, 'widened.parquet')
    const { rows: widenedRows } = await hyp.retypedCopy(gen.files[1], widened, { column: 'latency_ms', patch: { type: 'INT64' }, convert: 'bigint' })
    for (const files of [[gen.files[0], widened], [widened, gen.files[0]]]) {
      const before = hashFiles(files)
      const [{ s: expectedSum }] = await duck.q(`SELECT sum(latency_ms)::BIGINT::VARCHAR AS s FROM read_parquet(${JSON.stringify(files).replace(/"/g, "'")}, union_by_name = true)`)
      const outDir = path.join(dir, `out-${files[0] === widened ? 'b' : 'a'}`)
      const r = await compactGeneration(files, { outDir, fileNamePrefix: 'w' })
      const paths = r.files.map(f => f.path)
      expect(r.rowsWritten).toBe(gen.fileRows[0] + widenedRows)
      const schema = await duck.schema(paths[0])
      expect(schema.find(s => s.name === 'latency_ms')).toEqual(expect.objectContaining({ type: 'INT64', field_id: 38 }))
      const [{ s }] = await duck.q(`SELECT sum(latency_ms)::BIGINT::VARCHAR AS s FROM read_parquet(${JSON.stringify(paths).replace(/"/g, "'")})`)
      expect(s).toBe(expectedSum)
      expect(hashFiles(files)).toEqual(before)
    }
  })

  test('a column added in a later file is unified; earlier rows read it as null', async () => {
    const dir = path.join(tmp, 'added')
    fs.mkdirSync(dir)
    const added = path.join(dir, 'added.parquet')
    const { rows: addedRows } = await hyp.retypedCopy(gen.files[1], added, { addColumn: { name: 'region_code', fieldId: 57 } })
    const files = [gen.files[0], added]
    const r = await compactGeneration(files, { outDir: path.join(dir, 'out'), fileNamePrefix: 'a' })
    const paths = r.files.map(f => f.path)
    expect(r.rowsWritten).toBe(gen.fileRows[0] + addedRows)
    const schema = await duck.schema(paths[0])
    expect(schema.find(s => s.name === 'region_code')).toEqual(expect.objectContaining({ type: 'INT32', field_id: 57 }))
    const [c] = await duck.q(`SELECT count(region_code)::INT AS present, (count(*) - count(region_code))::INT AS nulls FROM read_parquet(${JSON.stringify(paths).replace(/"/g, "'")})`)
    expect(c).toEqual({ present: addedRows, nulls: gen.fileRows[0] })
    // every other column keeps its values
    const input = await duck.checksum([gen.files[0], gen.files[1]])
    const output = await duck.checksum(paths)
    expect(output.ids).toBe(input.ids)
    expect(output.ts_us).toBe(input.ts_us)
  })
})
