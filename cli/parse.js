'use strict'
// Parsing of the CLI's values (sizes, sort keys, partition fields, divert) into compactGeneration's
// options, and the exit codes. No I/O here, so it is unit-testable.

/** Exit status per outcome; documented in the README ("Exit codes"). */
const EXIT = {
  OK: 0,
  UNEXPECTED: 1, // a bug in the CLI itself, or an error without a known code
  USAGE: 2, // unknown flag, bad value, missing argument
  ERR_INVALID_OPTIONS: 3,
  ERR_INPUT_NOT_FOUND: 4,
  ERR_INPUT_CORRUPT: 5,
  ERR_SCHEMA_CONFLICT: 6,
  ERR_IO: 7,
  ERR_VERIFY_FAILED: 8,
  ERR_INTERNAL: 9,
  ERR_ABORTED: 130, // Ctrl-C (SIGINT): 128 + 2, the shell's convention
  SIGTERM: 143, // aborted by SIGTERM: 128 + 15
}

/** The exit status for an error thrown by compactGeneration (or by the CLI's own input listing). */
function exitCodeFor(err) {
  if (err && typeof err.code === 'string' && Object.prototype.hasOwnProperty.call(EXIT, err.code) && err.code.startsWith('ERR_')) {
    return EXIT[err.code]
  }
  return EXIT.UNEXPECTED
}

class UsageError extends Error {}

const UNITS = {
  '': 1, b: 1,
  k: 1024, kib: 1024, kb: 1000,
  m: 1024 ** 2, mib: 1024 ** 2, mb: 1000 ** 2,
  g: 1024 ** 3, gib: 1024 ** 3, gb: 1000 ** 3,
  t: 1024 ** 4, tib: 1024 ** 4, tb: 1000 ** 4,
}

/**
 * A byte size: a number with an optional unit, `K`/`M`/`G`/`T` and `KiB`/`MiB`/`GiB`/`TiB`
 * (powers of 1024) or `KB`/`MB`/`GB`/`TB` (powers of 1000), case-insensitive: `128MiB`, `32m`,
 * `1.5G`, `4096`.
 */
function parseSize(text) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(String(text))
  const unit = m && UNITS[m[2].toLowerCase()]
  if (!m || unit === undefined) throw new UsageError(`not a size: '${text}' (e.g. 128MiB, 32M, 1.5GiB, 4096)`)
  const n = Math.round(Number(m[1]) * unit)
  if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(`size out of range: '${text}'`)
  return n
}

/** A positive integer (also accepts `_` and `,` separators: `100_000`). */
function parseCount(text) {
  const s = String(text).replace(/[_,]/g, '')
  if (!/^\d+$/.test(s) || !Number.isSafeInteger(Number(s))) throw new UsageError(`not a whole number: '${text}'`)
  return Number(s)
}

/** `col[:asc|:desc][:nulls-first|:nulls-last]` -> a `sortBy` key. */
function parseSortKey(text) {
  const [column, ...mods] = String(text).split(':')
  if (!column) throw new UsageError(`--sort '${text}': no column`)
  const key = { column }
  for (const mod of mods) {
    switch (mod.toLowerCase()) {
      case 'asc': key.descending = false; break
      case 'desc': key.descending = true; break
      case 'nulls-first': key.nullsFirst = true; break
      case 'nulls-last': key.nullsFirst = false; break
      default: throw new UsageError(`--sort '${text}': unknown modifier '${mod}' (asc, desc, nulls-first, nulls-last)`)
    }
  }
  return key
}

/**
 * `col[:transform][=name]` -> a `partitionBy` field, the transform as Iceberg spells it
 * (`identity`, `year`, `month`, `day`, `hour`, `bucket[16]`, `truncate[4]`); the library checks it.
 */
function parsePartitionField(text) {
  const m = /^([^:=]+)(?::([^=]+))?(?:=(.+))?$/.exec(String(text))
  if (!m) throw new UsageError(`--partition '${text}': expected col[:transform][=name]`)
  const field = { column: m[1] }
  if (m[2]) field.transform = m[2]
  if (m[3]) field.name = m[3]
  return field
}

/** `column[.path.to.value]=value`: a string unless it reads as a number, `true` or `false`. */
function parseDivert(text, to) {
  const i = String(text).indexOf('=')
  if (i <= 0) throw new UsageError(`--divert '${text}': expected column[.path]=value`)
  const [column, ...path] = text.slice(0, i).split('.')
  const raw = text.slice(i + 1)
  let equals = raw
  if (raw === 'true' || raw === 'false') equals = raw === 'true'
  else if (/^-?\d+(\.\d+)?$/.test(raw)) equals = Number(raw)
  if (!to) throw new UsageError('--divert needs --divert-to FILE')
  const divert = { column, equals, to }
  if (path.length) divert.path = path
  return divert
}

/** Splits repeatable list flags: `--sort a --sort b:desc` and `--sort a,b:desc` are the same. */
function splitList(values) {
  return values.flatMap((v) => String(v).split(',')).map((v) => v.trim()).filter(Boolean)
}

/** commander's parsed options of `compact` -> compactGeneration's options (without signal/onProgress). */
function compactOptions(o) {
  const opts = { outDir: o.out }
  if (o.target !== undefined) opts.targetFileBytes = parseSize(o.target)
  if (o.batchBytes !== undefined) opts.batchBytes = parseSize(o.batchBytes)
  if (o.batchRows !== undefined) opts.batchRows = parseCount(o.batchRows)
  if (o.sort.length) opts.sortBy = splitList(o.sort).map(parseSortKey)
  if (o.sortOrderId !== undefined) opts.sortOrderId = parseCount(o.sortOrderId)
  if (o.partition.length) opts.partitionBy = splitList(o.partition).map(parsePartitionField)
  if (o.dedupe !== undefined) opts.dedupeBy = o.dedupe
  if (o.compression !== undefined) opts.compression = o.compression
  if (o.compressionLevel !== undefined) opts.compressionLevel = parseCount(o.compressionLevel)
  if (o.prefix !== undefined) opts.fileNamePrefix = o.prefix
  if (o.tmpDir !== undefined) opts.tmpDir = o.tmpDir
  if (o.outLocation !== undefined) opts.outLocation = o.outLocation
  if (o.threads !== undefined) opts.threads = parseCount(o.threads)
  if (o.divert !== undefined) opts.divert = parseDivert(o.divert, o.divertTo)
  else if (o.divertTo !== undefined) throw new UsageError('--divert-to needs --divert column[.path]=value')
  if (o.verify === false) opts.verify = false
  return opts
}

/** commander's parsed layout and rule options (`plan`, `inspect`, `compact --only-due`) -> planCompaction's options. */
function planOptions(o) {
  const opts = {}
  if (o.target !== undefined) opts.targetFileBytes = parseSize(o.target)
  if (o.sort && o.sort.length) opts.sortBy = splitList(o.sort).map(parseSortKey)
  if (o.sortOrderId !== undefined) opts.sortOrderId = parseCount(o.sortOrderId)
  if (o.partition && o.partition.length) opts.partitionBy = splitList(o.partition).map(parsePartitionField)
  if (o.dedupe !== undefined) opts.dedupeBy = o.dedupe
  if (o.minFileSize !== undefined) opts.minFileBytes = parseSize(o.minFileSize)
  if (o.maxFileSize !== undefined) opts.maxFileBytes = parseSize(o.maxFileSize)
  if (o.minInputFiles !== undefined) opts.minInputFiles = parseCount(o.minInputFiles)
  return opts
}

module.exports = { EXIT, exitCodeFor, UsageError, parseSize, parseCount, parseSortKey, parsePartitionField, parseDivert, splitList, compactOptions, planOptions }
