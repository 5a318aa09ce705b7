'use strict'
// Core behaviour of compactGeneration on a production-shaped partition: many small files become
// few files near the target, every row survives, and the result describes the files on disk.
// Expected values come from the inputs (fixture generator, hyparquet, DuckDB) and the README's contract, never
// from a previous run of the addon.

const fs = require('fs')
const path = require('path')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { openDuck } = require('./helpers/duck')
const { makeTmpDir, removeDir, hashFiles, ourFiles, totalSize } = require('./helpers/fsutil')
const { multisetDiff, outputPaths } = require('./helpers/assertions')

const MiB = 1024 * 1024
const TARGET = 1 * MiB
const BATCH_BYTES = 4 * MiB

let tmp
let duck
let gen // fixture: { files, rows, bytes, schema, ... }
let genDefaults // the generator's default partition (2,000 rows, 40 files, 4 tuples, seed 1)
let inputHashes
let split // { outDir, result, events, eventsAtResolve, paths }

async function runWithProgress(files, opts) {
  const events = []
  const result = await compactGeneration(files, { ...opts, onProgress: e => events.push({ ...e }) })
  const eventsAtResolve = events.length
  return { result, events, eventsAtResolve }
}

beforeAll(async () => {
  tmp = makeTmpDir('compact')
  // 3,000 rows over 40 small files, 4 interleaved tuples, 2% reused row ids (no dedupe is
  // asked for, so duplicates must survive like any other row).
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 3000, files: 40, tuples: 4, seed: 7, novelty: 0.1, dupRate: 0.02 })
  inputHashes = hashFiles(gen.files)
  genDefaults = await hyp.generate({ dir: path.join(tmp, 'in-defaults') })
  duck = await openDuck()
  const outDir = path.join(tmp, 'split')
  const run = await runWithProgress(gen.files, { outDir, targetFileBytes: TARGET, batchBytes: BATCH_BYTES, fileNamePrefix: 'split' })
  split = { outDir, ...run, paths: run.result.files.map(f => f.path) }
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

describe('many small files become few files near the target', () => {
  test('the fixture is many small files whose total exceeds the target', () => {
    expect(gen.files).toHaveLength(40)
    expect(gen.bytes).toBe(totalSize(gen.files))
    expect(Math.max(...gen.files.map(f => fs.statSync(f).size))).toBeLessThan(TARGET)
    expect(gen.bytes).toBeGreaterThan(2 * TARGET)
  })

  test('outputs are few: more than one (they exceed the target) and no more than ceil(bytes / target)', () => {
    const n = split.result.files.length
    const written = totalSize(split.paths)
    expect(n).toBeGreaterThan(1)
    expect(n).toBeLessThan(gen.files.length / 4)
    expect(n).toBeLessThanOrEqual(Math.ceil(written / TARGET))
  })

  test('no file exceeds the target by more than one row group', async () => {
    const report = []
    for (const f of split.paths) {
      const meta = await duck.metadata(f)
      const rgBytes = new Map()
      for (const m of meta) rgBytes.set(m.rg, (rgBytes.get(m.rg) || 0) + Number(m.size))
      const largestRowGroup = Math.max(...rgBytes.values())
      const size = fs.statSync(f).size
      report.push({ file: path.basename(f), size, rowGroups: rgBytes.size, largestRowGroup, limit: TARGET + largestRowGroup })
    }
    const over = report.filter(r => r.size > r.limit)
    expect(over).toEqual([])
  })

  test('files are of near-equal size (smallest at least half the largest)', () => {
    const sizes = split.paths.map(f => fs.statSync(f).size)
    expect(sizes.length).toBeGreaterThan(1)
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(Math.max(...sizes) / 2)
  })

  test('batchBytes forces several row groups per file; batchRows caps a row group', async () => {
    for (const f of split.paths) {
      const fm = await duck.fileMetadata(f)
      expect(fm.numRowGroups).toBeGreaterThan(1)
    }
    const outDir = path.join(tmp, 'rows-cap')
    const r = await compactGeneration(gen.files, { outDir, batchRows: 250, fileNamePrefix: 'cap' })
    const counts = []
    for (const f of r.files) {
      const meta = await duck.metadata(f.path)
      for (const m of meta.filter(x => x.col === 0)) counts.push(Number(m.rg_rows))
    }
    expect(counts.reduce((a, b) => a + b, 0)).toBe(gen.rows)
    expect(Math.max(...counts)).toBeLessThanOrEqual(250)
    removeDir(outDir)
  })

  test('with the default target (128 MiB) the whole partition becomes one file', async () => {
    const outDir = path.join(tmp, 'one')
    const r = await compactGeneration(gen.files, { outDir, fileNamePrefix: 'one' })
    expect(r.files).toHaveLength(1)
    expect(r.files[0].recordCount).toBe(gen.rows)
    removeDir(outDir)
  })

  // Measure the bytes one file holding everything takes with these options, then ask for a
  // target a little above that: the contract ("as few files as targetFileBytes allows") leaves
  // room for one file only.
  test.each([
    ['3,000 rows, novelty 0.1, seed 7', 1.05],
    ['3,000 rows, novelty 0.1, seed 7', 1.10],
    ['generator defaults (2,000 rows, 40 files, seed 1)', 1.05],
    ['generator defaults (2,000 rows, 40 files, seed 1)', 1.10],
  ])('an output that fits in one target-sized file is written as one file (%s, target = %f x its size)', async (fixture, margin) => {
    const files = fixture.startsWith('generator defaults') ? genDefaults.files : gen.files
    const tag = `${fixture.startsWith('generator') ? 'd' : 'a'}-${margin}`
    const probeDir = path.join(tmp, `fit-probe-${tag}`)
    const probe = await compactGeneration(files, { outDir: probeDir, fileNamePrefix: 'probe' })
    expect(probe.files).toHaveLength(1)
    const single = probe.files[0].fileSizeInBytes
    const target = Math.ceil(single * margin)
    const outDir = path.join(tmp, `fit-${tag}`)
    const r = await compactGeneration(files, { outDir, targetFileBytes: target, fileNamePrefix: 'fit' })
    // one string, so a failure prints every number: target, single-file size, sizes written
    const summary = `target ${target}, single file ${single}, wrote ${r.files.length} file(s): ${r.files.map(f => f.fileSizeInBytes).join(' + ')}`
    expect(summary).toMatch(/wrote 1 file\(s\): \d+$/)
    removeDir(probeDir)
    removeDir(outDir)
  })
})

describe('every row survives', () => {
  test('hyparquet: the outputs hold exactly the input rows (multiset of id + whole-row digest)', async () => {
    const input = await hyp.rowDigests(gen.files)
    const output = await hyp.rowDigests(split.paths)
    expect(input.count).toBe(gen.rows)
    expect(output.columns).toEqual(input.columns)
    expect(input.columns).toHaveLength(56)
    expect(output.count).toBe(input.count)
    expect(multisetDiff(input.entries, output.entries)).toEqual({ missing: 0, extra: 0, missingSample: [], extraSample: [] })
    // the fixture does carry duplicate ids, and they all survive
    const ids = output.entries.map(e => e.split(' ')[0])
    expect(new Set(ids).size).toBeLessThan(ids.length)
  })

  test('DuckDB: count(*), id hash, exact µs timestamps, whole-row hash and per-column hashes match', async () => {
    const input = await duck.checksum(gen.files)
    const output = await duck.checksum(split.paths)
    expect(Number(input.n)).toBe(gen.rows)
    expect(output).toEqual(input)
  })

  test('inputs are left byte-identical', () => {
    expect(hashFiles(gen.files)).toEqual(inputHashes)
  })
})

describe('dedupeBy', () => {
  test('keeps exactly the first occurrence of each id, in files order then row order (checked by DuckDB)', async () => {
    const outDir = path.join(tmp, 'dedupe')
    const r = await compactGeneration(gen.files, { outDir, dedupeBy: '_hyp_cache_row_id', targetFileBytes: TARGET, batchBytes: BATCH_BYTES })
    const paths = r.files.map(f => f.path)
    const expected = await duck.firstOccurrenceChecksum(gen.files, '_hyp_cache_row_id')
    const all = await duck.checksum(gen.files)
    const output = await duck.checksum(paths)
    // the fixture has duplicates, so dropping them is visible
    expect(Number(expected.n)).toBeLessThan(Number(all.n))
    const { perColumn, ...main } = output
    expect(main).toEqual(expected)
    expect(r.rowsRead).toBe(gen.rows)
    expect(r.duplicatesDropped).toBe(gen.rows - Number(expected.n))
    expect(r.rowsWritten).toBe(Number(expected.n))
    expect(r.files.reduce((n, f) => n + f.recordCount, 0)).toBe(Number(expected.n))
    const [{ dups }] = await duck.q(`SELECT (count(*) - count(DISTINCT _hyp_cache_row_id))::INT AS dups FROM read_parquet(${JSON.stringify(paths).replace(/"/g, "'")})`)
    expect(dups).toBe(0)
    expect(hashFiles(gen.files)).toEqual(inputHashes)
  })

  test('null keys: every null-key row survives, in the oracle as in the output (DuckDB)', async () => {
    const outDir = path.join(tmp, 'dedupe-nulls')
    const copies = [0, 1].map(k => path.join(tmp, `nulls-${k}.parquet`))
    for (const to of copies) {
      await duck.q(`COPY (SELECT * EXCLUDE (file_row_number) REPLACE (CASE WHEN file_row_number % 3 = 0 THEN NULL ELSE _hyp_cache_row_id END AS _hyp_cache_row_id)
        FROM read_parquet('${gen.files[0]}', file_row_number = true)) TO '${to}' (FORMAT parquet)`)
    }
    const r = await compactGeneration(copies, { outDir, dedupeBy: '_hyp_cache_row_id' })
    const expected = await duck.firstOccurrenceChecksum(copies, '_hyp_cache_row_id')
    const [{ nulls }] = await duck.q(`SELECT count(*)::INT AS nulls FROM read_parquet('${gen.files[0]}', file_row_number = true) WHERE file_row_number % 3 = 0`)
    expect(nulls).toBeGreaterThan(1)
    // the second copy's non-null keys are dropped; every null-key row of both copies stays
    expect(Number(expected.n)).toBe(gen.fileRows[0] + nulls)
    const { perColumn, ...main } = await duck.checksum(r.files.map(f => f.path))
    expect(main).toEqual(expected)
    expect(r.duplicatesDropped).toBe(gen.fileRows[0] - nulls)
  })

  test('a later file repeating an earlier file whole is dropped whole', async () => {
    const outDir = path.join(tmp, 'dedupe-repeat')
    const copy = path.join(tmp, 'repeat-of-first.parquet')
    fs.copyFileSync(gen.files[0], copy)
    const files = [gen.files[0], gen.files[1], copy]
    const r = await compactGeneration(files, { outDir, dedupeBy: '_hyp_cache_row_id' })
    const expected = await duck.firstOccurrenceChecksum(files, '_hyp_cache_row_id')
    const { perColumn, ...main } = await duck.checksum(r.files.map(f => f.path))
    expect(main).toEqual(expected)
    expect(r.duplicatesDropped).toBeGreaterThanOrEqual(gen.fileRows[0])
  })
})

describe('result fields', () => {
  test('totals', () => {
    const r = split.result
    expect(r.inputFiles).toBe(gen.files.length)
    expect(r.rowsRead).toBe(gen.rows)
    expect(r.rowsWritten).toBe(gen.rows)
    expect(r.duplicatesDropped).toBe(0)
    expect(r.bytesRead).toBe(gen.bytes)
    expect(r.bytesWritten).toBe(totalSize(split.paths))
    expect(r.elapsedMs).toBeGreaterThan(0)
  })

  test('files[]: path under outDir, .parquet, recordCount and fileSizeInBytes match the files', async () => {
    const paths = outputPaths(split.result, split.outDir)
    expect(paths.every(p => p.endsWith('.parquet'))).toBe(true)
    let sum = 0
    for (const f of split.result.files) {
      const fm = await duck.fileMetadata(f.path)
      expect(f.recordCount).toBe(fm.numRows)
      expect(f.fileSizeInBytes).toBe(fs.statSync(f.path).size)
      expect(typeof f.partition).toBe('object')
      expect(f.sortOrderId).toBe(0)
      sum += f.recordCount
    }
    expect(sum).toBe(gen.rows)
  })

  test('rowGroups and splitOffsets agree with DuckDB parquet_metadata', async () => {
    for (const f of split.result.files) {
      const meta = await duck.metadata(f.path)
      const byRg = new Map()
      for (const m of meta) {
        const start = Math.min(Number(m.data_off), m.dict_off === null ? Infinity : Number(m.dict_off))
        byRg.set(m.rg, Math.min(byRg.get(m.rg) ?? Infinity, start))
      }
      const expected = [...byRg.entries()].sort((a, b) => a[0] - b[0]).map(([, off]) => off)
      expect(f.rowGroups).toBe(byRg.size)
      expect(f.splitOffsets).toEqual(expected)
      expect(f.splitOffsets[0]).toBe(4) // right after the 'PAR1' magic
      expect([...f.splitOffsets].sort((a, b) => a - b)).toEqual(f.splitOffsets)
    }
  })

  test('columns: one per top-level field, with field id, sizes and counts that match the file', async () => {
    const fields = gen.schema.fields
    for (const f of split.result.files) {
      expect(f.columns.map(c => c.name)).toEqual(fields.map(x => x.name))
      expect(f.columns.map(c => c.fieldId)).toEqual(fields.map(x => x.id))
      const meta = await duck.metadata(f.path)
      const sizeByField = {}
      for (const m of meta) {
        const top = m.path.split(', ')[0]
        sizeByField[top] = (sizeByField[top] || 0) + Number(m.size)
      }
      const nulls = await duck.nullCounts(f.path, fields.map(x => x.name))
      for (const c of f.columns) {
        expect({ name: c.name, valueCount: c.valueCount, nullValueCount: c.nullValueCount, columnSizeBytes: c.columnSizeBytes })
          .toEqual({ name: c.name, valueCount: f.recordCount, nullValueCount: nulls[c.name], columnSizeBytes: sizeByField[c.name] })
      }
    }
  })
})

describe('onProgress', () => {
  test('is called with { phase, rowsRead, rowsWritten, bytesWritten, filesWritten }', () => {
    const { events } = split
    expect(events.length).toBeGreaterThanOrEqual(2)
    for (const e of events) {
      expect(e).toEqual({
        phase: expect.any(String),
        rowsRead: expect.any(Number),
        rowsWritten: expect.any(Number),
        bytesWritten: expect.any(Number),
        filesWritten: expect.any(Number),
      })
      expect(['plan', 'write', 'verify', 'done']).toContain(e.phase)
    }
    expect(events[0].phase).toBe('plan')
  })

  test('counters never go back; rowsWritten ends at the total, before the Promise resolves', () => {
    const { events, eventsAtResolve, result } = split
    for (const k of ['rowsRead', 'rowsWritten', 'bytesWritten', 'filesWritten']) {
      const seq = events.map(e => e[k])
      expect(seq).toEqual([...seq].sort((a, b) => a - b))
    }
    const last = events[events.length - 1]
    expect(last).toEqual({
      phase: 'done',
      rowsRead: gen.rows,
      rowsWritten: gen.rows,
      bytesWritten: result.bytesWritten,
      filesWritten: result.files.length,
    })
    expect(eventsAtResolve).toBe(events.length)
  })
})

describe('output naming and outDir', () => {
  test('fileNamePrefix is honored: <prefix>-<n>.parquet, nothing else left in outDir', () => {
    const names = fs.readdirSync(split.outDir).sort()
    expect(names).toEqual(split.paths.map(p => path.basename(p)).sort())
    for (const n of names) expect(n).toMatch(/^split-\d+\.parquet$/)
    const numbers = names.map(n => Number(n.match(/-(\d+)\.parquet$/)[1]))
    expect(new Set(numbers).size).toBe(numbers.length)
  })

  test('without a prefix, two calls into one outDir use distinct random prefixes and keep foreign files', async () => {
    const outDir = path.join(tmp, 'shared')
    fs.mkdirSync(outDir)
    fs.writeFileSync(path.join(outDir, 'foreign.txt'), 'not ours')
    const few = gen.files.slice(0, 6)
    const a = await compactGeneration(few, { outDir })
    const b = await compactGeneration(few, { outDir })
    const prefix = p => path.basename(p).replace(/-\d+\.parquet$/, '')
    const pa = new Set(a.files.map(f => prefix(f.path)))
    const pb = new Set(b.files.map(f => prefix(f.path)))
    expect(pa.size).toBe(1)
    expect(pb.size).toBe(1)
    expect([...pa][0]).not.toBe([...pb][0])
    const names = fs.readdirSync(outDir).sort()
    expect(names).toEqual(['foreign.txt', ...a.files.map(f => path.basename(f.path)), ...b.files.map(f => path.basename(f.path))].sort())
    expect(fs.readFileSync(path.join(outDir, 'foreign.txt'), 'utf8')).toBe('not ours')
    removeDir(outDir)
  })

  test('a missing (nested) outDir is created', async () => {
    const outDir = path.join(tmp, 'nested', 'a', 'b')
    const r = await compactGeneration(gen.files.slice(0, 4), { outDir, fileNamePrefix: 'n' })
    expect(fs.statSync(outDir).isDirectory()).toBe(true)
    expect(r.files.length).toBe(1)
    expect(fs.existsSync(r.files[0].path)).toBe(true)
    removeDir(path.join(tmp, 'nested'))
  })

  test('verify: false still writes every row', async () => {
    const outDir = path.join(tmp, 'noverify')
    const r = await compactGeneration(gen.files, { outDir, verify: false, fileNamePrefix: 'nv', targetFileBytes: TARGET, batchBytes: BATCH_BYTES })
    const c = await duck.checksum(r.files.map(f => f.path))
    expect(Number(c.n)).toBe(gen.rows)
    removeDir(outDir)
  })
})
