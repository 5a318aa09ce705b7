// Worker-thread entry for dropin.spec.js (ESM packages cannot be imported inside jest's vm
// context; see hyp-worker.mjs). workerData = { op, args }.
//   write(file, options): hyparquet-writer's parquetWriteBuffer(options) written to `file`
//   plainRows(files): every row of `files` as read by plain hyparquet, WITHOUT
//     hyparquet-compressors (the host's retention reader), as sorted canonical JSON lines

import { parentPort, workerData } from 'node:worker_threads'
import fs from 'node:fs'

function canon(row) {
  const keys = Object.keys(row).sort()
  return JSON.stringify(keys.map(k => [k, row[k]]), (_k, v) => {
    if (typeof v === 'bigint') return `${v}n`
    if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString('base64') }
    if (v instanceof Date) return { $date: v.toISOString() }
    if (v === undefined) return null
    return v
  })
}

const ops = {
  async write(file, options) {
    const { parquetWriteBuffer } = await import('hyparquet-writer')
    const buffer = parquetWriteBuffer(options)
    fs.writeFileSync(file, new Uint8Array(buffer))
    return { bytes: buffer.byteLength }
  },
  async plainRows(files) {
    const { parquetReadObjects, asyncBufferFromFile } = await import('hyparquet')
    const lines = []
    for (const f of files) {
      const rows = await parquetReadObjects({ file: await asyncBufferFromFile(f) })
      for (const r of rows) lines.push(canon(r))
    }
    return lines.sort()
  },
}

try {
  const { op, args } = workerData
  const result = await ops[op](...args)
  parentPort.postMessage({ ok: true, result })
} catch (err) {
  parentPort.postMessage({ ok: false, error: { message: err && err.message, stack: err && err.stack } })
}
