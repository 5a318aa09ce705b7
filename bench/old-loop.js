#!/usr/bin/env node
'use strict'
// Re-implementation of the OLD JS compactGeneration loop (the one that produced
// 230 x ~0.5 MB files for a 52,329-row day; see the README's "Why"):
//
//   for each input file, in manifest order, for each row:
//     drop the row if its _hyp_cache_row_id was already seen in this generation
//     append it to the batch, add its *estimated* in-memory size
//     flush when the batch holds 10,000 rows or its estimate reaches 32 MiB
//   flush the remainder
//
// Every flush writes ONE new parquet file (hyparquet-writer, SNAPPY) with the
// input's schema elements (field ids, logical types, VARIANT groups) and the
// `iceberg.schema` key-value metadata. That "one file per flush" is the defect.
//
// Module:  const { oldCompact } = require('./old-loop.js')
//          await oldCompact(files, { outDir })  ->  { files: [{ path, size }], ... }
// CLI:     node bench/old-loop.js <outDir> <file.parquet>...
//          node bench/old-loop.js <outDir> <list.json>     (JSON array of paths, or { files: [...] })
//          prints the result summary as one JSON line on stdout.

const fs = require('fs')
const path = require('path')
const { readFileList } = require('./files')

const COMPACT_BATCH_SIZE = 10_000
const COMPACT_BATCH_BYTES = 32 * 1024 * 1024
const DEDUPE_COLUMN = '_hyp_cache_row_id'

// Estimated in-memory bytes of a decoded JS value, as the old loop counted them.
function estimateBytes(value) {
  if (value === null || value === undefined) return 0
  switch (typeof value) {
    case 'string': return 2 * value.length
    case 'number': return 8
    case 'bigint': return 16
    case 'boolean': return 4
    case 'object': break
    default: return 0
  }
  if (value instanceof Date) return 8
  if (value instanceof Uint8Array) return value.length
  if (ArrayBuffer.isView(value)) return value.byteLength
  if (Array.isArray(value)) {
    let n = 0
    for (const v of value) n += estimateBytes(v)
    return n
  }
  let n = 0
  for (const key in value) {
    n += 2 * key.length + estimateBytes(value[key])
  }
  return n
}

let libs
async function loadLibs() {
  if (!libs) {
    const [hyparquet, compressorsMod, writer] = await Promise.all([
      import('hyparquet'),
      import('hyparquet-compressors'),
      import('hyparquet-writer'),
    ])
    libs = { hyparquet, compressors: compressorsMod.compressors, writer }
  }
  return libs
}

// Top-level column names of a flat parquet schema element list (children of the root).
function topLevelColumns(schema) {
  const names = []
  let i = 1
  function skip() { // advance i past one element and all its descendants
    const el = schema[i++]
    for (let c = 0; c < (el.num_children || 0); c++) skip()
  }
  while (i < schema.length) {
    names.push(schema[i].name)
    skip()
  }
  return names
}

async function oldCompact(files, opts = {}) {
  const {
    outDir,
    batchRows = COMPACT_BATCH_SIZE,
    batchBytes = COMPACT_BATCH_BYTES,
    dedupeColumn = DEDUPE_COLUMN,
    prefix = 'old',
  } = opts
  if (!outDir) throw new Error('oldCompact: outDir is required')
  fs.mkdirSync(outDir, { recursive: true })
  const { hyparquet, compressors, writer } = await loadLibs()
  const t0 = Date.now()

  let schema, columns, kvMetadata
  const seen = new Set()
  let batch = []
  let batchEst = 0
  let rowsRead = 0
  let duplicatesDropped = 0
  const out = []

  function flush() {
    if (!batch.length) return
    const filename = path.join(outDir, `${prefix}-${String(out.length).padStart(5, '0')}.parquet`)
    const columnData = columns.map(name => ({ name, data: batch.map(row => row[name] ?? null) }))
    writer.parquetWrite({
      writer: writer.fileWriter(filename), // hyparquet-writer's node file sink
      schema,
      columnData,
      codec: 'SNAPPY',
      kvMetadata,
    })
    out.push({ path: filename, size: fs.statSync(filename).size, rows: batch.length, estimatedBytes: batchEst })
    batch = []
    batchEst = 0
  }

  for (const file of files) {
    const buf = await hyparquet.asyncBufferFromFile(file)
    const metadata = await hyparquet.parquetMetadataAsync(buf)
    if (!schema) {
      schema = metadata.schema
      columns = topLevelColumns(schema)
      const ice = (metadata.key_value_metadata || []).find(kv => kv.key === 'iceberg.schema')
      kvMetadata = ice ? [{ key: ice.key, value: ice.value }] : undefined
    }
    // hyparquet decodes a whole row group at a time; read one row group per call
    let rowStart = 0
    for (const rg of metadata.row_groups) {
      const rowEnd = rowStart + Number(rg.num_rows)
      const rows = await hyparquet.parquetReadObjects({ file: buf, metadata, compressors, rowStart, rowEnd })
      rowStart = rowEnd
      for (const row of rows) {
        rowsRead++
        const id = row[dedupeColumn]
        if (id !== undefined && id !== null) {
          if (seen.has(id)) { duplicatesDropped++; continue }
          seen.add(id)
        }
        batch.push(row)
        batchEst += estimateBytes(row)
        if (batch.length >= batchRows || batchEst >= batchBytes) flush()
      }
    }
  }
  flush()

  const bytesWritten = out.reduce((a, f) => a + f.size, 0)
  return {
    files: out,
    inputFiles: files.length,
    rowsRead,
    rowsWritten: rowsRead - duplicatesDropped,
    duplicatesDropped,
    bytesWritten,
    elapsedMs: Date.now() - t0,
  }
}


async function main() {
  const [outDir, ...rest] = process.argv.slice(2)
  if (!outDir || !rest.length) {
    console.error('usage: node bench/old-loop.js <outDir> <file.parquet...|list.json>')
    process.exit(2)
  }
  const files = readFileList(rest)
  const res = await oldCompact(files, { outDir })
  const sizes = res.files.map(f => f.size)
  console.log(JSON.stringify({
    tool: 'old-loop',
    outputFiles: res.files.length,
    rowsRead: res.rowsRead,
    rowsWritten: res.rowsWritten,
    duplicatesDropped: res.duplicatesDropped,
    bytesWritten: res.bytesWritten,
    avgFileBytes: Math.round(res.bytesWritten / Math.max(1, sizes.length)),
    maxFileBytes: Math.max(0, ...sizes),
    avgRowsPerFile: Math.round(res.rowsWritten / Math.max(1, sizes.length)),
    elapsedMs: res.elapsedMs,
  }))
}

module.exports = { oldCompact, estimateBytes, topLevelColumns, COMPACT_BATCH_SIZE, COMPACT_BATCH_BYTES }

if (require.main === module) {
  main().catch(err => { console.error(err && err.stack || err); process.exit(1) })
}
