#!/usr/bin/env node
'use strict'
// gencompact's command line: `gencompact compact …`, `gencompact plan …` and `gencompact inspect …` (see the README,
// "Command line"). Arguments are parsed with commander, the progress bar is drawn by cli-progress,
// Parquet footers are read with hyparquet.

const fs = require('fs')
const path = require('path')
const { Command, CommanderError, Option } = require('commander')
const { EXIT, exitCodeFor, UsageError, compactOptions, planOptions } = require('./parse')
const { expandInputs, describeAll, totals } = require('./inputs')
const fmt = require('./format')

const collect = (value, previous) => previous.concat([value])

function fail(message, code) {
  process.stderr.write(`gencompact: ${message}\n`)
  process.exitCode = code
}

// ---------------------------------------------------------------------------------------------
// progress

/** Progress on stderr: a live bar on a terminal, plain lines otherwise, nothing with `quiet`. */
function makeProgress({ tty, quiet, totalRows, totalBytes }) {
  const started = Date.now()
  // Input bytes read so far, estimated from rows read: progress events count rows, the inputs'
  // footers tell their rows and bytes.
  const bytesRead = (p) => (totalRows > 0 ? Math.min(totalBytes, (p.rowsRead / totalRows) * totalBytes) : 0)
  // Work done, in input bytes: half for reading, half for writing (with --sort, rows are all read
  // before the merge writes them; without, both advance together).
  const done = (p) => (totalRows > 0 ? Math.min(totalBytes, ((p.rowsRead + p.rowsWritten) / (2 * totalRows)) * totalBytes) : 0)
  const rate = (p) => {
    const s = (Date.now() - started) / 1000
    return s > 0 ? bytesRead(p) / s : 0
  }
  // ETA: the work left at the rate of the work done so far; unknown before any row was read.
  const eta = (p) => {
    if (p.phase === 'verify' || p.phase === 'done') return '0s'
    const elapsed = (Date.now() - started) / 1000
    const d = done(p)
    if (!(d > 0) || !(elapsed > 0)) return '?'
    const s = Math.ceil((totalBytes - d) / (d / elapsed))
    return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  }
  if (quiet) return { update() {}, stop() {} }
  if (tty) {
    const cliProgress = require('cli-progress')
    const bar = new cliProgress.SingleBar({
      stream: process.stderr,
      format: '{phase} [{bar}] {percentage}% | {rows} rows | in {inBytes} of {totalIn} | out {outBytes}, {files} | {speed}/s | ETA {etaText}',
      hideCursor: true,
      clearOnComplete: false,
      barsize: 24,
      etaBuffer: 20,
      fps: 10,
    }, cliProgress.Presets.shades_classic)
    const payload = (p) => ({
      phase: p.phase.padEnd(6),
      rows: fmt.int(p.rowsRead),
      inBytes: fmt.bytes(bytesRead(p)),
      totalIn: fmt.bytes(totalBytes),
      outBytes: fmt.bytes(p.bytesWritten),
      files: fmt.plural(p.filesWritten, 'file'),
      speed: fmt.bytes(rate(p)),
      etaText: eta(p),
    })
    const zero = { phase: 'plan', rowsRead: 0, rowsWritten: 0, bytesWritten: 0, filesWritten: 0 }
    bar.start(Math.max(1, totalBytes), 0, payload(zero))
    return {
      update(p) {
        bar.update(p.phase === 'verify' || p.phase === 'done' ? Math.max(1, totalBytes) : done(p), payload(p))
      },
      stop() {
        bar.stop()
      },
    }
  }
  let lastPhase = ''
  let lastAt = 0
  return {
    update(p) {
      const now = Date.now()
      if (p.phase === lastPhase && now - lastAt < 1000) return
      lastPhase = p.phase
      lastAt = now
      const pct = totalBytes > 0 ? ` (${Math.round((bytesRead(p) / totalBytes) * 100)}%)` : ''
      process.stderr.write(`${p.phase}: ${fmt.int(p.rowsRead)} rows read${pct}, ${fmt.int(p.rowsWritten)} written, ` +
        `${fmt.bytes(p.bytesWritten)} in ${fmt.plural(p.filesWritten, 'file')}, ${fmt.bytes(rate(p))}/s\n`)
    },
    stop() {},
  }
}

// ---------------------------------------------------------------------------------------------
// compact

async function compact(inputs, o) {
  const opts = compactOptions(o) // throws UsageError
  const files = expandInputs(inputs)
  if (!files.length) throw new UsageError(`no .parquet files in ${inputs.join(' ')}`)
  const described = await describeAll(files)
  const before = totals(described)
  const { compactGeneration } = require('..')

  const controller = new AbortController()
  let signalled = null
  const onSignal = (name) => {
    if (signalled) process.exit(name === 'SIGTERM' ? EXIT.SIGTERM : EXIT.ERR_ABORTED) // a second Ctrl-C: now
    signalled = name
    progress.stop()
    process.stderr.write(`gencompact: ${name}: aborting, removing what this run wrote…\n`)
    controller.abort()
  }
  const tty = o.progress !== false && Boolean(process.stderr.isTTY)
  const progress = makeProgress({ tty, quiet: o.progress === false || (o.json && !tty), totalRows: before.rows, totalBytes: before.bytes })
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  const rssBefore = process.memoryUsage().rss
  let result
  try {
    if (o.onlyDue) {
      // Plan first: only the tuples whose rewrite changes something are read; the rest are
      // linked into --out as they are.
      opts.plan = await require('..').planCompaction(files, { ...planOptions(o), ...opts })
    }
    result = await compactGeneration(files, { ...opts, signal: controller.signal, onProgress: (p) => progress.update(p) })
  } catch (e) {
    progress.stop()
    if (signalled && e && e.code === 'ERR_ABORTED') {
      process.exitCode = signalled === 'SIGTERM' ? EXIT.SIGTERM : EXIT.ERR_ABORTED
      process.stderr.write(`gencompact: aborted (${e.code}); nothing was published\n`)
      return
    }
    throw e
  } finally {
    process.removeListener('SIGINT', onSignal)
    process.removeListener('SIGTERM', onSignal)
  }
  progress.stop()
  const memory = { peakRss: process.resourceUsage().maxRSS * 1024, rssBefore }
  const outDescribed = await describeAll([...result.files, ...result.kept].map((f) => f.path))
  const after = totals(outDescribed)
  if (o.json) {
    process.stdout.write(fmt.stringify({ ...result, cli: { inputs: files, before, after, peakRssBytes: memory.peakRss, rssBeforeBytes: memory.rssBefore } }) + '\n')
  } else {
    if (opts.plan) process.stdout.write(fmt.planLines(opts.plan, { onlyDue: true }).join('\n') + '\n')
    process.stdout.write(fmt.compactSummary({ before, after, result, memory, outFiles: outDescribed }) + '\n')
    if (result.kept.length) process.stdout.write(`kept:    ${fmt.plural(result.kept.length, 'file')} carried into ${path.relative(process.cwd(), opts.outDir) || opts.outDir} as they were\n`)
  }
}

// ---------------------------------------------------------------------------------------------
// plan

async function plan(inputs, o) {
  const opts = planOptions(o) // throws UsageError
  const files = expandInputs(inputs)
  if (!files.length) throw new UsageError(`no .parquet files in ${inputs.join(' ')}`)
  const result = await require('..').planCompaction(files, opts)
  if (o.json) process.stdout.write(fmt.stringify(result) + '\n')
  else process.stdout.write(fmt.planLines(result).join('\n') + '\n')
}

// ---------------------------------------------------------------------------------------------
// inspect

async function inspect(inputs, o) {
  const opts = planOptions(o) // throws UsageError
  const files = expandInputs(inputs)
  const described = await describeAll(files)
  const t = totals(described)
  const bad = described.find((d) => d.error)
  // Due or not, by the planner (`planCompaction`): a tuple is due only when rewriting it changes
  // something measurable.
  const verdict = files.length && !bad ? await require('..').planCompaction(files, opts) : null
  if (o.json) {
    process.stdout.write(fmt.stringify({ files: described, summary: { ...t, averageBytes: t.files ? t.bytes / t.files : 0, due: Boolean(verdict && verdict.due) }, plan: verdict }) + '\n')
  } else {
    if (!o.summary) {
      for (const d of described) {
        const name = path.relative(process.cwd(), d.path) || d.path
        if (d.error) process.stdout.write(`${name}  ${d.error}\n`)
        else process.stdout.write(`${name}  ${fmt.bytes(d.bytes)}  ${fmt.plural(d.rows, 'row')}  ${fmt.plural(d.rowGroups, 'row group')}  ${d.codecs.join('/')}  ${fmt.sortOrder(d.sortingColumns)}\n`)
      }
    }
    process.stdout.write(fmt.filesLine('partition:', t) + '\n')
    if (verdict) {
      const lines = fmt.planLines(verdict, { onlyDue: true })
      process.stdout.write(lines.join('\n') + '\n')
    }
  }
  if (bad) process.exitCode = EXIT[bad.code] ?? EXIT.UNEXPECTED
}

// ---------------------------------------------------------------------------------------------

/** The inputs and the layout flags a plan is for (`plan`, `inspect`). */
function layout(command) {
  return command
    .argument('<inputs...>', 'Parquet files or directories')
    .option('--target <size>', 'target file size (default 128MiB)')
    .option('--sort <col[:desc][:nulls-first|:nulls-last]>', 'files should be sorted by this column (repeatable)', collect, [])
    .option('--sort-order-id <n>', 'the Iceberg sort order id of sorted files')
    .option('--partition <col[:transform][=name]>', 'partition field (repeatable)', collect, [])
}

/** The planning rules' flags (see planCompaction in the README). */
function planRules(command) {
  return command
    .option('--min-file-size <size>', 'files from this size up to --max-file-size are left alone (default 0.75 x target)')
    .option('--max-file-size <size>', 'files above this are split (default 1.8 x target)')
    .option('--min-input-files <n>', 'small files in a tuple that make it due (default 5)')
}

function program() {
  const p = new Command('gencompact')
  p.description('Compact a generation of small Parquet files into few large ones, and inspect partitions.')
    .version(require('../package.json').version)
    .exitOverride()
    .showHelpAfterError()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })

  const compactCommand = p.command('compact')
    .description('compact the Parquet files given (a directory stands for its *.parquet files) into --out')
    .argument('<inputs...>', 'Parquet files or directories')
    .requiredOption('-o, --out <dir>', 'output directory (created if missing; nothing is replaced)')
    .option('--target <size>', 'target output file size, e.g. 128MiB (default 128MiB)')
    .option('--batch-bytes <size>', 'decoded bytes per batch and row group: the heap bound (default 32MiB)')
    .option('--batch-rows <n>', 'rows per batch and row group at most')
    .option('--sort <col[:desc][:nulls-first|:nulls-last]>', 'sort each file by this column (repeatable, or comma-separated)', collect, [])
    .option('--sort-order-id <n>', 'Iceberg sort order id reported for sorted files (needs --sort)')
    .option('--partition <col[:transform][=name]>', 'partition field, transform identity|year|month|day|hour|bucket[N]|truncate[W] (repeatable)', collect, [])
    .option('--dedupe <col>', 'drop rows whose value of this column was seen earlier (first occurrence wins)')
    .addOption(new Option('--compression <codec>', 'output codec (default: the codec holding most of the inputs\' bytes)').choices(['zstd', 'snappy', 'gzip', 'lz4', 'none']))
    .option('--compression-level <n>', 'codec level (zstd 1-22, default 3; gzip 0-9); needs --compression')
    .option('--prefix <name>', 'output file name prefix')
    .option('--out-location <uri>', 'location prefix for dataFile.file_path (e.g. file:///…/data/)')
    .option('--divert <column[.path]=value>', 'write rows whose value (at the path inside a VARIANT/JSON column) equals value to --divert-to')
    .option('--divert-to <file>', 'side Parquet file for --divert')
    .option('--tmp-dir <dir>', 'where sorted runs spill (default: --out)')
    .option('--threads <n>', 'threads this call may use (default: the available cores)')
    .option('--no-verify', 'skip re-reading the outputs before publishing them')
    .option('--no-progress', 'no progress bar or progress lines')
    .option('--json', 'print the result as JSON on stdout (the API result, plus a "cli" summary)')
    .option('--only-due', 'plan first: rewrite only the tuples that are due, carry the rest into --out as they are')
  planRules(compactCommand)
  compactCommand.action((inputs, o) => compact(inputs, o))

  const planCommand = layout(p.command('plan').description('which partition tuples are due for compaction (rewrite or keep, and why)'))
    .option('--json', 'print the plan as JSON')
  planRules(planCommand)
  planCommand.action((inputs, o) => plan(inputs, o))

  const inspectCommand = layout(p.command('inspect')
    .description('per file rows, row groups, size, codecs and sort order, and whether the partition is due for compaction (by the planner)'))
    .option('--summary', 'only the partition summary')
    .option('--json', 'print JSON')
  planRules(inspectCommand)
  inspectCommand.action((inputs, o) => inspect(inputs, o))
  return p
}

async function main(argv) {
  try {
    await program().parseAsync(argv)
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help' ? EXIT.OK : EXIT.USAGE
    } else if (e instanceof UsageError) {
      fail(e.message, EXIT.USAGE)
    } else {
      fail(e && e.code ? `${e.code}: ${e.message}` : (e && e.stack) || String(e), exitCodeFor(e))
    }
  }
}

if (require.main === module) main(process.argv)

module.exports = { main, program }
