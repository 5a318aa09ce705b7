'use strict'
// Fixture writers and independent readers for dropin.spec.js: hyparquet-writer / plain hyparquet
// in a worker thread (dropin-worker.mjs), pyarrow / pyiceberg in python3 (dropin.py).

const path = require('path')
const { execFileSync } = require('child_process')
const { Worker } = require('worker_threads')

const WORKER = path.join(__dirname, 'dropin-worker.mjs')
const PY = path.join(__dirname, 'dropin.py')

function worker(op, ...args) {
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER, { workerData: { op, args } })
    let settled = false
    w.once('message', msg => {
      settled = true
      if (msg.ok) resolve(msg.result)
      else reject(new Error(`dropin-worker ${op}: ${msg.error.message}`))
    })
    w.once('error', err => { settled = true; reject(err) })
    w.once('exit', code => { if (!settled) reject(new Error(`dropin-worker ${op} exited with ${code}`)) })
  })
}

function py(op, req) {
  const out = execFileSync('python3', [PY], { input: JSON.stringify({ op, ...req }), encoding: 'utf8', maxBuffer: 256 << 20 })
  return JSON.parse(out)
}

/**
 * hyparquet-writer SchemaElement[] for flat columns [{ name, fieldId, type, required }], type one of
 * string | int | long | boolean | timestamptz | variant (written as Iceberg writes them: a VARIANT is
 * an optional group holding required binaries `metadata` and `value`), plus the `iceberg.schema`
 * key-value metadata for them.
 */
function hypSchema(cols) {
  const schema = [{ name: 'root', num_children: cols.length }]
  for (const { name, fieldId: field_id, type, required } of cols) {
    const repetition_type = required ? 'REQUIRED' : 'OPTIONAL'
    if (type === 'string') schema.push({ name, field_id, repetition_type, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } })
    else if (type === 'int') schema.push({ name, field_id, repetition_type, type: 'INT32' })
    else if (type === 'long') schema.push({ name, field_id, repetition_type, type: 'INT64' })
    else if (type === 'boolean') schema.push({ name, field_id, repetition_type, type: 'BOOLEAN' })
    else if (type === 'timestamptz') {
      schema.push({ name, field_id, repetition_type, type: 'INT64', converted_type: 'TIMESTAMP_MICROS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' } })
    } else if (type === 'variant') {
      schema.push(
        { name, field_id, repetition_type, num_children: 2, logical_type: { type: 'VARIANT' } },
        { name: 'metadata', repetition_type: 'REQUIRED', type: 'BYTE_ARRAY' },
        { name: 'value', repetition_type: 'REQUIRED', type: 'BYTE_ARRAY' })
    } else throw new Error(`hypSchema: unknown type ${type}`)
  }
  const iceberg = { type: 'struct', 'schema-id': 0, fields: cols.map(c => ({ id: c.fieldId, name: c.name, required: !!c.required, type: c.type === 'int' ? 'int' : c.type })) }
  return { schema, kvMetadata: [{ key: 'iceberg.schema', value: JSON.stringify(iceberg) }] }
}

/** Writes `file` with hyparquet-writer (SNAPPY): cols as for hypSchema, data { [name]: values[] }. */
function hypWriteTable(file, cols, data, options = {}) {
  const { schema, kvMetadata } = hypSchema(cols)
  return worker('write', file, { schema, kvMetadata, columnData: cols.map(c => ({ name: c.name, data: data[c.name] })), ...options })
}

module.exports = {
  hypSchema,
  hypWriteTable,
  /** Sorted canonical rows of `files` read by plain hyparquet (no hyparquet-compressors). */
  plainRows: files => worker('plainRows', files),
  /** pyarrow: write files [{ path, columns: [{ name, type, fieldId, nullable, values }], compression?, rowGroupSize? }]. */
  pyWrite: files => py('write', { files }),
  /** pyarrow + pyiceberg: per-file row groups, codec bytes, column counts and Iceberg bounds. */
  pyMeta: paths => py('meta', { paths }),
  /** pyiceberg BucketTransform(n) over values of Iceberg type `type` ('long' | 'int' | 'string'). */
  pyBucket: (n, type, values) => py('bucket', { n, type, values }),
}
