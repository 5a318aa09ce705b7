#!/usr/bin/env node
'use strict'
// Re-writes the pyarrow-written `unique` shape (fixtures/gen-unique.py) with another writer, file by
// file, each with its DEFAULT settings (bench/run.js --shape unique-duckdb / unique-hyparquet):
//
//   node bench/unique-rewrite.js spec.json
//     spec: { "writer": "duckdb" | "hyparquet", "out": dir, "files": [input.parquet, ...] }
//
// duckdb:    @duckdb/node-api, one `COPY (SELECT * FROM read_parquet('<in>')) TO '<out>' (FORMAT parquet)`
//            per file (DuckDB's defaults: SNAPPY, 122,880-row row groups, its own dictionary
//            heuristics; it drops field ids and the `iceberg.schema` key-value metadata and makes
//            REQUIRED columns OPTIONAL, as DuckDB does).
// hyparquet: each file read with hyparquet (hyparquet-compressors for ZSTD/GZIP, timestamps kept as
//            bigint microseconds) and written with hyparquet-writer's parquetWriteBuffer, codec
//            SNAPPY and its defaults otherwise (row groups of 1,000 then 100,000 rows, 1 MiB pages,
//            its dictionary heuristics), through the input's own Parquet schema elements (field
//            ids, nullability, logical types) and its `iceberg.schema` key-value metadata.
// File i of the input becomes out/part-NNNNN.parquet. Prints one JSON line:
//   { files, rows, bytes, writer, version, ms }

const fs = require('fs')
const path = require('path')

// a dependency's version (its package.json is not among its exports)
function packageVersion(name) {
  const dir = path.join(path.dirname(require.resolve('hyparquet')), '..', '..', name)
  try { return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version } catch { return 'unknown' }
}

function sqlString(s) { return `'${String(s).replace(/'/g, "''")}'` }

async function viaDuckdb(files, out) {
  const { DuckDBInstance } = require('@duckdb/node-api')
  const db = await DuckDBInstance.create(':memory:')
  const con = await db.connect()
  const version = (await con.runAndReadAll('SELECT version() AS v')).getRowObjectsJS()[0].v
  const written = []
  for (let i = 0; i < files.length; i++) {
    const dst = path.join(out, `part-${String(i).padStart(5, '0')}.parquet`)
    await con.run(`COPY (SELECT * FROM read_parquet(${sqlString(files[i])})) TO ${sqlString(dst)} (FORMAT parquet)`)
    written.push(dst)
  }
  con.closeSync()
  db.closeSync()
  return { written, version: `DuckDB ${version}` }
}

async function viaHyparquet(files, out) {
  const { parquetMetadataAsync, parquetRead, asyncBufferFromFile } = await import('hyparquet')
  const { compressors } = await import('hyparquet-compressors')
  const { parquetWriteBuffer } = await import('hyparquet-writer')
  const parsers = { timestampFromMicroseconds: v => v } // keep INT64 microseconds as they are
  const written = []
  for (let i = 0; i < files.length; i++) {
    const file = await asyncBufferFromFile(files[i])
    const metadata = await parquetMetadataAsync(file)
    const rows = await new Promise((resolve, reject) => {
      parquetRead({ file, metadata, compressors, parsers, utf8: true, onComplete: resolve }).catch(reject)
    })
    const leaves = metadata.schema.slice(1)
    if (leaves.some(e => e.num_children)) throw new Error(`${files[i]}: nested columns are not handled here`)
    const columnData = leaves.map((e, k) => ({ name: e.name, data: rows.map(r => r[k] ?? null) }))
    const schema = [{ name: 'root', num_children: leaves.length }, ...leaves.map(e => {
      const { name, type, repetition_type, converted_type, logical_type, field_id } = e
      const el = { name, type, repetition_type }
      if (converted_type) el.converted_type = converted_type
      if (logical_type) el.logical_type = logical_type
      if (field_id != null) el.field_id = field_id
      return el
    })]
    const kvMetadata = (metadata.key_value_metadata || []).filter(kv => kv.key === 'iceberg.schema')
    const buffer = parquetWriteBuffer({ columnData, schema, codec: 'SNAPPY', kvMetadata })
    const dst = path.join(out, `part-${String(i).padStart(5, '0')}.parquet`)
    fs.writeFileSync(dst, new Uint8Array(buffer))
    written.push(dst)
  }
  return { written, version: `hyparquet-writer ${packageVersion('hyparquet-writer')}` }
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))
  const out = path.resolve(spec.out)
  fs.mkdirSync(out, { recursive: true })
  const t0 = Date.now()
  const { written, version } = spec.writer === 'duckdb' ? await viaDuckdb(spec.files, out)
    : spec.writer === 'hyparquet' ? await viaHyparquet(spec.files, out)
      : (() => { throw new Error(`unknown writer ${spec.writer}`) })()
  const bytes = written.reduce((a, f) => a + fs.statSync(f).size, 0)
  console.log(JSON.stringify({ files: written, bytes, writer: spec.writer, version, ms: Date.now() - t0 }))
}

main().catch(err => { console.error(err && err.stack || err); process.exit(1) })
