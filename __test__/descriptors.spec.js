'use strict'
// "The bound at any file count": thousands of small inputs whose `ts` ranges all overlap (as
// sessions interleave in a day), sorted by `ts`, in a process whose hard limit is 256 file
// descriptors (macOS's default soft limit). A merge holds at most half the descriptors left
// when the call starts, shared among the calls that may run at once, open as runs (an input's
// or a spilled run's descriptor each: under this limit fewer than 64) and a call at most 16
// more (the README): the
// descriptors the call adds to the idle process are counted while it runs
// (helpers/descriptors-call.js), and the outputs are read back with pyarrow — every input row
// once, in `ts` order.

const fs = require('fs')
const path = require('path')
const { execFileSync, spawnSync } = require('child_process')
const { makeTmpDir, removeDir, hashFiles, listTree } = require('./helpers/fsutil')

const ROOT = path.join(__dirname, '..')
const CALL = path.join(__dirname, 'helpers', 'descriptors-call.js')
const MOST_OPEN_RUNS = 64
const OTHER_DESCRIPTORS = 16
const FILES = 3000
const ROWS = 10

let tmp
let inputs

beforeAll(() => {
  tmp = makeTmpDir('descriptors')
  const dir = path.join(tmp, 'in')
  execFileSync('python3', [path.join(ROOT, 'bench', 'small-files.py'), '--files', String(FILES), '--rows', String(ROWS), '--seed', '48', '--out', dir])
  inputs = JSON.parse(fs.readFileSync(path.join(dir, 'list.json'), 'utf8')).files
  expect(inputs.length).toBe(FILES)
}, 120_000)

afterAll(() => removeDir(tmp))

/** The call in a child under `ulimit -n 256` (soft and hard). */
function callUnderLimit(opts) {
  const arg = path.join(tmp, `call-${path.basename(opts.outDir)}.json`)
  fs.writeFileSync(arg, JSON.stringify({ files: inputs, opts }))
  const r = spawnSync('sh', ['-c', 'ulimit -n 256 && exec "$0" "$@"', process.execPath, CALL, arg], { encoding: 'utf8', maxBuffer: 64 << 20 })
  if (r.error) throw r.error
  const last = r.stdout.trim().split('\n').pop()
  if (!last) throw new Error(`child printed nothing: status ${r.status}, signal ${r.signal}, stderr ${r.stderr.slice(-2000)}`)
  return JSON.parse(last)
}

/** pyarrow's reading of the outputs: rows, distinct ids, whether ts ascends, and the inputs' own counts. */
function readBack(outputs) {
  const script = `
import sys, json, pyarrow.parquet as pq, pyarrow as pa, pyarrow.compute as pc
outs = json.loads(sys.argv[1]); ins = json.load(open(sys.argv[2]))
t = pa.concat_tables([pq.read_table(p) for p in outs])
ts = t.column('ts').cast(pa.int64()).to_pylist()
src = pa.concat_tables([pq.read_table(p) for p in ins])
print(json.dumps({"rows": t.num_rows, "ids": len(set(t.column('id').to_pylist())), "ascending": all(a <= b for a, b in zip(ts, ts[1:])),
  "sameIds": sorted(t.column('id').to_pylist()) == sorted(src.column('id').to_pylist())}))
`
  const listFile = path.join(tmp, 'inputs.json')
  fs.writeFileSync(listFile, JSON.stringify(inputs))
  return JSON.parse(execFileSync('python3', ['-c', script, JSON.stringify(outputs), listFile], { encoding: 'utf8', maxBuffer: 64 << 20 }))
}

test.each([
  ['default options: the tuple fits the sort buffer (no spill)', {}, s => expect(s.runs).toBe(0)],
  // 32 KiB batches: runs of ~200 rows, every one overlapping every other: more than one merge
  // holds open, so runs are merged in passes
  ['batchBytes 32 KiB: more overlapping runs than one merge opens, merged in passes', { batchBytes: 32 << 10 }, s => {
    expect(s.runs).toBeGreaterThan(MOST_OPEN_RUNS)
    expect(s.mergePasses).toBeGreaterThanOrEqual(2)
  }],
])(`%s: ${FILES} overlapping inputs sorted under a hard limit of 256 descriptors`, (_name, extra, spillCheck) => {
  const before = hashFiles(inputs.slice(0, 50))
  const outDir = path.join(tmp, `out-${Object.keys(extra).join('-') || 'default'}`)
  const r = callUnderLimit({ outDir, sortBy: [{ column: 'ts' }], ...extra })
  expect(r.limit).toEqual({ soft: 256, hard: 256 })
  expect({ phase: r.phase, message: r.message }).toEqual({ phase: 'resolved', message: undefined })
  expect(r.rowsWritten).toBe(FILES * ROWS)
  expect(r.mostDescriptors - r.idleDescriptors).toBeLessThanOrEqual(MOST_OPEN_RUNS + OTHER_DESCRIPTORS)
  spillCheck(r.spill)
  expect(listTree(outDir)).toEqual(r.files.map(f => path.relative(outDir, f)).sort())
  expect(readBack(r.files)).toEqual({ rows: FILES * ROWS, ids: FILES * ROWS, ascending: true, sameIds: true })
  expect(hashFiles(inputs.slice(0, 50))).toEqual(before)
}, 300_000)
