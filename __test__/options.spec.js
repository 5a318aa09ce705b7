'use strict'
// A property test over the options on valid files: `batchBytes`, `batchRows`, `threads` and
// `targetFileBytes` at their extremes (the smallest legal values and large ones), with and without
// `sortBy`, `partitionBy` and `dedupeBy`, on inputs written by pyarrow (a dictionary-encoded
// string column with nulls and a row group where it is all null, a duration, a UTC timestamp, a
// list) and by hyparquet-writer. A seeded random sample of the combinations, plus the ones issue
// 50 found panicking. Every call either succeeds with exactly the rows and Arrow types pyarrow
// reads from the inputs (minus dedupe's drops; pyarrow compares the multisets) or ends in a
// documented typed error leaving nothing in outDir — never ERR_INTERNAL.

const fs = require('fs')
const path = require('path')
const { execFileSync } = require('child_process')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { makeTmpDir, removeDir, hashFiles, ourFiles } = require('./helpers/fsutil')

const OPTIONS_PY = path.join(__dirname, 'helpers', 'options.py')
const KiB = 1024
const MiB = 1024 * KiB
/** Typed errors a legal combination of options may end in (the options contract). */
const DOCUMENTED = new Set(['ERR_INVALID_OPTIONS'])

/** options.py `command` with `arg`: a directory, or a JSON value (passed on stdin). */
function py(command, arg) {
  const [args, input] = typeof arg === 'string' && !arg.startsWith('[') && !arg.startsWith('{') ? [[arg], ''] : [[], arg]
  return JSON.parse(execFileSync('python3', [OPTIONS_PY, command, ...args], { encoding: 'utf8', input, maxBuffer: 256 << 20 }))
}

/** mulberry32: a small seeded generator, so a failing combination can be replayed. */
function rng(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const SEED = 50
const SAMPLE = 22
// The smallest legal values and large ones (options.rs: batchBytes >= 1 KiB, batchRows >= 1,
// threads 1..1024, targetFileBytes >= 1 KiB).
const SPACE = {
  batchBytes: [1 * KiB, 2 * KiB, 4 * KiB, 64 * KiB, 1 * MiB, 1024 * MiB],
  batchRows: [1, 3, 64, 10000, 1e9],
  threads: [1, 2, 1024],
  targetFileBytes: [1 * KiB, 8 * KiB, 1 * MiB, Number.MAX_SAFE_INTEGER],
  sortBy: [null, [{ column: 'ts' }], [{ column: 'k', descending: true }, { column: 'id' }], [{ column: 's', nullsFirst: true }]],
  partitionBy: [null, [{ column: 'p' }], [{ column: 'k', transform: 'bucket[3]' }]],
  dedupeBy: [null, 'k'],
}

let tmp
let sets // name -> { files, rows, hashes }
let n = 0

/** The combinations issue 50 found ending in ERR_INTERNAL, then a seeded sample. */
function combinations() {
  const fixed = [
    { set: 'pyarrow', batchBytes: 1 * KiB, sortBy: [{ column: 'ts' }] },
    { set: 'pyarrow', batchBytes: 2 * KiB, sortBy: [{ column: 'ts' }] },
    { set: 'pyarrow', batchBytes: 64 * KiB, partitionBy: [{ column: 'p' }] },
    { set: 'pyarrow', batchBytes: 1 * KiB, batchRows: 1, threads: 1, targetFileBytes: 1 * KiB },
  ]
  const r = rng(SEED)
  const pick = values => values[Math.floor(r() * values.length)]
  const sampled = []
  for (let i = 0; i < SAMPLE; i++) {
    const c = { set: i % 3 === 2 ? 'hyparquet' : 'pyarrow' }
    for (const [option, values] of Object.entries(SPACE)) {
      const v = pick(values)
      if (v !== null) c[option] = v
    }
    sampled.push(c)
  }
  return [...fixed, ...sampled]
}

/** hyparquet-writer inputs: dictionary-encoded strings with nulls (its default where it pays). */
async function hyparquetInputs(dir) {
  fs.mkdirSync(dir, { recursive: true })
  const r = rng(7)
  const files = []
  let id = 0
  for (const [f, rows] of [[0, 110], [1, 150], [2, 60]]) {
    const column = (name, type, make, extra = {}) => ({ name, type, nullable: true, data: Array.from({ length: rows }, make), ...extra })
    const ids = Array.from({ length: rows }, () => id++)
    const columnData = [
      { name: 'id', type: 'INT64', nullable: false, data: ids, bigint: true },
      column('k', 'INT64', () => (r() < 0.05 ? null : Math.floor(r() * 300)), { bigint: true }),
      column('ts', 'INT64', () => Math.floor(r() * 1e12), { bigint: true }),
      column('cat', 'STRING', (_v, i) => (i < 40 || r() < 0.5 ? null : `category-${Math.floor(r() * 5)}`)),
      column('s', 'STRING', () => (r() < 0.2 ? null : `v${Math.floor(r() * 1e9).toString(16)}`)),
      column('p', 'STRING', () => ['east', 'west', 'north', null][Math.floor(r() * 4)]),
    ]
    const file = path.join(dir, `hyp-${f}.parquet`)
    await hyp.writeColumns(file, { columnData, rowGroupSize: 40 })
    files.push(file)
  }
  return { files, rows: id }
}

beforeAll(async () => {
  tmp = makeTmpDir('options')
  const pyarrow = py('gen', path.join(tmp, 'pyarrow'))
  const hyparquet = await hyparquetInputs(path.join(tmp, 'hyparquet'))
  sets = { pyarrow, hyparquet }
  for (const s of Object.values(sets)) s.hashes = hashFiles(s.files)
})

afterAll(() => removeDir(tmp))

describe('the inputs (sanity)', () => {
  test('pyarrow: a dictionary column with nulls, a chunk of it all null (an empty dictionary), a duration read through ARROW:schema', () => {
    const [cmp] = py('compare', JSON.stringify([{ inputs: sets.pyarrow.files, outputs: sets.pyarrow.files }]))
    expect(cmp).toMatchObject({ expected: sets.pyarrow.rows, got: sets.pyarrow.rows, missing: 0, extra: 0 })
    expect(cmp.inTypes).toHaveLength(1)
    expect(cmp.inTypes[0]).toMatch(/cat: dictionary<values=string, indices=int32/)
    expect(cmp.inTypes[0]).toMatch(/dur: duration\[us\]/)
    const chunk = JSON.parse(execFileSync('python3', ['-c', `
import sys, json, pyarrow.parquet as pq
c = pq.ParquetFile(sys.argv[1]).metadata.row_group(0).column(3)
print(json.dumps({"nulls": c.statistics.null_count, "values": c.num_values, "dict": c.has_dictionary_page}))`, sets.pyarrow.files[0]], { encoding: 'utf8' }))
    expect(chunk).toEqual({ nulls: chunk.values, values: chunk.values, dict: true })
  })

  test('the comparison sees rows missing, dedupe drops and other types (it can fail)', () => {
    const [fewer, deduped, other] = py('compare', JSON.stringify([
      { inputs: sets.pyarrow.files, outputs: sets.pyarrow.files.slice(1) },
      { inputs: sets.pyarrow.files, outputs: sets.pyarrow.files, dedupeBy: 'k' },
      { inputs: sets.hyparquet.files, outputs: sets.pyarrow.files },
    ]))
    expect(fewer.missing).toBeGreaterThan(0)
    expect(fewer.extra).toBe(0)
    expect(deduped.expected).toBeLessThan(sets.pyarrow.rows)
    expect(deduped.extra).toBe(sets.pyarrow.rows - deduped.expected)
    expect(other.inTypes).not.toEqual(other.outTypes)
  })
})

describe(`options at their extremes (seed ${SEED})`, () => {
  const cases = combinations()
  const runs = [] // per case: { result } or { error }, then pyarrow's comparison
  beforeAll(async () => {
    for (const c of cases) {
      const { set, ...options } = c
      const outDir = path.join(tmp, `out-${++n}`)
      try {
        const result = await compactGeneration(sets[set].files, { outDir, ...options })
        runs.push({ result, outputs: result.files.map(f => f.path) })
      } catch (err) {
        runs.push({ error: { code: err.code, message: err.message }, left: fs.existsSync(outDir) ? ourFiles(outDir) : [] })
      }
    }
    // one pyarrow process compares them all
    const specs = runs.map((r, i) => ({ inputs: sets[cases[i].set].files, outputs: r.outputs || [], dedupeBy: cases[i].dedupeBy }))
    const compared = py('compare', JSON.stringify(specs))
    compared.forEach((cmp, i) => (runs[i].cmp = cmp))
  })

  test('the inputs are untouched', () => {
    for (const s of Object.values(sets)) expect(hashFiles(s.files)).toEqual(s.hashes)
  })

  test.each(cases.map((c, i) => [i, JSON.stringify(c)]))('#%i %s', i => {
    const { result, error, left, cmp } = runs[i]
    if (error) {
      // a documented typed error, nothing left behind — never ERR_INTERNAL
      expect(error.code).not.toBe('ERR_INTERNAL')
      expect({ ...error, documented: DOCUMENTED.has(error.code) }).toEqual({ ...error, documented: true })
      expect(left).toEqual([])
      return
    }
    expect(cmp).toMatchObject({ missing: 0, extra: 0, got: cmp.expected })
    expect(cmp.outTypes).toEqual(cmp.inTypes)
    expect(result.rowsWritten).toBe(cmp.expected)
  })
})

describe('ARROW:schema in the outputs describes their own columns (issue 50)', () => {
  let files
  beforeAll(() => {
    files = py('meta', path.join(tmp, 'meta'))
  })
  /** Compacts `inputs`; pyarrow's reading of the outputs (types, rows) or of the first one's error. */
  async function compactAndRead(inputs) {
    const result = await compactGeneration(inputs, { outDir: path.join(tmp, `out-${++n}`) })
    const read = py('read', JSON.stringify(result.files.map(f => f.path)))
    for (const r of read) expect(r.error).toBeUndefined()
    return { types: [...new Set(read.map(r => r.types))], rows: read.flatMap(r => r.rows).map(r => JSON.parse(r)) }
  }

  test('int64 in one input, duration in the other: integers, not durations (the last input is not copied)', async () => {
    const [ints, durations] = py('read', JSON.stringify([files.ints, files.durations]))
    expect(ints.types).toMatch(/^x: int64/)
    expect(durations.types).toMatch(/^x: duration\[us\]/)
    const out = await compactAndRead([files.ints, files.durations])
    // (no agreement: the outputs are read from their Parquet schema alone)
    expect(out.types).toEqual(['x: int64\nts: timestamp[us, tz=UTC]'])
    expect(out.rows.map(r => r.x).sort()).toEqual([1, 2, 5, 6])
  })

  test('inputs that agree keep what Parquet cannot say: the duration and the time zone', async () => {
    const [durations] = py('read', JSON.stringify([files.durations]))
    const out = await compactAndRead([files.durations, files.durations2])
    expect(out.types).toEqual([durations.types])
    expect(out.types[0]).toBe('x: duration[us]\nts: timestamp[us, tz=Europe/Paris]')
    expect(out.rows.map(r => r.x).sort()).toEqual(durations.rows.concat(durations.rows).map(r => JSON.parse(r).x).sort())
  })

  test('a corrupt ARROW:schema in the last input: success, and pyarrow reads every row of the output', async () => {
    const [corrupt] = py('read', JSON.stringify([files.corrupt]))
    expect(corrupt.error).toMatch(/metadata/) // pyarrow cannot open the input itself
    const out = await compactAndRead([files.ints, files.corrupt])
    expect(out.types).toEqual(['x: int64\nts: timestamp[us, tz=UTC]'])
    expect(out.rows.map(r => r.x).sort()).toEqual([1, 2, 7, 8, 9])
  })
})
