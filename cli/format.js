'use strict'
// Human and machine output of the CLI.

const path = require('path')

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
function bytes(n) {
  if (!Number.isFinite(n)) return '?'
  let i = 0
  let v = n
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024
    i++
  }
  return i === 0 ? `${v} B` : `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} ${UNITS[i]}`
}

const int = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '?')
const plural = (n, word) => `${int(n)} ${word}${n === 1 ? '' : 's'}`

function duration(ms) {
  if (!Number.isFinite(ms)) return '?'
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  return `${Math.floor(s / 60)} min ${s % 60} s`
}

function sortOrder(keys) {
  if (!keys || !keys.length) return 'unsorted'
  // Iceberg's default null order (first ascending, last descending) goes unsaid.
  return 'sorted by ' + keys.map((k) => `${k.column}${k.descending ? ' desc' : ''}${k.nullsFirst === k.descending ? (k.nullsFirst ? ' nulls first' : ' nulls last') : ''}`).join(', ')
}

/**
 * JSON for machines: the API's values as JSON has them. BigInt (`record_count`, sizes and metrics
 * of `dataFile`, long and timestamp partition values) becomes a number when it is a safe integer,
 * else a decimal string; a Buffer (Iceberg single-value bounds, binary partition values) becomes a
 * lowercase hex string.
 */
function toJSONValue(value) {
  if (typeof value === 'bigint') return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString()
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return Buffer.from(value).toString('hex')
  if (Array.isArray(value)) return value.map(toJSONValue)
  if (value && typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = toJSONValue(v)
    return out
  }
  return value
}

function stringify(value) {
  return JSON.stringify(toJSONValue(value), null, 2)
}

/** `before:` / `after:` line of a set of files (see inputs.totals). */
function filesLine(label, t) {
  const avg = t.files ? t.bytes / t.files : 0
  return `${label} ${plural(t.files, 'file')}, ${bytes(t.bytes)} (avg ${bytes(avg)}), ${plural(t.rowGroups, 'row group')}, ` +
    `${plural(t.rows, 'row')}, ${t.codecs.join('/') || 'no codec'}` + (t.unreadable ? ` (${t.unreadable} unreadable)` : '')
}

/** The summary printed after a compaction. */
function compactSummary({ before, after, result, memory, outFiles, cwd = process.cwd() }) {
  const lines = []
  lines.push(filesLine('before:', before))
  lines.push(filesLine('after: ', after))
  const parts = [`read ${int(result.rowsRead)}`]
  if (result.rowsDeleted) parts.push(`deleted ${int(result.rowsDeleted)}`)
  if (result.diverted) parts.push(`diverted ${int(result.diverted.rows)} to ${path.relative(cwd, result.diverted.path) || result.diverted.path}`)
  if (result.duplicatesDropped) parts.push(`duplicates dropped ${int(result.duplicatesDropped)}`)
  parts.push(`written ${int(result.rowsWritten)}`)
  lines.push(`rows:    ${parts.join(', ')}`)
  const rate = result.elapsedMs > 0 ? result.bytesRead / (result.elapsedMs / 1000) : NaN
  lines.push(`time:    ${duration(result.elapsedMs)} (${bytes(rate)}/s of input)`)
  lines.push(`memory:  peak RSS ${bytes(memory.peakRss)}, ${bytes(Math.max(0, memory.peakRss - memory.rssBefore))} above the ${bytes(memory.rssBefore)} before the call`)
  for (const f of outFiles) {
    lines.push(`  ${path.relative(cwd, f.path) || f.path}  ${bytes(f.bytes)}  ${plural(f.rows, 'row')}  ${plural(f.rowGroups, 'row group')}  ${(f.codecs || []).join('/')}  ${sortOrder(f.sortingColumns)}`)
  }
  return lines.join('\n')
}

/** A partition tuple in one line: `{}` without partitionBy. */
function tuple(partition) {
  const entries = Object.entries(partition || {})
  return entries.length ? entries.map(([k, v]) => `${k}=${toJSONValue(v)}`).join(' ') : '(whole partition)'
}

/** The plan as lines: one per tuple, then the verdict with its reasons. */
function planLines(plan, { onlyDue = false } = {}) {
  const lines = []
  for (const g of plan.groups) {
    if (onlyDue && g.action !== 'rewrite') continue
    const what = g.action === 'rewrite'
      ? `rewrite ${plural(g.rewrite.length, 'file')} into ${plural(g.expectedFiles, 'file')}${g.keep.length ? `, keep ${int(g.keep.length)}` : ''} (${g.reasons.join(', ')})`
      : `keep ${plural(g.keep.length, 'file')}`
    lines.push(`  ${tuple(g.partition)}: ${what}`)
  }
  const due = plan.groups.filter((g) => g.action === 'rewrite')
  const counts = {}
  for (const g of due) for (const r of g.reasons) counts[r] = (counts[r] || 0) + 1
  const why = Object.entries(counts).map(([r, n]) => (n > 1 ? `${r} ×${n}` : r)).join(', ')
  lines.push(plan.due
    ? `due for compaction: ${int(due.length)} of ${plural(plan.groups.length, 'tuple')} (${why}); rewrite ${plural(plan.rewriteFiles, 'file')} (${bytes(plan.rewriteBytes)}), keep ${plural(plan.keepFiles, 'file')} (${bytes(plan.keepBytes)})`
    : `not due for compaction: ${plural(plan.groups.length, 'tuple')}, ${plural(plan.keepFiles, 'file')} kept (${bytes(plan.keepBytes)}); rewriting would change nothing`)
  return lines
}

module.exports = {
  tuple,
  planLines, bytes, int, plural, duration, sortOrder, toJSONValue, stringify, filesLine, compactSummary }
