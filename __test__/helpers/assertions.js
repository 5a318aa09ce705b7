'use strict'
// Assertions shared by the specs.

const fs = require('fs')
const path = require('path')
const util = require('util')
const { hashFiles, ourFiles } = require('./fsutil')

/** Awaits `promise` and returns the rejection; fails the test if it resolves. */
async function rejectionOf(promise) {
  try {
    const value = await promise
    throw Object.assign(new Error(`expected a rejection, got a result with ${value && value.files ? value.files.length : '?'} files`), { resolved: value })
  } catch (err) {
    if (err && err.resolved !== undefined) throw err
    return err
  }
}

/**
 * `err instanceof Error` as a caller outside jest sees it. Jest runs specs in a vm context whose
 * `Error` is not the one the addon (and Node itself) constructs errors with, so a plain
 * `instanceof Error` is false here even for fs errors; a native Error of the main realm is
 * recognised by util.types.isNativeError and its constructor name. (errors.spec.js also checks
 * `instanceof Error` for real in a child process.)
 */
function expectError(err) {
  expect(util.types.isNativeError(err)).toBe(true)
  expect(Object.getPrototypeOf(err).constructor.name).toBe('Error')
}

/**
 * Runs `call()` (a compactGeneration promise factory) expecting a typed rejection, and checks the
 * common error contract: an Error with `code`, a message naming `mentions` (file paths, columns),
 * no file of ours left in `outDir`, inputs byte-identical.
 */
async function expectCompactError(call, { code, mentions = [], outDir, inputs = [], message } = {}) {
  const before = hashFiles(inputs)
  const err = await rejectionOf(call())
  expectError(err)
  expect({ code: err.code, message: err.message }).toEqual({ code, message: expect.any(String) })
  for (const m of mentions) expect(err.message).toContain(m)
  if (message) expect(err.message).toMatch(message)
  if (outDir) expect(ourFiles(outDir)).toEqual([])
  expect(hashFiles(inputs)).toEqual(before)
  return err
}

/** Lists the first `n` differences between two sorted string arrays (a multiset diff). */
function multisetDiff(expected, actual, n = 5) {
  const count = arr => arr.reduce((m, x) => m.set(x, (m.get(x) || 0) + 1), new Map())
  const a = count(expected)
  const b = count(actual)
  const missing = []
  const extra = []
  for (const [k, v] of a) if ((b.get(k) || 0) < v) missing.push(k)
  for (const [k, v] of b) if ((a.get(k) || 0) < v) extra.push(k)
  return { missing: missing.length, extra: extra.length, missingSample: missing.slice(0, n), extraSample: extra.slice(0, n) }
}

/** Output paths of a result, checked to be under outDir. */
function outputPaths(result, outDir) {
  return result.files.map(f => {
    expect(path.dirname(f.path)).toBe(path.resolve(outDir))
    expect(fs.existsSync(f.path)).toBe(true)
    return f.path
  })
}

/**
 * The outputs of a `dedupeBy: '_hyp_cache_row_id'` call hold exactly the first occurrence of each
 * row id in `inputs` (files order, then row order), by DuckDB's reading of both, and the call's
 * `duplicatesDropped` agrees (and is not zero: the check can fail).
 */
async function expectFirstOccurrencesSurvive(duck, inputs, inputRows, result) {
  const expected = await duck.firstOccurrenceChecksum(inputs, '_hyp_cache_row_id')
  const { perColumn, ...output } = await duck.checksum(result.files.map(f => f.path))
  expect(output).toEqual(expected)
  expect(result.duplicatesDropped).toBe(inputRows - Number(expected.n))
  expect(result.duplicatesDropped).toBeGreaterThan(0)
}

module.exports = {
  expectFirstOccurrencesSurvive, expectError, rejectionOf, expectCompactError, multisetDiff, outputPaths }
