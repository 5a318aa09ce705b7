'use strict'
// planCompaction: tuples and their files checked against DuckDB's reading of the same files;
// a compacted partition is not due again (facts passed by the caller, or read from footers);
// a wave of small files makes exactly its tuples due; order facts checked against pyarrow.

const fs = require('fs')
const path = require('path')
const { compactGeneration, planCompaction } = require('..')
const hyp = require('./helpers/hyp')
const { openDuck, sqlString, fileList } = require('./helpers/duck')
const { makeTmpDir, removeDir } = require('./helpers/fsutil')
const { expectCompactError } = require('./helpers/assertions')
const { execFileSync } = require('child_process')

const IDENTITY = ['session_id', 'conversation_id', 'cwd', 'date']
const partitionBy = IDENTITY.map(column => ({ column }))
const key = t => JSON.stringify(IDENTITY.map(c => t[c]))

let tmp
let duck
let gen

beforeAll(async () => {
  tmp = makeTmpDir('plan')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 2400, files: 48, tuples: 6, seed: 31 })
  duck = await openDuck()
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

/** Per tuple (in order of first appearance in `files`), the indexes of the files holding it. */
async function tuplesByDuckDB(files) {
  const order = files.map((f, i) => `(${sqlString(f)}, ${i})`).join(', ')
  const rows = await duck.q(`
    WITH o AS (SELECT * FROM (VALUES ${order}) AS o(fname, idx))
    SELECT ${IDENTITY.join(', ')}, list(DISTINCT o.idx ORDER BY o.idx) AS files, min(o.idx * 1000000 + r.file_row_number) AS first
    FROM read_parquet(${fileList(files)}, filename = true, file_row_number = true) AS r JOIN o ON r.filename = o.fname
    GROUP BY ALL ORDER BY first`)
  return rows.map(r => ({ tuple: key(r), files: r.files.map(Number) }))
}

describe('planning the generated partition', () => {
  let plan
  let expected
  beforeAll(async () => {
    plan = await planCompaction(gen.files, { partitionBy, targetFileBytes: 1 << 20 })
    expected = await tuplesByDuckDB(gen.files)
  })

  test('one group per tuple, in order of first appearance, holding the files DuckDB finds it in', () => {
    expect(plan.paths).toEqual(gen.files)
    expect(plan.groups.map(g => key(g.partition))).toEqual(expected.map(e => e.tuple))
    for (const [i, g] of plan.groups.entries()) {
      expect([...g.rewrite, ...g.keep].sort((a, b) => a - b)).toEqual(expected[i].files)
    }
  })

  test('small files make every tuple due, files spanning tuples are rewritten in each', () => {
    const spanning = new Set()
    const seen = new Map()
    for (const e of expected) for (const f of e.files) seen.set(f, (seen.get(f) || 0) + 1)
    for (const [f, n] of seen) if (n > 1) spanning.add(f)
    expect(plan.due).toBe(true)
    for (const g of plan.groups) {
      expect(g.action).toBe('rewrite')
      expect(g.keep).toEqual([])
      expect(g.reasons.includes('spans-tuples')).toBe(g.rewrite.some(f => spanning.has(f)))
      expect(g.expectedFiles).toBeGreaterThanOrEqual(1)
    }
    expect(plan.rewriteFiles).toBe(gen.files.length)
    expect(plan.keepFiles).toBe(0)
    const bytes = gen.files.reduce((s, f) => s + fs.statSync(f).size, 0)
    expect(plan.rewriteBytes).toBe(bytes)
  })
})

describe('a compacted partition converges', () => {
  let result
  let outs
  beforeAll(async () => {
    result = await compactGeneration(gen.files, { outDir: path.join(tmp, 'out'), partitionBy, sortBy: [{ column: 'ts' }], sortOrderId: 1 })
    outs = result.files.map(f => f.path)
  })

  test('planning the outputs from their footers finds nothing due, with the tuples DuckDB reads', async () => {
    const plan = await planCompaction(outs, { partitionBy, sortBy: [{ column: 'ts' }] })
    expect(plan.due).toBe(false)
    expect(plan.groups.map(g => key(g.partition))).toEqual((await tuplesByDuckDB(outs)).map(e => e.tuple))
    expect(plan.groups.every(g => g.action === 'keep' && g.reasons.length === 0 && g.rewrite.length === 0)).toBe(true)
    expect(plan.keepFiles).toBe(outs.length)
  })

  test('with the facts passed as the manifests record them, no file is opened', async () => {
    const files = result.files.map((f, i) => ({
      path: path.join(tmp, 'absent', `${i}.parquet`),
      fileSizeInBytes: BigInt(f.dataFile.file_size_in_bytes),
      recordCount: f.dataFile.record_count,
      partition: f.dataFile.partition,
      sortOrderId: f.sortOrderId,
    }))
    const plan = await planCompaction(files, { partitionBy, sortBy: [{ column: 'ts' }], sortOrderId: 1 })
    expect(plan.due).toBe(false)
    expect(plan.groups.map(g => key(g.partition))).toEqual(result.files.map(f => key(f.partition)))
    // forcing one file makes its tuple, and only its tuple, due
    files[1].rewrite = true
    const forced = await planCompaction(files, { partitionBy, sortBy: [{ column: 'ts' }], sortOrderId: 1 })
    expect(forced.groups.filter(g => g.action === 'rewrite').map(g => [g.reasons, g.rewrite])).toEqual([[['forced'], [1]]])
  })

  test('the inputs are not known sorted (pyarrow finds no sorting columns); the outputs are', async () => {
    const script = `
import sys, json, pyarrow.parquet as pq
out = []
for f in sys.argv[1:]:
    md = pq.ParquetFile(f).metadata
    out.append([[(c.column_index, c.descending) for c in (md.row_group(i).sorting_columns or ())] for i in range(md.num_row_groups)])
print(json.dumps(out))`
    const [inputSort, outputSort] = JSON.parse(execFileSync('python3', ['-c', script, gen.files[0], outs[0]], { encoding: 'utf8' }))
    expect(inputSort.flat()).toEqual([])
    const ts = (await duck.q(`SELECT column_id::INT AS col FROM parquet_metadata(${sqlString(outs[0])}) WHERE path_in_schema = 'ts' LIMIT 1`))[0].col
    expect(outputSort.every(rg => rg[0][0] === ts && rg[0][1] === false)).toBe(true)
    const plan = await planCompaction(gen.files.slice(0, 1), { sortBy: [{ column: 'ts' }], minFileBytes: 0 })
    expect(plan.groups[0].reasons).toEqual(['unsorted'])
  })

  test('a wave of small files makes exactly its tuples due', async () => {
    const wave = []
    const chosen = [result.files[1], result.files[4]]
    fs.mkdirSync(path.join(tmp, 'wave'), { recursive: true })
    for (const [t, f] of chosen.entries()) {
      await duck.q(`CREATE OR REPLACE TEMP TABLE wave AS SELECT * FROM read_parquet(${sqlString(f.path)}) LIMIT 15`)
      for (let k = 0; k < 5; k++) {
        const to = path.join(tmp, 'wave', `t${t}-${k}.parquet`)
        await duck.q(`COPY (SELECT * FROM wave LIMIT 3 OFFSET ${k * 3}) TO ${sqlString(to)} (FORMAT parquet)`)
        wave.push(to)
      }
    }
    const plan = await planCompaction([...outs, ...wave], { partitionBy })
    const due = plan.groups.filter(g => g.action === 'rewrite')
    expect(due.map(g => key(g.partition))).toEqual(chosen.map(f => key(f.partition)))
    for (const g of due) expect(g.reasons).toEqual(['small-files'])
  })
})

describe('a planned rewrite', () => {
  let base
  let outs
  let wave
  let all
  let minFileBytes
  let due
  beforeAll(async () => {
    base = await compactGeneration(gen.files, { outDir: path.join(tmp, 'base'), partitionBy })
    outs = base.files.map(f => f.path)
    // A wave of small files for two tuples: the same rows again, written as many tiny files.
    const small = await compactGeneration(gen.files, { outDir: path.join(tmp, 'small'), partitionBy, targetFileBytes: 1024, batchRows: 4 })
    due = [base.files[0], base.files[2]].map(f => key(f.partition))
    wave = due.flatMap(t => small.files.filter(f => key(f.partition) === t).slice(0, 5).map(f => f.path))
    expect(wave).toHaveLength(10)
    all = [...outs, ...wave]
    const waveMax = Math.max(...wave.map(f => fs.statSync(f).size))
    const outMin = Math.min(...outs.map(f => fs.statSync(f).size))
    expect(waveMax).toBeLessThan(outMin)
    minFileBytes = waveMax + 1
  })

  test('rewrites only the due tuples, carries the rest with their dataFile, and converges', async () => {
    const opts = { partitionBy, minFileBytes }
    const plan = await planCompaction(all, opts)
    const rewritten = plan.groups.filter(g => g.action === 'rewrite')
    expect(rewritten.map(g => key(g.partition))).toEqual(due)
    for (const g of rewritten) expect(g.rewrite.every(i => i >= outs.length)).toBe(true)
    const outDir = path.join(tmp, 'planned')
    const r = await compactGeneration(all, { ...opts, outDir, plan, outLocation: 'file:///table/data/' })
    // only the wave was read
    const [{ n: waveRows }] = await duck.q(`SELECT count(*)::INT AS n FROM read_parquet(${fileList(wave)})`)
    expect(r.inputFiles).toBe(wave.length)
    expect(r.rowsRead).toBe(waveRows)
    expect(r.rowsWritten).toBe(waveRows)
    expect(r.files.map(f => key(f.partition))).toEqual(due)
    // every output is kept, linked into outDir (same inode), with the footer's dataFile
    expect(r.kept.map(k => k.input)).toEqual(outs.map((_, i) => i))
    for (const k of r.kept) {
      const from = base.files[k.input]
      expect(path.dirname(k.path)).toBe(outDir)
      expect(fs.statSync(k.path).ino).toBe(fs.statSync(from.path).ino)
      expect(k.dataFile.file_path).toBe(`file:///table/data/${path.basename(k.path)}`)
      expect({ ...k.dataFile, file_path: '' }).toEqual({ ...from.dataFile, file_path: '' })
      expect(k.partition).toEqual(from.partition)
    }
    // the new generation holds the kept and the rewritten rows (DuckDB), and is not due
    const now = fs.readdirSync(outDir).filter(f => f.endsWith('.parquet')).map(f => path.join(outDir, f))
    expect(now.sort()).toEqual([...r.files.map(f => f.path), ...r.kept.map(k => k.path)].sort())
    const [{ n: total }] = await duck.q(`SELECT count(*)::INT AS n FROM read_parquet(${fileList(now)})`)
    const [{ n: before }] = await duck.q(`SELECT count(*)::INT AS n FROM read_parquet(${fileList(all)})`)
    expect(total).toBe(before)
    expect((await planCompaction(now, opts)).due).toBe(false)
  })

  test('with dedupeBy, rewritten rows repeating a kept row are dropped and kept rows never are', async () => {
    const opts = { partitionBy, minFileBytes, dedupeBy: '_hyp_cache_row_id' }
    const plan = await planCompaction(all, opts)
    const outDir = path.join(tmp, 'planned-dedupe')
    const r = await compactGeneration(all, { ...opts, outDir, plan })
    const [{ n: waveRows }] = await duck.q(`SELECT count(*)::INT AS n FROM read_parquet(${fileList(wave)})`)
    // every wave row is a copy of a row of a kept file
    expect(r.duplicatesDropped).toBe(waveRows)
    expect(r.rowsWritten).toBe(0)
    expect(r.files).toEqual([])
    expect(r.kept).toHaveLength(outs.length)
  })

  test("keep: 'in-place' leaves kept files where they are; a plan for other files is refused", async () => {
    const plan = await planCompaction(all, { partitionBy, minFileBytes })
    const outDir = path.join(tmp, 'in-place')
    const r = await compactGeneration(all, { outDir, partitionBy, plan, keep: 'in-place' })
    expect(r.kept.map(k => k.path)).toEqual(outs)
    expect(r.kept.map(k => k.dataFile.file_path)).toEqual(outs)
    expect(fs.readdirSync(outDir).filter(f => f.endsWith('.parquet'))).toHaveLength(r.files.length)
    const other = path.join(tmp, 'other')
    await expectCompactError(() => compactGeneration(all.slice(1), { outDir: other, partitionBy, plan }), { code: 'ERR_INVALID_OPTIONS', mentions: ['plan'], outDir: other })
  })

  test('a plan that keeps everything writes nothing and carries every file', async () => {
    const plan = await planCompaction(outs, { partitionBy })
    expect(plan.due).toBe(false)
    const outDir = path.join(tmp, 'all-kept')
    const r = await compactGeneration(outs, { outDir, partitionBy, plan })
    expect(r.files).toEqual([])
    expect(r.inputFiles).toBe(0)
    expect(r.kept.map(k => k.input)).toEqual(outs.map((_, i) => i))
    expect(fs.readdirSync(outDir).sort()).toEqual(outs.map(f => path.basename(f)).sort())
  })
})

describe('bad planning input', () => {
  test('rules out of order, unknown keys and a path listed twice are ERR_INVALID_OPTIONS', async () => {
    await expectCompactError(() => planCompaction(gen.files, { targetFileBytes: 4096, minFileBytes: 8192 }), { code: 'ERR_INVALID_OPTIONS', mentions: ['minFileBytes'] })
    await expectCompactError(() => planCompaction(gen.files, { minInputFiles: 0 }), { code: 'ERR_INVALID_OPTIONS', mentions: ['minInputFiles'] })
    await expectCompactError(() => planCompaction(gen.files, { minFiles: 2 }), { code: 'ERR_INVALID_OPTIONS', mentions: ['minFiles'] })
    const twice = [gen.files[0], gen.files[1], gen.files[0]]
    await expectCompactError(() => planCompaction(twice, {}), { code: 'ERR_INVALID_OPTIONS', mentions: ['files[2]', 'files[0]'] })
    const outDir = path.join(tmp, 'twice')
    await expectCompactError(() => compactGeneration(twice, { outDir }), { code: 'ERR_INVALID_OPTIONS', mentions: ['files[2]'], outDir })
  })

  test('a missing file without facts is ERR_INPUT_NOT_FOUND', async () => {
    await expectCompactError(() => planCompaction([path.join(tmp, 'nope.parquet')], {}), { code: 'ERR_INPUT_NOT_FOUND' })
  })
})
