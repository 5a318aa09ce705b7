'use strict'
// Every failure is a rejected Promise carrying an Error with a public `code` and a message
// naming the file (and the column where one is involved); a failed call leaves no file of ours
// in outDir and never touches an input.

const fs = require('fs')
const path = require('path')
const { compactGeneration } = require('..')
const hyp = require('./helpers/hyp')
const { openDuck } = require('./helpers/duck')
const { corruptDataPage } = require('./helpers/corrupt')
const { makeTmpDir, removeDir, hashFiles, ourFiles, listTree, sha256File, existingOutDir, expectForeignFileKept } = require('./helpers/fsutil')
const { expectCompactError, expectError } = require('./helpers/assertions')

const MiB = 1024 * 1024

let tmp
let duck
let crafted // hand-made bad inputs
let gen
let fixtureHashes
let n = 0

/** A fresh outDir path that does not exist yet. */
function freshOutDir() {
  return path.join(tmp, `out-${++n}`)
}

beforeAll(async () => {
  tmp = makeTmpDir('errors')
  crafted = path.join(tmp, 'crafted')
  fs.mkdirSync(crafted)
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 1500, files: 16, tuples: 4, seed: 21 })
  fixtureHashes = hashFiles(gen.files)
  duck = await openDuck()
})

afterAll(() => {
  if (duck) duck.close()
  removeDir(tmp)
})

describe('ERR_INPUT_NOT_FOUND', () => {
  test('a missing input file', async () => {
    const missing = path.join(tmp, 'in', 'part-99999.parquet')
    const files = [gen.files[0], gen.files[1], missing, ...gen.files.slice(2)]
    const outDir = existingOutDir(tmp)
    const err = await expectCompactError(() => compactGeneration(files, { outDir }), {
      code: 'ERR_INPUT_NOT_FOUND', mentions: [missing], outDir, inputs: gen.files,
    })
    expect(err.path).toBe(missing)
    expectForeignFileKept(outDir)
  })

  test('a missing input file does not create outDir', async () => {
    const missing = path.join(tmp, 'nope', 'x.parquet')
    const outDir = freshOutDir()
    await expectCompactError(() => compactGeneration([...gen.files, missing], { outDir }), {
      code: 'ERR_INPUT_NOT_FOUND', mentions: [missing], outDir, inputs: gen.files,
    })
    expect(fs.existsSync(outDir)).toBe(false)
  })
})

describe('ERR_INPUT_CORRUPT', () => {
  test('a file that is not Parquet', async () => {
    const bad = path.join(crafted, 'not-parquet.parquet')
    fs.writeFileSync(bad, 'this is a CSV file, honestly\n'.repeat(200))
    const outDir = existingOutDir(tmp)
    await expectCompactError(() => compactGeneration([gen.files[0], bad, gen.files[1]], { outDir }), {
      code: 'ERR_INPUT_CORRUPT', mentions: [bad], outDir, inputs: [...gen.files, bad],
    })
    expectForeignFileKept(outDir)
  })

  test('an empty file', async () => {
    const bad = path.join(crafted, 'empty.parquet')
    fs.writeFileSync(bad, '')
    const outDir = freshOutDir()
    await expectCompactError(() => compactGeneration([gen.files[0], bad], { outDir }), {
      code: 'ERR_INPUT_CORRUPT', mentions: [bad], outDir, inputs: [gen.files[0], bad],
    })
  })

  test('a truncated Parquet file (first half only)', async () => {
    const bad = path.join(crafted, 'truncated-half.parquet')
    const src = fs.readFileSync(gen.files[3])
    fs.writeFileSync(bad, src.subarray(0, Math.floor(src.length / 2)))
    const outDir = existingOutDir(tmp)
    await expectCompactError(() => compactGeneration([gen.files[0], gen.files[1], bad], { outDir }), {
      code: 'ERR_INPUT_CORRUPT', mentions: [bad], outDir, inputs: [...gen.files, bad],
    })
    expectForeignFileKept(outDir)
  })

  test('a Parquet file missing its last byte (no trailing magic)', async () => {
    const bad = path.join(crafted, 'truncated-1.parquet')
    const src = fs.readFileSync(gen.files[4])
    fs.writeFileSync(bad, src.subarray(0, src.length - 1))
    const outDir = freshOutDir()
    await expectCompactError(() => compactGeneration([bad, gen.files[0]], { outDir }), {
      code: 'ERR_INPUT_CORRUPT', mentions: [bad], outDir, inputs: [gen.files[0], bad],
    })
  })

  test('a data page broken mid-file: named with file and column; outputs already written are removed', async () => {
    const bad = path.join(crafted, 'bad-page.parquet')
    const change = await corruptDataPage(duck, gen.files[9], bad, 'request_id')
    expect(change.before).not.toBe(change.after)
    // the broken file comes last: by then output files have been opened and written
    const files = [...gen.files, bad]
    const outDir = existingOutDir(tmp)
    let sawTmp = false
    const err = await expectCompactError(() => compactGeneration(files, {
      outDir,
      targetFileBytes: 1 * MiB,
      batchBytes: 2 * MiB,
      onProgress: () => { if (ourFiles(outDir).length) sawTmp = true },
    }), { code: 'ERR_INPUT_CORRUPT', mentions: [bad], outDir, inputs: files })
    expect(err.message).toContain('request_id')
    expect(err.message).not.toContain(gen.files[9]) // the copy is broken, not the original
    // the file, the column and the decoder's own error as properties
    expect({ path: err.path, column: err.column }).toEqual({ path: bad, column: 'request_id' })
    expectForeignFileKept(outDir)
    // not a requirement of the contract, but it shows the cleanup was exercised
    expect(sawTmp).toBe(true)
  })

  test('a failure after outDir was created removes every directory the call created', async () => {
    const bad = path.join(crafted, 'bad-page-2.parquet')
    await corruptDataPage(duck, gen.files[2], bad, 'request_id')
    const top = path.join(tmp, `created-${++n}`)
    const outDir = path.join(top, 'gen-2', 'data')
    await expectCompactError(() => compactGeneration([...gen.files, bad], { outDir }), {
      code: 'ERR_INPUT_CORRUPT', mentions: [bad], outDir, inputs: [...gen.files, bad],
    })
    expect({ exists: fs.existsSync(top), left: listTree(top) }).toEqual({ exists: false, left: [] })
  })
})

describe('ERR_INVALID_OPTIONS', () => {
  const cases = [
    ['missing outDir', () => ({}), 'outDir'],
    ['empty outDir', () => ({ outDir: '' }), 'outDir'],
    ['outDir not a string', () => ({ outDir: 42 }), 'outDir'],
    ['bad compression', o => ({ outDir: o, compression: 'brotli' }), 'compression'],
    ['compressionLevel out of range', o => ({ outDir: o, compression: 'zstd', compressionLevel: 99 }), 'compressionLevel'],
    ['negative batchRows', o => ({ outDir: o, batchRows: -5 }), 'batchRows'],
    ['zero batchRows', o => ({ outDir: o, batchRows: 0 }), 'batchRows'],
    ['fractional batchRows', o => ({ outDir: o, batchRows: 1.5 }), 'batchRows'],
    ['negative batchBytes', o => ({ outDir: o, batchBytes: -1 }), 'batchBytes'],
    ['targetFileBytes not a number', o => ({ outDir: o, targetFileBytes: '128MB' }), 'targetFileBytes'],
    ['targetFileBytes zero', o => ({ outDir: o, targetFileBytes: 0 }), 'targetFileBytes'],
    ['unknown option', o => ({ outDir: o, targetFileSize: 1e6 }), 'targetFileSize'],
    ['sortBy naming a column the inputs lack', o => ({ outDir: o, sortBy: [{ column: 'no_such_column' }] }), 'no_such_column'],
    ['sortBy on a nested (VARIANT) column', o => ({ outDir: o, sortBy: [{ column: 'tool_args' }] }), 'tool_args'],
    ['sortBy not an array', o => ({ outDir: o, sortBy: 'ts' }), 'sortBy'],
    ['sortBy entry with a non-boolean descending', o => ({ outDir: o, sortBy: [{ column: 'ts', descending: 'yes' }] }), 'descending'],
    ['partitionBy naming a column the inputs lack', o => ({ outDir: o, partitionBy: [{ column: 'no_such_column' }] }), 'no_such_column'],
    ['partitionBy with an unknown transform', o => ({ outDir: o, partitionBy: [{ column: 'ts', transform: 'days' }] }), 'days'],
    ['partitionBy with a transform the type lacks', o => ({ outDir: o, partitionBy: [{ column: 'session_id', transform: 'hour' }] }), 'session_id'],
    ['partitionBy not an array', o => ({ outDir: o, partitionBy: 'session_id' }), 'partitionBy'],
    ['dedupeBy naming a column the inputs lack', o => ({ outDir: o, dedupeBy: 'no_such_column' }), 'no_such_column'],
    ['dedupeBy not a string', o => ({ outDir: o, dedupeBy: 42 }), 'dedupeBy'],
    ['sortOrderId without sortBy', o => ({ outDir: o, sortOrderId: 1 }), 'sortOrderId'],
    ['tmpDir not a string', o => ({ outDir: o, tmpDir: 7 }), 'tmpDir'],
    ["fileNamePrefix with '/'", o => ({ outDir: o, fileNamePrefix: 'a/b' }), 'fileNamePrefix'],
    ["fileNamePrefix with '..'", o => ({ outDir: o, fileNamePrefix: '../escape' }), 'fileNamePrefix'],
    ["fileNamePrefix '..'", o => ({ outDir: o, fileNamePrefix: '..' }), 'fileNamePrefix'],
    ['fileNamePrefix absolute', o => ({ outDir: o, fileNamePrefix: '/tmp/x' }), 'fileNamePrefix'],
    ['verify not a boolean', o => ({ outDir: o, verify: 'yes' }), 'verify'],
    ['signal not an AbortSignal', o => ({ outDir: o, signal: 'abort' }), 'signal'],
    ['onProgress not a function', o => ({ outDir: o, onProgress: 1 }), 'onProgress'],
  ]

  test.each(cases)('%s', async (_name, makeOpts, mention) => {
    const outDir = freshOutDir()
    await expectCompactError(() => compactGeneration(gen.files, makeOpts(outDir)), {
      code: 'ERR_INVALID_OPTIONS', mentions: [mention], outDir, inputs: gen.files,
    })
    expect(fs.existsSync(outDir)).toBe(false)
    // nothing escaped outDir either (a prefix with '..' would land in its parent)
    expect(ourFiles(tmp)).toEqual([])
  })

  test.each([
    ['files not an array', () => 'part-00000.parquet'],
    ['files holding a non-string', () => [gen.files[0], 42]],
    ['files holding an object without path', () => [{ location: gen.files[0] }]],
    ['files holding an unknown delete kind', () => [{ path: gen.files[0], deletes: [{ kind: 'bogus', path: gen.files[0] }] }]],
    ['files holding a deletion vector without offset', () => [{ path: gen.files[0], deletes: [{ kind: 'deletion-vector', path: gen.files[0], length: 10 }] }]],
    ['files holding equality deletes without field ids', () => [{ path: gen.files[0], deletes: [{ kind: 'equality', path: gen.files[0], fieldIds: [] }] }]],
  ])('%s', async (_name, makeFiles) => {
    const outDir = freshOutDir()
    await expectCompactError(() => compactGeneration(makeFiles(), { outDir }), {
      code: 'ERR_INVALID_OPTIONS', mentions: ['files'], outDir, inputs: gen.files,
    })
    expect(fs.existsSync(outDir)).toBe(false)
  })

  test.each([
    ['the same path twice', f => f],
    ['the same file under another name (a symbolic link)', f => {
      const link = path.join(crafted, `link-${++n}.parquet`)
      fs.symlinkSync(f, link)
      return link
    }],
  ])('%s: ERR_INVALID_OPTIONS naming both entries (its rows would be written twice)', async (_name, again) => {
    const outDir = freshOutDir()
    const files = [gen.files[0], gen.files[1], again(gen.files[0])]
    await expectCompactError(() => compactGeneration(files, { outDir }), {
      code: 'ERR_INVALID_OPTIONS', mentions: ['files[2]', 'files[0]', files[2]], outDir, inputs: gen.files,
    })
    expect(fs.existsSync(outDir)).toBe(false)
  })

  test('opts missing altogether', async () => {
    await expectCompactError(() => compactGeneration(gen.files), { code: 'ERR_INVALID_OPTIONS', inputs: gen.files })
  })
})

describe('ERR_SCHEMA_CONFLICT', () => {
  test('two inputs whose schemas disagree on a column type: message names both files and the column', async () => {
    const conflict = path.join(crafted, 'status-as-string.parquet')
    await hyp.retypedCopy(gen.files[5], conflict, {
      column: 'status_code',
      patch: { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } },
      convert: 'string',
    })
    const schema = await duck.schema(conflict)
    expect(schema.find(s => s.name === 'status_code')).toEqual(expect.objectContaining({ type: 'BYTE_ARRAY', field_id: 32 }))
    const files = [gen.files[0], gen.files[1], conflict, gen.files[2]]
    const outDir = existingOutDir(tmp)
    const err = await expectCompactError(() => compactGeneration(files, { outDir }), {
      code: 'ERR_SCHEMA_CONFLICT', mentions: [conflict, 'status_code'], outDir, inputs: files,
    })
    // the other file of the pair is one of the inputs that still has the original schema
    expect([gen.files[0], gen.files[1], gen.files[2]].some(f => err.message.includes(f))).toBe(true)
    expect(err.column).toBe('status_code')
    expectForeignFileKept(outDir)
  })

  // pyarrow writes each of these (it allows duplicate names and ids); an output with two columns
  // of one name is one no reader can resolve by name, so the call refuses them.
  const PYARROW_PAIRS = `
import sys, pyarrow as pa, pyarrow.parquet as pq
d = sys.argv[1]
def f(n, i, t=pa.int64()): return pa.field(n, t, metadata={'PARQUET:field_id': str(i)})
def w(name, fields):
    pq.write_table(pa.table([pa.array([1, 2], type=x.type) for x in fields], schema=pa.schema(fields)), d + '/' + name)
w('d-id-9.parquet', [f('id', 1), f('d', 9, pa.date32())])
w('d-id-23.parquet', [f('id', 1), f('d', 23, pa.date32())])
w('two-named-a.parquet', [f('a', 1), f('a', 2)])
w('id-1-twice.parquet', [f('a', 1), f('b', 1)])
`
  test.each([
    ['one name under two field ids in two inputs', ['d-id-9.parquet', 'd-id-23.parquet'], 'd', /field ids \(23 and 9\)/],
    ['two sibling columns of one name in one file', ['two-named-a.parquet'], 'a', /one group/],
    ['one top-level field id for two columns of one file', ['id-1-twice.parquet'], 'b', /field id 1/],
  ])('%s', async (_name, names, column, why) => {
    const dir = path.join(crafted, 'names')
    if (!fs.existsSync(dir)) {
      fs.mkdirSync(dir)
      require('child_process').execFileSync('python3', ['-c', PYARROW_PAIRS, dir])
    }
    const files = names.map(f => path.join(dir, f))
    const outDir = freshOutDir()
    const err = await expectCompactError(() => compactGeneration(files, { outDir, sortBy: [{ column }] }), {
      code: 'ERR_SCHEMA_CONFLICT', mentions: [...files, column], outDir, inputs: files,
    })
    expect(err.column).toBe(column)
    expect(err.message).toMatch(why)
    expect(fs.existsSync(outDir)).toBe(false)
  })
})

describe('ERR_IO', () => {
  test('outDir is an existing regular file', async () => {
    const outDir = path.join(tmp, `a-regular-file-${++n}`)
    fs.writeFileSync(outDir, 'I am a file')
    const before = sha256File(outDir)
    const siblings = fs.readdirSync(tmp).sort()
    const err = await expectCompactError(() => compactGeneration(gen.files, { outDir }), {
      code: 'ERR_IO', mentions: [outDir], inputs: gen.files,
    })
    // the operating system's error is the cause
    expect(err.path).toContain(outDir)
    expect(require('util').types.isNativeError(err.cause)).toBe(true)
    expect(err.cause.message).toMatch(/exists|directory|not a directory/i)
    expect(sha256File(outDir)).toBe(before)
    expect(fs.readdirSync(tmp).sort()).toEqual(siblings)
  })

  test('outDir below a regular file (cannot be created)', async () => {
    const file = path.join(tmp, `blocker-${++n}`)
    fs.writeFileSync(file, 'blocks mkdir')
    const outDir = path.join(file, 'sub')
    const siblings = fs.readdirSync(tmp).sort()
    await expectCompactError(() => compactGeneration(gen.files, { outDir }), {
      code: 'ERR_IO', mentions: [file], inputs: gen.files,
    })
    expect(fs.readFileSync(file, 'utf8')).toBe('blocks mkdir')
    expect(fs.readdirSync(tmp).sort()).toEqual(siblings)
  })

  test('an existing file with the name of an output is never replaced', async () => {
    const outDir = path.join(tmp, `taken-${++n}`)
    fs.mkdirSync(outDir)
    const taken = path.join(outDir, 'p-00000.parquet')
    fs.copyFileSync(gen.files[0], taken)
    const before = sha256File(taken)
    const outcome = await compactGeneration(gen.files, { outDir, fileNamePrefix: 'p' }).then(r => ({ r }), err => ({ err }))
    expect(sha256File(taken)).toBe(before)
    if (outcome.err) {
      expectError(outcome.err)
      expect(outcome.err.code).toBe('ERR_IO')
      expect(outcome.err.message).toContain(taken)
      expect(fs.readdirSync(outDir)).toEqual(['p-00000.parquet'])
    } else {
      expect(outcome.r.files.map(f => f.path)).not.toContain(taken)
    }
  })
})

describe('every failure leaves the inputs byte-identical', () => {
  test('hashes of all fixture files are unchanged after the whole error suite', () => {
    // (each case above also checks its own inputs; this runs last and covers them all)
    expect(hashFiles(gen.files)).toEqual(fixtureHashes)
  })
})

describe('outside jest', () => {
  test('rejections are `instanceof Error` with a code in a plain Node process', () => {
    // jest's vm context has its own Error, so check the real thing in a child process
    const { execFileSync } = require('child_process')
    const script = `
      const { compactGeneration } = require(${JSON.stringify(path.resolve(__dirname, '..'))})
      const out = []
      const calls = [
        () => compactGeneration(${JSON.stringify(gen.files.slice(0, 2))}, {}),
        () => compactGeneration([${JSON.stringify(path.join(tmp, 'missing.parquet'))}], { outDir: ${JSON.stringify(path.join(tmp, 'never'))} }),
        () => compactGeneration(${JSON.stringify(gen.files.slice(0, 2))}, { outDir: ${JSON.stringify(path.join(tmp, 'never'))}, signal: AbortSignal.abort() }),
      ]
      ;(async () => {
        for (const c of calls) {
          try { await c(); out.push({ resolved: true }) } catch (e) { out.push({ isError: e instanceof Error, code: e.code }) }
        }
        console.log(JSON.stringify(out))
      })()`
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }))
    expect(out).toEqual([
      { isError: true, code: 'ERR_INVALID_OPTIONS' },
      { isError: true, code: 'ERR_INPUT_NOT_FOUND' },
      { isError: true, code: 'ERR_ABORTED' },
    ])
  })
})
