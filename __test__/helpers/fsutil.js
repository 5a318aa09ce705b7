'use strict'
// File-system helpers shared by the specs.

const crypto = require('crypto')
const fs = require('fs')
const os = require('os')
const path = require('path')

function makeTmpDir(tag) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `gencompact-${tag}-`))
}

function removeDir(dir) {
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
}

function sha256File(file) {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex')
}

/** { path: sha256 } for every file (to prove inputs are left byte-identical). */
function hashFiles(files) {
  return Object.fromEntries(files.map(f => [f, sha256File(f)]))
}

/** Names in `dir` that look like ours (`*.parquet`, `*.tmp`); [] when dir is missing. */
function ourFiles(dir) {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) return []
  return fs.readdirSync(dir).filter(n => n.endsWith('.parquet') || n.endsWith('.tmp') || n.includes('.parquet.'))
}

/** Every entry under `dir`, recursively, as relative paths. */
function listTree(dir) {
  if (!fs.existsSync(dir)) return []
  const out = []
  const walk = rel => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = path.join(rel, e.name)
      out.push(r)
      if (e.isDirectory()) walk(r)
    }
  }
  walk('')
  return out.sort()
}

function totalSize(files) {
  return files.reduce((n, f) => n + fs.statSync(f).size, 0)
}

let existing = 0

/** A fresh existing outDir under `tmp` holding one foreign file, which must survive any failure. */
function existingOutDir(tmp) {
  const dir = path.join(tmp, `existing-${++existing}`)
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'keep.txt'), 'foreign file')
  return dir
}

/** (in a jest test) the foreign file of `existingOutDir` is all the directory holds, unchanged. */
function expectForeignFileKept(dir) {
  expect(fs.readdirSync(dir)).toEqual(['keep.txt'])
  expect(fs.readFileSync(path.join(dir, 'keep.txt'), 'utf8')).toBe('foreign file')
}

module.exports = { makeTmpDir, removeDir, sha256File, hashFiles, ourFiles, listTree, totalSize, existingOutDir, expectForeignFileKept }
