'use strict'
// Builds corrupted copies of Parquet files: locates a data page through the footer (DuckDB's
// parquet_metadata), parses its Thrift PageHeader, and breaks the compressed body so that every
// decoder must notice (not just flips random bytes that a codec might pass through silently).

const fs = require('fs')

// ---- minimal Thrift compact protocol reader (enough for PageHeader) -------------------------

class CompactReader {
  constructor(buf, pos) {
    this.buf = buf
    this.pos = pos
  }
  byte() {
    if (this.pos >= this.buf.length) throw new Error('thrift: out of data')
    return this.buf[this.pos++]
  }
  varint() {
    let result = 0n
    let shift = 0n
    for (;;) {
      const b = this.byte()
      result |= BigInt(b & 0x7f) << shift
      if (!(b & 0x80)) return result
      shift += 7n
    }
  }
  zigzag() {
    const v = this.varint()
    return Number((v >> 1n) ^ -(v & 1n))
  }
  value(type) {
    switch (type) {
    case 1: return true
    case 2: return false
    case 3: return this.byte()
    case 4: case 5: case 6: return this.zigzag()
    case 7: this.pos += 8; return null
    case 8: { const n = Number(this.varint()); const s = this.buf.subarray(this.pos, this.pos + n); this.pos += n; return s }
    case 9: case 10: {
      const h = this.byte()
      let size = h >> 4
      const et = h & 0x0f
      if (size === 15) size = Number(this.varint())
      const out = []
      for (let i = 0; i < size; i++) out.push(et === 1 || et === 2 ? this.byte() === 1 : this.value(et))
      return out
    }
    case 11: {
      const size = Number(this.varint())
      if (size === 0) return []
      const kv = this.byte()
      const out = []
      for (let i = 0; i < size; i++) out.push([this.value(kv >> 4), this.value(kv & 0x0f)])
      return out
    }
    case 12: return this.struct()
    default: throw new Error(`thrift: unknown type ${type}`)
    }
  }
  /** A struct as { fieldId: value }. */
  struct() {
    const out = {}
    let last = 0
    for (;;) {
      const h = this.byte()
      if (h === 0) return out
      const delta = h >> 4
      const type = h & 0x0f
      const id = delta ? last + delta : this.zigzag()
      last = id
      out[id] = this.value(type)
    }
  }
}

const PAGE_TYPES = { 0: 'DATA_PAGE', 1: 'INDEX_PAGE', 2: 'DICTIONARY_PAGE', 3: 'DATA_PAGE_V2' }

/** The PageHeader at `offset`: { type, uncompressedSize, compressedSize, headerLength, bodyStart, v2 }. */
function readPageHeader(buf, offset) {
  const r = new CompactReader(buf, offset)
  const h = r.struct()
  const v2 = h[8] || null
  return {
    type: PAGE_TYPES[h[1]] || String(h[1]),
    uncompressedSize: h[2],
    compressedSize: h[3],
    headerLength: r.pos - offset,
    bodyStart: r.pos,
    // DataPageHeaderV2: levels precede the (possibly compressed) values, uncompressed
    levelsLength: v2 ? (v2[5] || 0) + (v2[6] || 0) : 0,
    v2IsCompressed: v2 ? v2[7] !== false : null,
  }
}

/**
 * Copies `source` to `target` and breaks the first data page of `columnPath` (e.g. 'request_id')
 * in row group `rowGroup`: right after the snappy length preamble, the first element becomes a
 * back-reference (copy, offset 1) although nothing has been decoded yet — invalid in every snappy
 * decoder. Returns what was changed.
 */
async function corruptDataPage(duck, source, target, columnPath, rowGroup = 0) {
  const meta = await duck.metadata(source)
  const col = meta.find(m => m.rg === rowGroup && m.path === columnPath)
  if (!col) throw new Error(`corruptDataPage: no column ${columnPath} in row group ${rowGroup} of ${source}`)
  if (col.compression !== 'SNAPPY') throw new Error(`corruptDataPage: expects SNAPPY, ${columnPath} is ${col.compression}`)
  const buf = Buffer.from(fs.readFileSync(source))
  const offset = Number(col.data_off)
  const header = readPageHeader(buf, offset)
  if (header.type !== 'DATA_PAGE' && header.type !== 'DATA_PAGE_V2') {
    throw new Error(`corruptDataPage: page at ${offset} is ${header.type}`)
  }
  if (header.type === 'DATA_PAGE_V2' && !header.v2IsCompressed) throw new Error('corruptDataPage: v2 page is not compressed')
  let p = header.bodyStart + header.levelsLength
  // skip the snappy preamble (varint uncompressed length)
  while (buf[p] & 0x80) p++
  p++
  const before = buf.subarray(p, p + 3).toString('hex')
  buf[p] = 0x02 // tag: copy with 2-byte offset, length 1
  buf[p + 1] = 0x01 // offset 1 (little endian) ...
  buf[p + 2] = 0x00 // ... before any byte was produced
  fs.writeFileSync(target, buf)
  return { offset, header, patchedAt: p, before, after: buf.subarray(p, p + 3).toString('hex') }
}

module.exports = { readPageHeader, corruptDataPage }
