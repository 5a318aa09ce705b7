'use strict'
// partitionBy: one run of files per partition tuple, never a file spanning two tuples, values
// checked by DuckDB and the transforms by pyiceberg; together with dedupeBy on the production
// shape (tuples interleaved across files, ~2 % duplicate row ids).

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
const VARIANTS = ['tool_definitions', 'tool_args', 'raw_request_frame', 'raw_response_frame', 'attributes', 'usage_detail', 'error_detail']
const sqlList = files => `[${files.map(f => `'${f.replace(/'/g, "''")}'`).join(', ')}]`

let tmp
let duck
let gen

beforeAll(async () => {
  tmp = makeTmpDir('partition')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 2400, files: 48, tuples: 6, seed: 23, dupRate: 0.02 })
  duck = await openDuck()
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

describe('identity partitioning on the production tuple, with dedupeBy', () => {
  let result
  let inputHashes
  beforeAll(async () => {
    inputHashes = hashFiles(gen.files)
    result = await compactGeneration(gen.files, {
      outDir: path.join(tmp, 'out-identity'),
      partitionBy: IDENTITY.map(column => ({ column })),
      dedupeBy: '_hyp_cache_row_id',
    })
  })

  test('one file per tuple, in order of first appearance, each holding exactly one tuple (DuckDB)', async () => {
    const tuples = await duck.q(`SELECT ${IDENTITY.join(', ')}, min(filename) AS first
      FROM read_parquet(${sqlList(gen.files)}, filename = true) GROUP BY ALL ORDER BY first`)
    expect(tuples.length).toBe(6)
    expect(result.files).toHaveLength(tuples.length)
    for (const [i, f] of result.files.entries()) {
      const inFile = await duck.q(`SELECT DISTINCT ${IDENTITY.join(', ')} FROM read_parquet('${f.path}')`)
      expect(inFile).toHaveLength(1)
      expect(f.partition).toEqual(inFile[0])
      const { first, ...tuple } = tuples[i]
      expect(f.partition).toEqual(tuple)
      expect(Object.keys(f.partition)).toEqual(IDENTITY)
    }
  })

  test('the surviving rows are exactly the first occurrences (DuckDB)', async () => {
    await expectFirstOccurrencesSurvive(duck, gen.files, gen.rows, result)
    expect(hashFiles(gen.files)).toEqual(inputHashes)
  })
})

describe('column metrics agree with pyarrow and pyiceberg', () => {
  test('lower/upper bounds (typed and Iceberg bytes), value and null counts of every primitive column', async () => {
    const r = await compactGeneration(gen.files.slice(0, 12), { outDir: path.join(tmp, 'out-metrics'), targetFileBytes: 1 << 20, batchBytes: 4 << 20 })
    const checked = expectMetricsMatchPyarrow(r.files)
    expect(checked).toBeGreaterThan(40)
  })
})

describe('transforms agree with pyiceberg', () => {
  // pyiceberg computes [bucket[4](session_id), day, month, year, hour of ts, truncate[12](cwd)]
  // for the distinct source values of every output file, in one python call.
  const PY = `
import sys, json
from pyiceberg.transforms import BucketTransform, HourTransform, DayTransform, MonthTransform, YearTransform, TruncateTransform
from pyiceberg.types import StringType, TimestamptzType
files = json.load(sys.stdin)
b = BucketTransform(4).transform(StringType()); t = TruncateTransform(12).transform(StringType())
ts = TimestamptzType()
d = DayTransform().transform(ts); m = MonthTransform().transform(ts); y = YearTransform().transform(ts); h = HourTransform().transform(ts)
out = []
for rows in files:
    out.append(sorted({json.dumps({"session_id_bucket": b(r["session_id"]), "ts_day": d(int(r["ts_us"])), "ts_month": m(int(r["ts_us"])),
                                   "ts_year": y(int(r["ts_us"])), "ts_hour": h(int(r["ts_us"])), "cwd_trunc": t(r["cwd"])}, sort_keys=True) for r in rows}))
print(json.dumps(out))
`
  async function pyiceberg(paths) {
    const perFile = []
    for (const p of paths) perFile.push(await duck.q(`SELECT DISTINCT session_id, epoch_us(ts)::VARCHAR AS ts_us, cwd FROM read_parquet('${p}')`))
    const out = JSON.parse(execFileSync('python3', ['-c', PY], { input: JSON.stringify(perFile), encoding: 'utf8', maxBuffer: 64 << 20 }))
    return out.map(tuples => tuples.map(t => JSON.parse(t)))
  }
  const pick = (o, keys) => Object.fromEntries(keys.map(k => [k, o[k]]))

  test.each([
    [[{ column: 'session_id', transform: 'bucket[4]' }, { column: 'ts', transform: 'day' }, { column: 'cwd', transform: 'truncate[12]' }],
      ['session_id_bucket', 'ts_day', 'cwd_trunc'], 48],
    [[{ column: 'ts', transform: 'hour' }, { column: 'ts', transform: 'month' }, { column: 'ts', transform: 'year' }],
      ['ts_hour', 'ts_month', 'ts_year'], 12],
  ])('%j: every file holds one tuple, equal to pyiceberg\'s transform of its rows', async (spec, names, nFiles) => {
    const files = gen.files.slice(0, nFiles)
    const r = await compactGeneration(files, { outDir: path.join(tmp, `out-${names.join('-')}`), partitionBy: spec })
    expect(r.files.length).toBeGreaterThan(1)
    const expected = await pyiceberg(r.files.map(f => f.path))
    const seen = new Set()
    for (const [i, f] of r.files.entries()) {
      expect(Object.keys(f.partition)).toEqual(names)
      const tuples = new Set(expected[i].map(t => JSON.stringify(pick(t, names))))
      expect([...tuples]).toEqual([JSON.stringify(f.partition)])
      seen.add(JSON.stringify(f.partition))
    }
    expect(seen.size).toBe(r.files.length) // one tuple, one file (the default target is far away)
    expect(r.rowsWritten).toBe(r.rowsRead)
    expect(r.rowsRead).toBe(gen.fileRows.slice(0, nFiles).reduce((a, b) => a + b, 0))
  })
})

describe('row groups holding several tuples', () => {
  test('are split by tuple: no output spans two tuples and every row survives', async () => {
    // DuckDB writes files whose row groups mix tuples (it has its own, consistent schema).
    const dir = path.join(tmp, 'mixed')
    fs.mkdirSync(dir)
    const mixed = []
    for (let i = 0; i < 3; i++) {
      const f = path.join(dir, `mixed-${i}.parquet`)
      const part = gen.files.slice(i * 4, i * 4 + 4)
      // (without the VARIANT columns: DuckDB shreds them into a per-file schema)
      await duck.q(`COPY (SELECT * EXCLUDE (${VARIANTS.join(', ')}) FROM read_parquet(${sqlList(part)}) ORDER BY _hyp_cache_row_id)
        TO '${f}' (FORMAT parquet, ROW_GROUP_SIZE 64)`)
      mixed.push(f)
    }
    const r = await compactGeneration(mixed, { outDir: path.join(dir, 'out'), partitionBy: [{ column: 'session_id' }] })
    const [{ n }] = await duck.q(`SELECT count(DISTINCT session_id)::INT AS n FROM read_parquet(${sqlList(mixed)})`)
    expect(r.files).toHaveLength(n)
    for (const f of r.files) {
      const inFile = await duck.q(`SELECT DISTINCT session_id FROM read_parquet('${f.path}')`)
      expect(inFile).toEqual([f.partition])
    }
    const [a] = await duck.q(`SELECT count(*)::INT AS n, sum(hash(_hyp_cache_row_id))::VARCHAR AS h FROM read_parquet(${sqlList(mixed)})`)
    const [b] = await duck.q(`SELECT count(*)::INT AS n, sum(hash(_hyp_cache_row_id))::VARCHAR AS h FROM read_parquet(${sqlList(r.files.map(f => f.path))})`)
    expect(b).toEqual(a)
  })
})
