'use strict'
// The command line (cli/gencompact.js) end to end, in child processes: in a real pseudo-terminal
// (util-linux `script`), the progress bar draws and the summary follows; piped, plain lines and no
// escape code; --json is the API's result for the same inputs and options; every error code has
// its exit status (the README's table); SIGINT during a run aborts it: exit 130, nothing in --out.
// `inspect` reports footers and the host's due-for-compaction rule.

const fs = require('fs')
const path = require('path')
const { spawn, spawnSync } = require('child_process')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { makeTmpDir, removeDir, ourFiles } = require('./helpers/fsutil')
const { EXIT, parseSize, parseSortKey, parsePartitionField, parseDivert } = require('../cli/parse')

const CLI = path.join(__dirname, '..', 'cli', 'gencompact.js')
const ESC = '\x1b'

let tmp
let gen
let n = 0

beforeAll(async () => {
  tmp = makeTmpDir('cli')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 1200, files: 12, tuples: 3, seed: 23 })
})

afterAll(() => removeDir(tmp))

const inDir = () => path.dirname(gen.files[0])
const outDir = (name) => path.join(tmp, `${name}-${++n}`)

/** Runs the CLI with pipes: { status, stdout, stderr }. */
function cli(args, env = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, cwd: tmp })
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

describe('argument parsing', () => {
  test('sizes: binary and decimal units, case-insensitive; bad ones throw', () => {
    expect(parseSize('128MiB')).toBe(128 * 1024 * 1024)
    expect(parseSize('32m')).toBe(32 * 1024 * 1024)
    expect(parseSize('1.5GiB')).toBe(1.5 * 1024 ** 3)
    expect(parseSize('10MB')).toBe(10 * 1000 * 1000)
    expect(parseSize('4096')).toBe(4096)
    expect(parseSize('64k')).toBe(65536)
    for (const bad of ['', 'MiB', '12XB', '-1', '0', '1e3']) expect(() => parseSize(bad)).toThrow(/size/)
  })

  test('sort keys, partition fields, divert', () => {
    expect(parseSortKey('ts')).toEqual({ column: 'ts' })
    expect(parseSortKey('ts:desc')).toEqual({ column: 'ts', descending: true })
    expect(parseSortKey('ts:asc:nulls-last')).toEqual({ column: 'ts', descending: false, nullsFirst: false })
    expect(() => parseSortKey('ts:sideways')).toThrow(/unknown modifier/)
    expect(parsePartitionField('session_id')).toEqual({ column: 'session_id' })
    expect(parsePartitionField('ts:day')).toEqual({ column: 'ts', transform: 'day' })
    expect(parsePartitionField('id:bucket[16]=id_b')).toEqual({ column: 'id', transform: 'bucket[16]', name: 'id_b' })
    expect(parseDivert('attributes.gateway.identity_source=gateway_fallback', '/x.parquet'))
      .toEqual({ column: 'attributes', path: ['gateway', 'identity_source'], equals: 'gateway_fallback', to: '/x.parquet' })
    expect(parseDivert('status_code=500', '/x')).toEqual({ column: 'status_code', equals: 500, to: '/x' })
    expect(() => parseDivert('status_code=500')).toThrow(/--divert-to/)
  })
})

describe('compact', () => {
  test('in a pseudo-terminal: the progress bar draws, then the before/after summary', () => {
    const out = outDir('tty')
    const cmd = ['stty cols 200 rows 40;', process.execPath, CLI, 'compact', inDir(), '--out', out, '--partition', 'session_id', '--sort', 'ts']
      .map((a) => (a.endsWith(';') ? a : `'${a}'`)).join(' ')
    // script(1) runs the command on a new pty; -e: its exit status; -q: no banner; log to /dev/null
    const r = spawnSync('script', ['-q', '-e', '-c', cmd, '/dev/null'], { encoding: 'utf8', cwd: tmp, env: { ...process.env, TERM: 'xterm' } })
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' })
    const screen = r.stdout
    expect(screen).toContain(ESC + '[') // the bar redraws in place and hides the cursor
    expect(screen).toMatch(/\[[█░]{24}\] \d+%/) // a 24-cell bar
    expect(screen).toMatch(/\[█{24}\] 100%/) // ... that completed
    expect(screen).toMatch(/ETA/)
    expect(screen).toMatch(/before: 12 files, .*, 12 row groups, 1,200 rows, SNAPPY/)
    expect(screen).toMatch(/after: {2}3 files, .*, 1,200 rows/)
    expect(screen).toMatch(/memory: {2}peak RSS [\d.]+ MiB/)
    expect(screen).toMatch(/sorted by ts/)
    expect(ourFiles(out).length).toBe(3)
  })

  test('piped: plain progress lines and the summary, no escape code', () => {
    const out = outDir('piped')
    const r = cli(['compact', inDir(), '--out', out, '--target', '1MiB'])
    expect(r.status).toBe(0)
    expect(r.stdout + r.stderr).not.toContain(ESC)
    expect(r.stderr).toMatch(/^plan: 0 rows read/m)
    expect(r.stderr).toMatch(/^done: 1,200 rows read \(100%\), 1,200 written/m)
    expect(r.stdout).toMatch(/^before: 12 files/m)
    expect(r.stdout).toMatch(/^rows: {4}read 1,200, written 1,200$/m)
    expect(r.stdout).toMatch(/^time: /m)
  })

  test('--only-due: a second run over the compacted partition rewrites nothing and carries its files', () => {
    const first = outDir('only-due-1')
    const r1 = cli(['compact', inDir(), '--out', first, '--only-due', '--json', '--no-progress'])
    expect(r1.status).toBe(0)
    const d1 = JSON.parse(r1.stdout)
    expect(d1.inputFiles).toBe(12)
    expect(d1.kept).toEqual([])
    const second = outDir('only-due-2')
    const r2 = cli(['compact', first, '--out', second, '--only-due', '--json', '--no-progress'])
    expect(r2.status).toBe(0)
    const d2 = JSON.parse(r2.stdout)
    expect(d2.inputFiles).toBe(0)
    expect(d2.files).toEqual([])
    expect(d2.kept.map(k => path.basename(k.path))).toEqual(d1.files.map(f => path.basename(f.path)))
    expect(fs.statSync(d2.kept[0].path).ino).toBe(fs.statSync(d1.files[0].path).ino)
  })

  test('--json: parses, and is the API result for the same inputs and options', async () => {
    const a = outDir('json-cli')
    const b = outDir('json-api')
    const flags = ['--partition', 'session_id', '--sort', 'ts:desc', '--sort-order-id', '2', '--target', '256KiB', '--compression', 'zstd', '--prefix', 'part', '--dedupe', '_hyp_cache_row_id', '--threads', '1']
    const r = cli(['compact', inDir(), '--out', a, '--json', ...flags])
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    const doc = JSON.parse(r.stdout)
    const api = await compactGeneration([...gen.files].sort(), {
      outDir: b, partitionBy: [{ column: 'session_id' }], sortBy: [{ column: 'ts', descending: true }], sortOrderId: 2,
      targetFileBytes: 256 * 1024, compression: 'zstd', fileNamePrefix: 'part', dedupeBy: '_hyp_cache_row_id', threads: 1,
    })
    // JSON of the API's values, written independently of cli/format.js: BigInt -> number, Buffer -> hex
    const plain = (v) => JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x && x.type === 'Buffer' && Array.isArray(x.data) ? Buffer.from(x.data).toString('hex') : x)))
    const { cli: extra, elapsedMs, ...rest } = doc
    const { elapsedMs: apiMs, ...apiRest } = plain(api)
    expect(typeof elapsedMs).toBe('number')
    expect(typeof apiMs).toBe('number')
    expect(rest.files.length).toBeGreaterThanOrEqual(3)
    expect(JSON.parse(JSON.stringify(rest).split(a).join(b))).toEqual(apiRest)
    expect(typeof rest.files[0].dataFile.record_count).toBe('number')
    expect(rest.files[0].dataFile.lower_bounds).toEqual(expect.any(Object))
    expect(Object.values(rest.files[0].dataFile.lower_bounds).every((h) => /^[0-9a-f]*$/.test(h))).toBe(true)
    expect(extra).toEqual(expect.objectContaining({
      inputs: [...gen.files].sort(),
      before: expect.objectContaining({ files: 12, rows: 1200, rowGroups: 12, codecs: ['SNAPPY'] }),
      after: expect.objectContaining({ files: rest.files.length, rows: rest.rowsWritten, codecs: ['ZSTD'] }),
      peakRssBytes: expect.any(Number),
    }))
  })

  const corrupt = () => {
    const f = path.join(tmp, `corrupt-${++n}.parquet`)
    fs.writeFileSync(f, Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(64, 7), Buffer.from('PAR1')]))
    return f
  }
  const conflicting = async () => {
    const f = path.join(tmp, `retyped-${++n}.parquet`)
    await hyp.retypedCopy(gen.files[1], f, { column: 'status_code', patch: { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } }, convert: 'string' })
    return f
  }
  const aFile = () => {
    const f = path.join(tmp, `regular-file-${++n}`)
    fs.writeFileSync(f, 'not a directory')
    return f
  }

  test.each([
    ['usage: --out missing', EXIT.USAGE, async () => ({ args: [gen.files[0]] })],
    ['usage: a bad size', EXIT.USAGE, async () => ({ args: [gen.files[0], '--target', '12XB'] })],
    ['usage: an unknown flag', EXIT.USAGE, async () => ({ args: [gen.files[0], '--taget', '1MiB'] })],
    ['ERR_INVALID_OPTIONS', EXIT.ERR_INVALID_OPTIONS, async () => ({ args: [gen.files[0], '--sort-order-id', '3'] })],
    ['ERR_INPUT_NOT_FOUND', EXIT.ERR_INPUT_NOT_FOUND, async () => ({ args: [gen.files[0], path.join(tmp, 'no-such.parquet')] })],
    ['ERR_INPUT_CORRUPT', EXIT.ERR_INPUT_CORRUPT, async () => ({ args: [gen.files[0], corrupt()] })],
    ['ERR_SCHEMA_CONFLICT', EXIT.ERR_SCHEMA_CONFLICT, async () => ({ args: [gen.files[0], await conflicting()] })],
    ['ERR_IO', EXIT.ERR_IO, async () => ({ args: [gen.files[0]], out: path.join(aFile(), 'sub') })],
    ['ERR_VERIFY_FAILED', EXIT.ERR_VERIFY_FAILED, async () => ({ args: [inDir()], env: { GENCOMPACT_TEST_FAULT: 'drop-row' } })],
    ['ERR_INTERNAL', EXIT.ERR_INTERNAL, async () => ({ args: [inDir()], env: { GENCOMPACT_TEST_FAULT: 'panic' } })],
  ])('%s: exit status %i, the code on stderr, nothing in --out', async (name, status, make) => {
    const { args, env, out = outDir('err') } = await make()
    const withOut = name.startsWith('usage: --out') ? args : [...args, '--out', out]
    const r = cli(['compact', ...withOut], env)
    expect({ status: r.status, stdout: r.stdout }).toEqual({ status, stdout: '' })
    if (name.startsWith('ERR_')) expect(r.stderr).toMatch(new RegExp(`^gencompact: ${name}: `, 'm'))
    else expect(r.stderr).toMatch(/error|not a size/)
    expect(ourFiles(out)).toEqual([])
  })

  test('every code in the table is distinct', () => {
    expect(new Set(Object.values(EXIT)).size).toBe(Object.keys(EXIT).length)
  })

  test('SIGINT during a run: exit 130, nothing left in --out', async () => {
    const big = await hyp.generate({ dir: path.join(tmp, 'big'), rows: 12000, files: 24, tuples: 2, seed: 29 })
    const out = outDir('sigint')
    // Tiny batches and row groups (thousands of them) make the run last seconds, so the signal sent
    // on its first progress line arrives mid-run.
    const child = spawn(process.execPath, [CLI, 'compact', path.dirname(big.files[0]), '--out', out, '--batch-rows', '4', '--sort', 'ts'], { cwd: tmp })
    let stderr = ''
    let sent = false
    child.stdout.resume()
    const status = await new Promise((resolve) => {
      child.stderr.on('data', (d) => {
        stderr += d
        if (!sent && /^write: /m.test(stderr)) {
          sent = true
          child.kill('SIGINT')
        }
      })
      child.on('exit', (code, signal) => resolve({ code, signal }))
    })
    expect(sent).toBe(true)
    expect(status).toEqual({ code: EXIT.ERR_ABORTED, signal: null })
    expect(stderr).toMatch(/SIGINT: aborting/)
    expect(stderr).toMatch(/aborted \(ERR_ABORTED\); nothing was published/)
    expect(ourFiles(out)).toEqual([])
    expect(fs.existsSync(out)).toBe(false) // the call created it, and removed it again
  })
})

describe('inspect', () => {
  test('per file footers and the partition summary; due by the planner, its rules change it', () => {
    const r = cli(['inspect', inDir()])
    expect(r.status).toBe(0)
    const lines = r.stdout.trim().split('\n')
    expect(lines.length).toBe(12 + 3)
    expect(lines[0]).toMatch(/part-00000\.parquet {2}[\d.]+ KiB {2}[\d,]+ rows {2}1 row group {2}SNAPPY {2}unsorted/)
    expect(r.stdout).toMatch(/^partition: 12 files, .*12 row groups, 1,200 rows, SNAPPY$/m)
    expect(r.stdout).toMatch(/^ {2}\(whole partition\): rewrite 12 files into 1 file \(small-files\)$/m)
    expect(r.stdout).toMatch(/^due for compaction: 1 of 1 tuple \(small-files\); rewrite 12 files/m)
    // fewer small files than --min-input-files: rewriting them would not be worth it
    const relaxed = cli(['inspect', inDir(), '--summary', '--min-input-files', '100'])
    expect(relaxed.stdout.trim().split('\n')).toEqual([expect.stringMatching(/^partition: /), expect.stringMatching(/^not due for compaction: 1 tuple, 12 files kept/)])
    // files within the size band are left alone
    const sealed = cli(['inspect', inDir(), '--summary', '--min-file-size', '1'])
    expect(sealed.stdout).toMatch(/^not due for compaction/m)
    // per tuple, with the host's partition columns
    const tuples = cli(['plan', inDir(), '--partition', 'session_id', '--json'])
    expect(tuples.status).toBe(0)
    const plan = JSON.parse(tuples.stdout)
    expect(plan.groups.length).toBeGreaterThan(1)
    expect(plan.groups.every(g => Object.keys(g.partition).join() === 'session_id')).toBe(true)
  })

  test('sort order from sorting_columns, --json', () => {
    const out = outDir('sorted')
    expect(cli(['compact', inDir(), '--out', out, '--sort', 'ts:desc', '--no-progress']).status).toBe(0)
    const r = cli(['inspect', out, '--json'])
    expect(r.status).toBe(0)
    const doc = JSON.parse(r.stdout)
    expect(doc.files).toEqual([expect.objectContaining({ rows: 1200, codecs: ['SNAPPY'], sortingColumns: [{ column: 'ts', descending: true, nullsFirst: false }] })])
    // one compacted file is not due; by another order it is
    expect(doc.summary).toEqual(expect.objectContaining({ files: 1, rows: 1200, due: false }))
    expect(JSON.parse(cli(['inspect', out, '--json', '--sort', 'ts:desc']).stdout).summary.due).toBe(false)
    expect(cli(['inspect', out, '--sort', 'ts']).stdout).toMatch(/^due for compaction: 1 of 1 tuple \(unsorted\)/m)
    expect(cli(['inspect', out]).stdout).toMatch(/sorted by ts desc/)
  })

  test('an unreadable file is reported with its error code as exit status', () => {
    const f = corruptFile()
    const r = cli(['inspect', gen.files[0], f])
    expect(r.status).toBe(EXIT.ERR_INPUT_CORRUPT)
    expect(r.stdout).toMatch(/not a readable Parquet file/)
    expect(cli(['inspect', path.join(tmp, 'missing.parquet')]).status).toBe(EXIT.ERR_INPUT_NOT_FOUND)
  })
})

function corruptFile() {
  const f = path.join(tmp, `garbage-${++n}.parquet`)
  fs.writeFileSync(f, Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(64, 7), Buffer.from('PAR1')]))
  return f
}
