'use strict'
// Input listing and Parquet footers for the CLI. Footers are read with hyparquet (its metadata
// parser only: no page is decoded), for `inspect` and the before/after summary of `compact`.

const fs = require('fs')
const path = require('path')

/**
 * Expands the command line's paths: a directory stands for its `*.parquet` files (not recursive,
 * in name order: the order decides which duplicate survives `--dedupe`); anything else is kept
 * as given, so that a missing file reaches compactGeneration and fails with ERR_INPUT_NOT_FOUND.
 */
function expandInputs(args) {
  const files = []
  for (const arg of args) {
    let st = null
    try {
      st = fs.statSync(arg)
    } catch {
      st = null
    }
    if (st && st.isDirectory()) {
      const names = fs.readdirSync(arg).filter((n) => n.endsWith('.parquet')).sort()
      for (const n of names) files.push(path.join(arg, n))
    } else {
      files.push(arg)
    }
  }
  return files
}

let hyparquet
async function lib() {
  hyparquet ??= await import('hyparquet')
  return hyparquet
}

/**
 * One file's footer summary: `{ path, bytes, rows, rowGroups, codecs, sortingColumns, columns }`,
 * or `{ path, bytes?, error }` when it cannot be read (missing, not Parquet, corrupt footer).
 */
async function describe(file) {
  let bytes
  try {
    bytes = fs.statSync(file).size
  } catch (e) {
    return { path: file, error: e.code === 'ENOENT' ? 'not found' : e.message, code: e.code === 'ENOENT' ? 'ERR_INPUT_NOT_FOUND' : 'ERR_IO' }
  }
  try {
    const { asyncBufferFromFile, parquetMetadataAsync } = await lib()
    const meta = await parquetMetadataAsync(await asyncBufferFromFile(file))
    const codecs = new Set()
    let sortingColumns = null
    const leafPaths = (meta.row_groups[0]?.columns ?? []).map((c) => (c.meta_data?.path_in_schema ?? []).join('.'))
    for (const rg of meta.row_groups) {
      for (const c of rg.columns) if (c.meta_data) codecs.add(c.meta_data.codec)
      const sc = (rg.sorting_columns ?? []).map((s) => ({
        column: leafPaths[s.column_idx] ?? `#${s.column_idx}`,
        descending: Boolean(s.descending),
        nullsFirst: Boolean(s.nulls_first),
      }))
      // A file is sorted by a key only if every row group declares it.
      sortingColumns = sortingColumns === null ? sc : JSON.stringify(sortingColumns) === JSON.stringify(sc) ? sortingColumns : []
    }
    return {
      path: file,
      bytes,
      rows: Number(meta.num_rows),
      rowGroups: meta.row_groups.length,
      codecs: [...codecs].sort(),
      sortingColumns: sortingColumns ?? [],
      columns: leafPaths.length,
    }
  } catch (e) {
    return { path: file, bytes, error: `not a readable Parquet file: ${e.message}`, code: 'ERR_INPUT_CORRUPT' }
  }
}

/** Footers of many files, a few at a time. */
async function describeAll(files, concurrency = 8) {
  const out = new Array(files.length)
  let next = 0
  async function worker() {
    while (next < files.length) {
      const i = next++
      out[i] = await describe(files[i])
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker))
  return out
}

/** Totals of described files (unreadable ones count in `files` and `unreadable` only). */
function totals(described) {
  const ok = described.filter((d) => !d.error)
  const codecs = new Set(ok.flatMap((d) => d.codecs))
  return {
    files: described.length,
    unreadable: described.length - ok.length,
    bytes: described.reduce((a, d) => a + (d.bytes ?? 0), 0),
    rows: ok.reduce((a, d) => a + d.rows, 0),
    rowGroups: ok.reduce((a, d) => a + d.rowGroups, 0),
    codecs: [...codecs].sort(),
  }
}

module.exports = { expandInputs, describe, describeAll, totals }
