'use strict'
// The JS contract is declared once, in src/options/contract.rs: index.d.ts is generated from it
// and the addon parses with it. These tests hold the three together: the keys each option
// interface of index.d.ts declares are exactly the keys the addon accepts (its "unknown field"
// error lists them), the string unions of index.d.ts are the values the addon exports, and
// the README's API section names every option and lists the same error codes and phases.

const fs = require('fs')
const path = require('path')
const addon = require('..')

const ROOT = path.join(__dirname, '..')
const DTS = fs.readFileSync(path.join(ROOT, 'index.d.ts'), 'utf8')
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')
const API = README.slice(README.indexOf('## API'), README.indexOf('## Install'))

/** The property names of `export interface name` in index.d.ts. */
function interfaceKeys(name) {
  const m = new RegExp(`export interface ${name} \\{\\n([\\s\\S]*?)\\n\\}`).exec(DTS)
  if (!m) throw new Error(`index.d.ts declares no interface ${name}`)
  return m[1].split('\n').map(l => /^ {2}(\w+)\??:/.exec(l)).filter(Boolean).map(x => x[1]).sort()
}

/** The members of `export type name = 'a' | 'b'` in index.d.ts. */
function unionMembers(name) {
  const m = new RegExp(`export type ${name} = (.*)`).exec(DTS)
  if (!m) throw new Error(`index.d.ts declares no type ${name}`)
  return [...m[1].matchAll(/'([^']*)'/g)].map(x => x[1]).sort()
}

/** The keys the addon accepts where `call` puts an unknown key, read from its error. */
async function acceptedKeys(call) {
  const err = await call('notAnOption').then(() => null, e => e)
  expect(err).toEqual(expect.objectContaining({ code: 'ERR_INVALID_OPTIONS' }))
  expect(err.message).toContain('unknown field `notAnOption`')
  const list = /expected one of (.*)$/.exec(err.message)
  return [...list[1].matchAll(/`(\w+)`/g)].map(x => x[1]).sort()
}

const file = path.join(ROOT, 'no-such-input.parquet')
const { planCompaction } = addon

test.each([
  ['CompactOptions', k => planCompaction([], { [k]: 1 })],
  ['InputFile', k => planCompaction([{ path: file, [k]: 1 }], {})],
  ['DeleteSource', k => planCompaction([{ path: file, deletes: [{ kind: 'position', path: file, [k]: 1 }] }], {})],
  ['SortKeyOptions', k => planCompaction([], { sortBy: [{ column: 'a', [k]: 1 }] })],
  ['PartitionFieldOptions', k => planCompaction([], { partitionBy: [{ column: 'a', [k]: 1 }] })],
  ['DivertOptions', k => planCompaction([], { divert: { column: 'a', equals: 1, to: 'x', [k]: 1 } })],
])('%s: the keys index.d.ts declares are the keys the addon accepts', async (name, call) => {
  expect(await acceptedKeys(call)).toEqual(interfaceKeys(name))
})

test('every declared option may be given as undefined (it is absent then)', async () => {
  for (const key of interfaceKeys('CompactOptions')) {
    await expect(planCompaction([], { [key]: undefined })).resolves.toEqual(expect.objectContaining({ paths: [] }))
  }
})

test.each([
  ['ErrorCode', () => [...API.matchAll(/`(ERR_[A-Z_]+)`/g)].map(x => x[1])],
  ['ProgressPhase', () => /phases \(`ProgressPhase`\) ([^|]*)\|/.exec(API)[1].match(/`(\w+)`/g).map(s => s.slice(1, -1))],
])('%s: index.d.ts, the exported values and the README agree', (name, fromReadme) => {
  const declared = unionMembers(name)
  expect(Object.values(addon[name]).sort()).toEqual(declared)
  expect([...new Set(fromReadme())].sort()).toEqual(declared)
})

test("the README's API section names every option of CompactOptions, and no other in its tables", () => {
  const declared = interfaceKeys('CompactOptions')
  for (const key of declared) expect({ key, named: API.includes(`\`${key}\``) }).toEqual({ key, named: true })
  const rows = [...API.matchAll(/^\| `(\w+)` \|/gm)].map(x => x[1])
  expect(rows.length).toBeGreaterThan(10)
  for (const key of rows) expect({ key, declared: declared.includes(key) }).toEqual({ key, declared: true })
})

test('BigInt is taken where the contract types it (counts, partition values) and refused where a number is', async () => {
  const { compactGeneration } = addon
  const outDir = path.join(ROOT, 'target', 'contract-never-created')
  // parsing passes: the call fails later, on the missing input
  const facts = { path: file, fileSizeInBytes: 10n, recordCount: 3n, partition: { a: 1n, b: Buffer.from([1]), c: null, d: 1.5, e: 'x', f: true } }
  await expect(compactGeneration([facts], { outDir })).rejects.toEqual(expect.objectContaining({ code: 'ERR_INPUT_NOT_FOUND' }))
  for (const [opts, at] of [
    [{ outDir, batchRows: 10n }, "'batchRows'"],
    [{ outDir, targetFileBytes: 1n << 70n }, "'targetFileBytes'"],
    [{ outDir, divert: { column: 'a', equals: 5n, to: 'x' } }, "'divert.equals'"],
  ]) {
    const err = await compactGeneration([file], opts).then(() => null, e => e)
    expect({ code: err.code, at: err.message.includes(at), bigint: /invalid type: bigint/.test(err.message) }).toEqual({ code: 'ERR_INVALID_OPTIONS', at: true, bigint: true })
  }
  // a count as a number is held to the numbers that are exact (as a BigInt it may be larger)
  const err = await compactGeneration([{ path: file, fileSizeInBytes: 2 ** 60 }], { outDir }).then(() => null, e => e)
  expect({ code: err.code, at: err.message.includes("'files[0].fileSizeInBytes'") }).toEqual({ code: 'ERR_INVALID_OPTIONS', at: true })
  await expect(compactGeneration([{ path: file, fileSizeInBytes: 2n ** 60n }], { outDir })).rejects.toEqual(expect.objectContaining({ code: 'ERR_INPUT_NOT_FOUND' }))
  expect(fs.existsSync(outDir)).toBe(false)
})

test('option objects are read from objects only, not from arrays of their fields', async () => {
  const { compactGeneration } = addon
  const outDir = path.join(ROOT, 'target', 'contract-never-created')
  for (const [files, opts, at] of [
    [[file], [outDir], 'CompactOptions'],
    [[file], { outDir, sortBy: [['ts', true]] }, "'sortBy[0]'"],
    [[file], { outDir, divert: ['a', [], 1, 'x'] }, "'divert'"],
    [[{ path: file, deletes: [['position', file]] }], { outDir }, "'files[0].deletes[0]'"],
    [[[file]], { outDir }, "'files[0]'"],
  ]) {
    const err = await compactGeneration(files, opts).then(() => null, e => e)
    expect({ code: err.code, at: err.message.includes(at), array: err.message.includes('invalid type: array') }).toEqual({ code: 'ERR_INVALID_OPTIONS', at: true, array: true })
  }
})
