#!/usr/bin/env node
'use strict'
// DuckDB peer for the compaction benchmark (@duckdb/node-api).
//
//   COPY (SELECT * FROM read_parquet([...files]) [ORDER BY ts])
//     TO '<outDir>' (FORMAT parquet, FILE_SIZE_BYTES '128MB', COMPRESSION zstd)
//
// With FILE_SIZE_BYTES, DuckDB treats the target as a directory and rolls to a new
// data_<n>.parquet file once the current one passes the size (checked per row group).
//
// CLI: node bench/duckdb.js [--sorted] [--no-shred] [--threads N] [--memory-limit 4GB]
//                           [--file-size 128MB] [--compression zstd] <outDir> <file.parquet...|list.json>
//   --sorted    ORDER BY ts (--sort-column to change)
//   --no-shred  keep VARIANT columns unshredded (SHREDDING {col: 'VARCHAR'} for every VARIANT column)
//      prints a JSON summary on stdout (settings used, output files, elapsed).

const fs = require('fs')
const path = require('path')
const { readFileList, listParquet } = require('./files')

const DEFAULTS = { threads: 2, memoryLimit: null, fileSize: '128MB', compression: 'zstd', sorted: false, sortColumn: 'ts', noShred: false }

function sqlString(s) {
  return `'${String(s).replace(/'/g, "''")}'`
}

function copySql(files, outDir, o, variantColumns = []) {
  const list = files.map(sqlString).join(', ')
  const order = o.sorted ? ` ORDER BY ${o.sortColumn}` : ''
  // DuckDB 1.5 auto-shreds VARIANT columns when writing Parquet. On wide, key-rich JSON (tool
  // definitions) that blows up (thousands of shredded leaf columns; time and memory grow roughly
  // with rows x distinct keys). SHREDDING {col: 'VARCHAR'} asks for a scalar shredding that objects
  // never match, so every value stays in the binary `value` column (plus an all-null typed_value).
  const shred = o.noShred && variantColumns.length
    ? `, SHREDDING {${variantColumns.map(c => `${sqlString(c)}: 'VARCHAR'`).join(', ')}}` : ''
  return `COPY (SELECT * FROM read_parquet([${list}])${order}) TO ${sqlString(outDir)} ` +
    `(FORMAT parquet, FILE_SIZE_BYTES ${sqlString(o.fileSize)}, COMPRESSION ${o.compression}${shred})`
}

async function duckdbCompact(files, opts = {}) {
  const o = { ...DEFAULTS, ...opts }
  if (!o.outDir) throw new Error('duckdbCompact: outDir is required')
  const { DuckDBInstance } = require('@duckdb/node-api')
  // COPY ... TO <dir> requires a missing or empty directory
  fs.mkdirSync(path.dirname(path.resolve(o.outDir)), { recursive: true })
  const t0 = Date.now()
  const instance = await DuckDBInstance.create(':memory:')
  const con = await instance.connect()
  await con.run(`SET threads=${Number(o.threads)}`)
  if (o.memoryLimit) await con.run(`SET memory_limit=${sqlString(o.memoryLimit)}`)
  const settings = (await con.runAndReadAll(
    "SELECT name, value FROM duckdb_settings() WHERE name IN ('threads', 'memory_limit', 'preserve_insertion_order')"
  )).getRowObjectsJson()
  const version = (await con.runAndReadAll('SELECT version() AS v')).getRowObjectsJson()[0].v
  let variantColumns = []
  if (o.noShred) {
    variantColumns = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet([${sqlString(files[0])}])`))
      .getRowObjectsJS().filter(r => r.column_type === 'VARIANT').map(r => r.column_name)
  }
  const sql = copySql(files, o.outDir, o, variantColumns)
  const res = await con.run(sql)
  const rowsWritten = Number(res.rowsChanged)
  con.closeSync()
  instance.closeSync()
  const out = listParquet(o.outDir).map(p => ({ path: p, size: fs.statSync(p).size }))
  return {
    files: out,
    rowsWritten,
    bytesWritten: out.reduce((a, f) => a + f.size, 0),
    elapsedMs: Date.now() - t0,
    duckdbVersion: version,
    settings: Object.fromEntries(settings.map(r => [r.name, r.value])),
    sql: sql.replace(/read_parquet\(\[.*?\]\)/, `read_parquet([<${files.length} files>])`).replace(/ TO '[^']*'/, " TO '<outDir>'"),
  }
}


async function main() {
  const argv = process.argv.slice(2)
  const opts = {}
  const pos = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--sorted') opts.sorted = true
    else if (a === '--threads') opts.threads = Number(argv[++i])
    else if (a === '--memory-limit') opts.memoryLimit = argv[++i]
    else if (a === '--file-size') opts.fileSize = argv[++i]
    else if (a === '--compression') opts.compression = argv[++i]
    else if (a === '--sort-column') opts.sortColumn = argv[++i]
    else if (a === '--no-shred') opts.noShred = true
    else pos.push(a)
  }
  const [outDir, ...rest] = pos
  if (!outDir || !rest.length) {
    console.error('usage: node bench/duckdb.js [--sorted] [--no-shred] [--threads N] [--memory-limit X] <outDir> <file.parquet...|list.json>')
    process.exit(2)
  }
  const files = readFileList(rest)
  const res = await duckdbCompact(files, { ...opts, outDir })
  const sizes = res.files.map(f => f.size)
  console.log(JSON.stringify({
    tool: ['duckdb', opts.noShred && 'noshred', opts.sorted && 'sorted'].filter(Boolean).join('-'),
    outputFiles: res.files.length,
    rowsWritten: res.rowsWritten,
    bytesWritten: res.bytesWritten,
    avgFileBytes: Math.round(res.bytesWritten / Math.max(1, sizes.length)),
    maxFileBytes: Math.max(0, ...sizes),
    elapsedMs: res.elapsedMs,
    duckdbVersion: res.duckdbVersion,
    settings: res.settings,
    sql: res.sql,
  }))
}

module.exports = { duckdbCompact, copySql, listParquet }

if (require.main === module) {
  main().catch(err => { console.error(err && err.stack || err); process.exit(1) })
}
