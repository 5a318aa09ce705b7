// Worker-thread entry for everything that needs ESM packages (hyparquet, hyparquet-compressors,
// hyparquet-writer via the fixture generator). Jest runs spec files inside a vm context where
// dynamic import() is unavailable without --experimental-vm-modules, so specs hand this work to
// a real Node worker through ./hyp.js. One operation per worker: workerData = { op, args }.

import { parentPort, workerData } from 'node:worker_threads'
import { createRequire } from 'node:module'
import { createHash } from 'node:crypto'
import fs from 'node:fs'

const require = createRequire(import.meta.url)

/** Decode TIMESTAMP(MICROS) as the exact bigint: no ms truncation on either side of a comparison. */
const EXACT_PARSERS = {
  timestampFromMicroseconds: v => v,
  timestampFromMilliseconds: v => v,
  timestampFromNanoseconds: v => v,
}

/** JSON with bigint, Date and byte arrays spelled out, object key order preserved. */
function stableJson(value) {
  return JSON.stringify(value, (_k, v) => {
    if (typeof v === 'bigint') return `${v}n`
    if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString('base64') }
    if (v === undefined) return null
    return v
  })
}

function sha(s) {
  return createHash('sha256').update(s).digest('hex').slice(0, 32)
}

async function hyp() {
  const hyparquet = await import('hyparquet')
  const { compressors } = await import('hyparquet-compressors')
  return { ...hyparquet, compressors }
}

/** Rows of one file (all columns unless `columns`), exact timestamps. */
async function readRows(file, { columns, exact = true } = {}) {
  const { parquetReadObjects, asyncBufferFromFile, compressors } = await hyp()
  const buf = await asyncBufferFromFile(file)
  return parquetReadObjects({ file: buf, compressors, columns, parsers: exact ? EXACT_PARSERS : undefined })
}

const ops = {
  /** generatePartition from fixtures/gen-partition.js (it imports hyparquet-writer). */
  async generate(opts) {
    const { generatePartition } = require('../../fixtures/gen-partition.js')
    return generatePartition(opts)
  },

  /**
   * One entry per row over all `files`: `<_hyp_cache_row_id> <digest of the whole row>`, sorted
   * (a row multiset). The digest covers every column, with its name, in the row's key order
   * sorted by name; nested (VARIANT) values keep their decoded key order.
   */
  async rowDigests(files, { columns, idColumn = '_hyp_cache_row_id' } = {}) {
    const entries = []
    const keysSeen = new Set()
    for (const f of files) {
      const rows = await readRows(f, { columns })
      for (const row of rows) {
        const keys = Object.keys(row).sort()
        for (const k of keys) keysSeen.add(k)
        const canon = keys.map(k => [k, row[k]])
        entries.push(`${row[idColumn]} ${sha(stableJson(canon))}`)
      }
    }
    entries.sort()
    return { count: entries.length, entries, columns: [...keysSeen].sort() }
  },

  /** A sample of decoded rows (exact timestamps unless exact=false). */
  async sampleRows(file, { columns, limit = 5, exact = true } = {}) {
    const rows = await readRows(file, { columns, exact })
    return rows.slice(0, limit)
  },

  /** Footer facts as hyparquet sees them. */
  async metadata(file) {
    const { parquetMetadataAsync, asyncBufferFromFile } = await hyp()
    const md = await parquetMetadataAsync(await asyncBufferFromFile(file))
    return {
      numRows: Number(md.num_rows),
      rowGroups: md.row_groups.map(rg => ({
        numRows: Number(rg.num_rows),
        columns: rg.columns.map(c => ({
          path: c.meta_data.path_in_schema.join('.'),
          codec: c.meta_data.codec,
          dataPageOffset: Number(c.meta_data.data_page_offset),
          dictionaryPageOffset: c.meta_data.dictionary_page_offset === undefined ? null : Number(c.meta_data.dictionary_page_offset),
          totalCompressedSize: Number(c.meta_data.total_compressed_size),
        })),
      })),
      keyValue: (md.key_value_metadata || []).map(kv => ({ key: kv.key, value: kv.value })),
      schema: md.schema.map(e => ({
        name: e.name,
        type: e.type ?? null,
        repetition: e.repetition_type ?? null,
        fieldId: e.field_id ?? null,
        logicalType: e.logical_type ? stableJson(e.logical_type) : null,
        numChildren: e.num_children ?? null,
      })),
    }
  },

  /**
   * Writes a copy of `source` (a fixture file) whose column `column` is re-typed: the schema
   * element gets `patch` and every value goes through the named conversion `convert`
   * ('string' | 'bigint'). Used to build inputs with a conflicting or widened schema.
   */
  async retypedCopy(source, target, { column, patch, convert, addColumn }) {
    const { parquetWriteBuffer } = await import('hyparquet-writer')
    const { parquetSchemaElements, COLUMNS, icebergSchema } = require('../../fixtures/gen-partition.js')
    const rows = await readRows(source)
    const schema = parquetSchemaElements().map(e => ({ ...e }))
    const names = COLUMNS.map(c => c[0])
    const CONVERSIONS = {
      string: v => (v === null || v === undefined ? v : String(v)),
      bigint: v => (v === null || v === undefined ? v : BigInt(v)),
    }
    if (convert && !CONVERSIONS[convert]) throw new Error(`unknown conversion ${convert}`)
    const conv = convert ? CONVERSIONS[convert] : v => v
    if (column) {
      const el = schema.find(e => e.name === column)
      if (!el) throw new Error(`no column ${column}`)
      for (const k of Object.keys(patch)) {
        if (patch[k] === null) delete el[k]
        else el[k] = patch[k]
      }
    }
    const columnData = names.map(name => ({
      name,
      data: rows.map(r => (name === column ? conv(r[name]) : r[name])),
    }))
    const iceberg = icebergSchema()
    if (addColumn) {
      // an optional column added later, with the next field id
      schema[0] = { ...schema[0], num_children: schema[0].num_children + 1 }
      schema.push({ name: addColumn.name, field_id: addColumn.fieldId, repetition_type: 'OPTIONAL', type: 'INT32' })
      columnData.push({ name: addColumn.name, data: rows.map((_r, i) => i) })
      iceberg.fields.push({ id: addColumn.fieldId, name: addColumn.name, required: false, type: 'int' })
    }
    const buffer = parquetWriteBuffer({
      schema,
      columnData,
      codec: 'SNAPPY',
      kvMetadata: [{ key: 'iceberg.schema', value: JSON.stringify(iceberg) }],
    })
    fs.writeFileSync(target, new Uint8Array(buffer))
    return { rows: rows.length }
  },

  /**
   * Writes `columnData` (hyparquet-writer's ColumnSource list; `bigint: true` on a column turns
   * its numbers into BigInt) to `target` with hyparquet-writer.
   */
  async writeColumns(target, { columnData, rowGroupSize, codec = 'SNAPPY' }) {
    const { parquetWriteBuffer } = await import('hyparquet-writer')
    const columns = columnData.map(({ bigint, ...c }) => (bigint ? { ...c, data: c.data.map(v => (v === null ? null : BigInt(v))) } : c))
    fs.writeFileSync(target, new Uint8Array(parquetWriteBuffer({ columnData: columns, rowGroupSize, codec })))
    return { rows: columnData[0].data.length }
  },
}

try {
  const { op, args } = workerData
  if (!ops[op]) throw new Error(`hyp-worker: unknown op ${op}`)
  const result = await ops[op](...args)
  parentPort.postMessage({ ok: true, result })
} catch (err) {
  parentPort.postMessage({ ok: false, error: { message: err && err.message, stack: err && err.stack } })
}
