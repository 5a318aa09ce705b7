'use strict'
// sortBy on the production shape: partitioned by the four identity columns, sorted by ts,
// deduplicated on _hyp_cache_row_id. Order, survivors and metrics are checked by DuckDB and
// pyarrow; the exact row order (ties in files order, then row order) against DuckDB's ORDER BY.

const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { openDuck } = require('./helpers/duck')
const { expectMetricsMatchPyarrow } = require('./helpers/metrics')
const { makeTmpDir, removeDir, hashFiles } = require('./helpers/fsutil')
const { expectFirstOccurrencesSurvive } = require('./helpers/assertions')

const IDENTITY = ['session_id', 'conversation_id', 'cwd', 'date']
const sqlList = files => `[${files.map(f => `'${f.replace(/'/g, "''")}'`).join(', ')}]`

let tmp
let duck
let gen

beforeAll(async () => {
  tmp = makeTmpDir('sort')
  // 30 tuples over ~170 files, ~2 % duplicate row ids, ingest waves interleaving tuples, files
  // made of several row groups each sorted on its own (a chain of sorted runs).
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 3400, files: 170, tuples: 30, seed: 41, dupRate: 0.02, rowGroupSize: 6 })
  duck = await openDuck()
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

/** Rows of a file out of order by `ts` (each row compared with the one before it in the file). */
async function rowsOutOfOrder(file) {
  const [{ bad }] = await duck.q(`SELECT count(*)::INT AS bad FROM (
      SELECT ts < lag(ts) OVER (ORDER BY file_row_number) AS back FROM read_parquet('${file}', file_row_number = true)) WHERE back`)
  return bad
}

describe('partitionBy the identity tuple + sortBy ts + dedupeBy, spilling', () => {
  let result
  let inputHashes
  const spillDir = () => path.join(tmp, 'spill', 'nested')
  beforeAll(async () => {
    inputHashes = hashFiles(gen.files)
    result = await compactGeneration(gen.files, {
      outDir: path.join(tmp, 'out-prod'),
      partitionBy: IDENTITY.map(column => ({ column })),
      sortBy: [{ column: 'ts' }],
      sortOrderId: 1,
      dedupeBy: '_hyp_cache_row_id',
      // small enough that most tuples spill several runs
      batchBytes: 1 << 20,
      tmpDir: spillDir(),
    })
  })

  test('the call spilled runs (spill.runs, spill.bytes) within its accounted memory bound', () => {
    expect(result.spill.runs).toBeGreaterThan(0)
    expect(result.spill.bytes).toBeGreaterThan(0)
    expect(result.spill.peakBytes).toBeGreaterThan(0)
    expect(result.spill.peakBytes).toBeLessThanOrEqual(result.spill.bytes)
    expect(result.peakMemoryBytes).toBeGreaterThan(0)
    expect(result.peakMemoryBytes).toBeLessThanOrEqual(3 * (1 << 20) + 64 * 2 ** 20)
  })

  test('one file per tuple, each holding one tuple (DuckDB)', async () => {
    const [{ n }] = await duck.q(`SELECT count(*)::INT AS n FROM (SELECT DISTINCT ${IDENTITY.join(', ')} FROM read_parquet(${sqlList(gen.files)}))`)
    expect(n).toBe(30)
    expect(result.files).toHaveLength(n)
    const seen = new Set()
    for (const f of result.files) {
      const inFile = await duck.q(`SELECT DISTINCT ${IDENTITY.join(', ')} FROM read_parquet('${f.path}')`)
      expect(inFile).toEqual([f.partition])
      seen.add(JSON.stringify(f.partition))
    }
    expect(seen.size).toBe(n)
  })

  test('every file is sorted by ts end to end and claims sortOrderId 1 (DuckDB)', async () => {
    for (const f of result.files) {
      expect([f.path, await rowsOutOfOrder(f.path)]).toEqual([f.path, 0])
      expect(f.sortOrderId).toBe(1)
    }
    // the inputs were not: the check can fail
    const unsorted = await Promise.all(gen.files.slice(0, 20).map(rowsOutOfOrder))
    expect(unsorted.some(b => b > 0)).toBe(true)
  })

  test('the survivors are exactly the first occurrences (DuckDB), inputs untouched', async () => {
    await expectFirstOccurrencesSurvive(duck, gen.files, gen.rows, result)
    expect(hashFiles(gen.files)).toEqual(inputHashes)
  })

  test('metrics equal what pyarrow reads from the files', () => {
    expect(expectMetricsMatchPyarrow(result.files)).toBeGreaterThan(30 * 40)
  })

  test('every row group declares sorting_columns (pyarrow); spill files and the tmpDir are gone', () => {
    const PY = `
import sys, json
import pyarrow.parquet as pq
out = []
for f in json.load(sys.stdin):
    md = pq.ParquetFile(f).metadata
    names = [md.schema.column(i).path for i in range(md.num_columns)]
    out.append([[(names[s.column_index], s.descending, s.nulls_first) for s in md.row_group(i).sorting_columns] for i in range(md.num_row_groups)])
print(json.dumps(out))
`
    const perFile = JSON.parse(execFileSync('python3', ['-c', PY], { input: JSON.stringify(result.files.map(f => f.path)), encoding: 'utf8' }))
    for (const [i, groups] of perFile.entries()) {
      expect(groups).toHaveLength(result.files[i].rowGroups)
      for (const g of groups) expect(g).toEqual([['ts', false, true]])
    }
    expect(fs.readdirSync(path.join(tmp, 'out-prod')).every(n => n.endsWith('.parquet'))).toBe(true)
    expect(fs.existsSync(path.join(tmp, 'spill'))).toBe(false)
  })
})

describe('several keys, descending and nulls placement', () => {
  test('the row order equals DuckDB ORDER BY with ties in files order, then row order', async () => {
    const files = gen.files.slice(0, 60)
    const sortBy = [
      { column: 'error_type', descending: true, nullsFirst: false },
      { column: 'upstream_status_code', nullsFirst: true },
      { column: 'ts', descending: true },
    ]
    const r = await compactGeneration(files, { outDir: path.join(tmp, 'out-keys'), sortBy, batchBytes: 512 << 10 })
    expect(r.files).toHaveLength(1)
    expect(r.files[0].sortOrderId).toBe(0) // sorted, but no sort order id was claimed
    const order = files.map((f, i) => `('${f}', ${i})`).join(', ')
    const expected = await duck.q(`
      WITH o AS (SELECT * FROM (VALUES ${order}) AS o(fname, idx))
      SELECT _hyp_cache_row_id AS id FROM read_parquet(${sqlList(files)}, filename = true, file_row_number = true) r JOIN o ON r.filename = o.fname
      ORDER BY error_type DESC NULLS LAST, upstream_status_code ASC NULLS FIRST, ts DESC NULLS LAST, idx, file_row_number`)
    const got = await duck.q(`SELECT _hyp_cache_row_id AS id FROM read_parquet('${r.files[0].path}', file_row_number = true) ORDER BY file_row_number`)
    expect(got.length).toBe(r.rowsWritten)
    expect(got.map(x => x.id)).toEqual(expected.map(x => x.id))
    // the keys really vary: nulls and several values in the leading key
    const [{ nulls, distinct }] = await duck.q(`SELECT count(*) FILTER (WHERE error_type IS NULL)::INT AS nulls, count(DISTINCT error_type)::INT AS distinct
      FROM read_parquet(${sqlList(files)})`)
    expect(nulls).toBeGreaterThan(0)
    expect(distinct).toBeGreaterThan(1)
  })
})
