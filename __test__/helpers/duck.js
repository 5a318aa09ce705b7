'use strict'
// DuckDB (@duckdb/node-api) as an independent reader of inputs and outputs.

const { DuckDBInstance } = require('@duckdb/node-api')

function sqlString(s) {
  return `'${String(s).replace(/'/g, "''")}'`
}

function fileList(files) {
  return `[${files.map(sqlString).join(', ')}]`
}

// The main checksum figures over a relation aliased `t`: row ids, exact µs timestamps and a
// whole-row hash (every column of the row, VARIANTs as DuckDB decodes them).
const CHECKSUM_SELECT = `
  SELECT count(*)::VARCHAR AS n,
         sum(hash(_hyp_cache_row_id))::VARCHAR AS ids,
         sum(epoch_us(ts))::VARCHAR AS ts_us,
         sum(epoch_us(ingested_at))::VARCHAR AS ingested_us,
         sum(epoch_us(started_at))::VARCHAR AS started_us,
         sum(hash(t))::VARCHAR AS whole_row`

async function openDuck() {
  const instance = await DuckDBInstance.create(':memory:')
  const con = await instance.connect()
  await con.run('SET threads=1')
  const q = async sql => (await con.runAndReadAll(sql)).getRowObjectsJson()
  return {
    q,
    /**
     * count and checksums over a set of files: row ids, exact µs timestamps, a whole-row hash
     * (every column of the row, VARIANTs as DuckDB decodes them), and one hash sum per column.
     */
    async checksum(files) {
      const [r] = await q(`${CHECKSUM_SELECT} FROM read_parquet(${fileList(files)}) AS t`)
      const [cols] = await q(`SELECT sum(hash(COLUMNS(*)))::VARCHAR FROM read_parquet(${fileList(files)})`)
      return { ...r, perColumn: cols }
    },
    /**
     * `checksum`'s main figures over the first occurrence of each `key` value only, in `files`
     * order then row order, and every row whose key is null (what `dedupeBy` must keep),
     * computed by DuckDB alone.
     */
    async firstOccurrenceChecksum(files, key) {
      const order = files.map((f, i) => `(${sqlString(f)}, ${i})`).join(', ')
      const [r] = await q(`
        WITH o AS (SELECT * FROM (VALUES ${order}) AS o(fname, idx)),
        ranked AS (
          SELECT r.*, row_number() OVER (PARTITION BY r."${key}" ORDER BY o.idx, r.file_row_number) AS rn_
          FROM read_parquet(${fileList(files)}, filename = true, file_row_number = true) AS r
          JOIN o ON r.filename = o.fname),
        t AS (SELECT * EXCLUDE (filename, file_row_number, rn_) FROM ranked WHERE rn_ = 1 OR "${key}" IS NULL)
        ${CHECKSUM_SELECT} FROM t`)
      return r
    },
    /** parquet_metadata rows of one file (one per row group x leaf column). */
    async metadata(file) {
      return q(`SELECT row_group_id::INT AS rg, row_group_num_rows::BIGINT AS rg_rows,
                       row_group_compressed_bytes::BIGINT AS rg_compressed,
                       column_id::INT AS col, path_in_schema AS path,
                       data_page_offset::BIGINT AS data_off, dictionary_page_offset::BIGINT AS dict_off,
                       total_compressed_size::BIGINT AS size, compression, num_values::BIGINT AS num_values
                FROM parquet_metadata(${sqlString(file)}) ORDER BY rg, col`)
    },
    async fileMetadata(file) {
      const [r] = await q(`SELECT num_rows::BIGINT AS num_rows, num_row_groups::BIGINT AS num_row_groups,
                                  file_size_bytes::BIGINT AS file_size, footer_size::BIGINT AS footer_size
                           FROM parquet_file_metadata(${sqlString(file)})`)
      return { numRows: Number(r.num_rows), numRowGroups: Number(r.num_row_groups), fileSize: Number(r.file_size), footerSize: Number(r.footer_size) }
    },
    async kv(file) {
      return q(`SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${sqlString(file)}) ORDER BY key`)
    },
    async schema(file) {
      return q(`SELECT name, type, repetition_type, converted_type, logical_type, field_id::INT AS field_id, num_children::INT AS num_children
                FROM parquet_schema(${sqlString(file)})`)
    },
    /** count(*) - count(col) for every top-level column. */
    async nullCounts(file, columns) {
      const exprs = columns.map(c => `(count(*) - count("${c}"))::BIGINT AS "${c}"`).join(', ')
      const [r] = await q(`SELECT ${exprs} FROM read_parquet(${sqlString(file)})`)
      return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)]))
    },
    close() {
      try { con.closeSync() } catch (_) { /* ignore */ }
      try { instance.closeSync() } catch (_) { /* ignore */ }
    },
  }
}

module.exports = { openDuck, sqlString, fileList }
