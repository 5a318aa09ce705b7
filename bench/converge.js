#!/usr/bin/env node
'use strict'
// Convergence: how much each planning rule rewrites over a month of ingest, and how many files
// it leaves per tuple.
//
//   node bench/converge.js [--days 30] [--sessions 200] [--seed 1] [--target-mib 128,2]
//                          [--section converge] [--no-write]
// (the host's 128 MiB target, where every tuple stays small; and 2 MiB, where sessions fill
// several targets, as tables with larger tuples do)
//
// A model of the host's table, in facts only (no Parquet file is written): a day partition per
// day; its identity spec fans a day out into one tuple per session. Every hour an ingest wave
// writes one small file per active session (sessions arrive through the day and stay active a
// few hours); now and then a delete lands on a file of a past day. After every wave, each day
// partition is maintained by one of three rules:
//   host     its rule: due when it has more than 32 files or an average file under 32 MiB, and its
//            file count moved since its last rewrite (the baseline gate); a due day is rewritten
//            whole, one file per tuple (ceil(bytes / target)).
//   iceberg  Iceberg's rewrite planner as documented (bin-pack): per tuple, files outside
//            0.75-1.8 x target are candidates; the candidates are rewritten when there are at
//            least 5 of them, when they hold more than the target, or when one has deletes.
//   plan     planCompaction (the addon, called with the manifest facts: size, partition,
//            deletes), applied as compactGeneration applies a plan: only the due tuples'
//            unsealed files are rewritten, into ceil(bytes / target) balanced files.
// A rewrite writes what it reads (a delete's rows dropped). Reported per rule: write
// amplification (bytes rewritten per byte ingested), files per tuple at each hour's end (p50,
// p99, max over every tuple of every day), rewrites of a partition that received nothing new
// since it was last maintained (no file, no delete), and maintenance per day: planning time
// (measured) and rewrite time at the rate gencompact rewrote a generated partition in this run.

const fs = require('fs')
const os = require('os')
const path = require('path')
const { planCompaction, compactGeneration } = require('..')
const { writeSection } = require('./files')

const args = (() => {
  const a = { days: 30, sessions: 200, seed: 1, targetMib: [128, 2], section: 'converge', write: true }
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]
    if (k === '--no-write') a.write = false
    else if (k === '--days') a.days = Number(argv[++i])
    else if (k === '--sessions') a.sessions = Number(argv[++i])
    else if (k === '--seed') a.seed = Number(argv[++i])
    else if (k === '--target-mib') a.targetMib = argv[++i].split(',').map(Number)
    else if (k === '--section') a.section = argv[++i]
    else throw new Error(`unknown flag ${k}`)
  }
  return a
})()

let TARGET = 0
let MIN = 0
let MAX = 0
function setTarget(mib) {
  TARGET = mib * 2 ** 20
  MIN = Math.floor(TARGET * 0.75)
  MAX = Math.floor(TARGET * 1.8)
}
const MIN_INPUT_FILES = 5
const DELETE_CHANCE = 0.02 // per wave: a delete lands on a random file of a past day
const DELETED_SHARE = 0.05 // of that file's bytes

// mulberry32: the same waves for every rule.
function rng(seed) {
  let t = seed >>> 0
  return () => {
    t += 0x6d2b79f5
    let r = Math.imul(t ^ (t >>> 15), 1 | t)
    r ^= r + Math.imul(r ^ (r >>> 7), 61 | r)
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296
  }
}

/** The ingest of one day: per hour, the files of the sessions active then. */
function dayWaves(day, random) {
  const waves = Array.from({ length: 24 }, () => [])
  for (let s = 0; s < args.sessions; s++) {
    const start = Math.floor(random() * 24)
    const hours = 1 + Math.floor(random() * random() * 8) // mostly short, some long
    const perFile = Math.round(20e3 + random() * random() * 2e6) // a few KB to 2 MB per hour
    for (let h = start; h < Math.min(24, start + hours); h++) waves[h].push({ tuple: `d${day}-s${s}`, bytes: Math.round(perFile * (0.5 + random())) })
  }
  return waves
}

let nextId = 0
const file = (tuple, bytes) => ({ id: nextId++, tuple, bytes, deletes: false })

/** ceil(bytes / target) balanced files, as the writer cuts them. */
function written(tuple, bytes) {
  const n = Math.max(1, Math.ceil(bytes / TARGET))
  return Array.from({ length: n }, (_, k) => file(tuple, Math.floor(bytes / n) + (k < bytes % n ? 1 : 0)))
}

const readBytes = (f) => (f.deletes ? Math.round(f.bytes * (1 - DELETED_SHARE)) : f.bytes)

function byTuple(files) {
  const m = new Map()
  for (const f of files) {
    if (!m.has(f.tuple)) m.set(f.tuple, [])
    m.get(f.tuple).push(f)
  }
  return m
}

/** Rewrites `chosen` of `files` per tuple; returns the new list and the bytes read. */
function rewrite(files, chosen) {
  const ids = new Set(chosen.map((f) => f.id))
  const out = files.filter((f) => !ids.has(f.id))
  let bytes = 0
  for (const [tuple, group] of byTuple(chosen)) {
    const b = group.reduce((s, f) => s + readBytes(f), 0)
    bytes += group.reduce((s, f) => s + f.bytes, 0)
    out.push(...written(tuple, b))
  }
  return { files: out, bytes }
}

const rules = {
  host(partition) {
    const n = partition.files.length
    const avg = n ? partition.files.reduce((s, f) => s + f.bytes, 0) / n : Infinity
    const due = (n > 32 || avg < 32 * 2 ** 20) && n !== partition.baseline
    if (!due) return null
    return partition.files
  },
  iceberg(partition) {
    const chosen = []
    for (const group of byTuple(partition.files).values()) {
      const candidates = group.filter((f) => f.bytes < MIN || f.bytes > MAX || f.deletes)
      const bytes = candidates.reduce((s, f) => s + f.bytes, 0)
      if (candidates.length >= MIN_INPUT_FILES || bytes > TARGET || candidates.some((f) => f.deletes || f.bytes > MAX)) chosen.push(...candidates)
    }
    return chosen.length ? chosen : null
  },
  async plan(partition, clock) {
    const facts = partition.files.map((f) => ({ path: `/model/${f.id}.parquet`, fileSizeInBytes: f.bytes, partition: { tuple: f.tuple }, deletes: f.deletes ? [{ kind: 'position', path: '/model/deletes.parquet' }] : undefined }))
    const t = process.hrtime.bigint()
    const plan = await planCompaction(facts, { targetFileBytes: TARGET, partitionBy: [{ column: 'tuple' }], minInputFiles: MIN_INPUT_FILES })
    clock.ms += Number(process.hrtime.bigint() - t) / 1e6
    if (!plan.due) return null
    return plan.groups.filter((g) => g.action === 'rewrite').flatMap((g) => g.rewrite.map((i) => partition.files[i]))
  },
}

function quantile(sorted, q) {
  if (!sorted.length) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}

async function simulate(name) {
  const random = rng(args.seed)
  const deleteRandom = rng(args.seed + 1)
  const partitions = []
  let ingested = 0
  let rewritten = 0
  let idleRewrites = 0
  let rewrites = 0
  const perTuple = []
  const clock = { ms: 0 }
  for (let day = 0; day < args.days; day++) {
    const waves = dayWaves(day, random)
    const today = { day, files: [], baseline: -1, changed: false }
    partitions.push(today)
    for (const wave of waves) {
      for (const w of wave) {
        today.files.push(file(w.tuple, w.bytes))
        ingested += w.bytes
      }
      today.changed = today.changed || wave.length > 0
      if (deleteRandom() < DELETE_CHANCE && partitions.length > 1) {
        const p = partitions[Math.floor(deleteRandom() * (partitions.length - 1))]
        const f = p.files[Math.floor(deleteRandom() * p.files.length)]
        if (f) {
          f.deletes = true
          p.changed = true
        }
      }
      for (const p of partitions) {
        const chosen = await rules[name](p, clock)
        if (chosen && chosen.length) {
          const r = rewrite(p.files, chosen)
          p.files = r.files
          rewritten += r.bytes
          rewrites++
          if (!p.changed) idleRewrites++
          p.baseline = p.files.length
        }
        p.changed = false
      }
      for (const p of partitions) for (const group of byTuple(p.files).values()) perTuple.push(group.length)
    }
  }
  perTuple.sort((a, b) => a - b)
  return {
    name,
    amplification: rewritten / ingested,
    rewrittenBytes: rewritten,
    ingested,
    p50: quantile(perTuple, 0.5),
    p99: quantile(perTuple, 0.99),
    max: perTuple[perTuple.length - 1],
    rewrites,
    idleRewrites,
    planningMsPerDay: clock.ms / args.days,
  }
}

/** Bytes per second gencompact rewrites a generated seed-shaped partition at, on this machine. */
async function rewriteRate() {
  const { generatePartition } = require('../fixtures/gen-partition.js')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'converge-'))
  try {
    const gen = await generatePartition({ dir: path.join(dir, 'in'), rows: 6000, files: 60, tuples: 6, seed: 5 })
    const bytes = gen.files.reduce((s, f) => s + fs.statSync(f).size, 0)
    const t = Date.now()
    await compactGeneration(gen.files, { outDir: path.join(dir, 'out'), partitionBy: ['session_id', 'conversation_id', 'cwd', 'date'].map((column) => ({ column })) })
    return bytes / ((Date.now() - t) / 1000)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

async function main() {
  const rate = await rewriteRate()
  const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`
  const tables = []
  let daily = 0
  for (const target of args.targetMib) {
    setTarget(target)
    const results = []
    for (const name of ['host', 'iceberg', 'plan']) {
      const r = await simulate(name)
      results.push(r)
      daily = r.ingested / args.days
      console.error(`target ${target} MiB, ${name}: amplification ${r.amplification.toFixed(2)}, files per tuple p99 ${r.p99}, idle rewrites ${r.idleRewrites}`)
    }
    const host = results[0]
    const label = { host: 'host rule (baseline gate, whole-day rewrites)', iceberg: "Iceberg's planner rules", plan: '`planCompaction`' }
    tables.push(
      `### Target ${target} MiB`,
      '',
      '| rule | write amplification | vs host rule | files per tuple p50 / p99 / max | rewrites | idle rewrites | rewritten per day | planning per day | rewrite time per day |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...results.map((r) =>
        `| ${label[r.name]} | ${r.amplification.toFixed(2)} | ${(r.amplification / host.amplification).toFixed(2)}× | ${r.p50} / ${r.p99} / ${r.max} | ${r.rewrites.toLocaleString('en-US')} | ${r.idleRewrites.toLocaleString('en-US')} | ${mib(r.rewrittenBytes / args.days)} | ${r.planningMsPerDay.toFixed(0)} ms | ${(r.rewrittenBytes / args.days / rate).toFixed(1)} s |`),
      '',
    )
  }
  const body = [
    `## Convergence — ${args.days} days of hourly ingest waves, ${args.sessions} sessions a day`,
    '',
    `\`node bench/converge.js --days ${args.days} --sessions ${args.sessions} --seed ${args.seed} --target-mib ${args.targetMib.join(',')}\` — ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, ${os.cpus()[0].model.trim()}.`,
    '',
    `A model of the host's table (facts only, no file written): a day partition per day, one tuple per session; every hour one small file per active session (${mib(daily)} a day); a delete on a random past file in ${DELETE_CHANCE * 100} % of the waves. After every wave each rule maintains every day. minInputFiles ${MIN_INPUT_FILES}. Write amplification: bytes rewritten per byte ingested. Files per tuple: at each hour's end, over every tuple of every day. Idle rewrites: rewrites of a day that received nothing new (no file, no delete) since it was last maintained. Rewrite time at ${mib(rate)}/s, gencompact's rate on a generated seed-shaped partition in this run.`,
    '',
    ...tables,
  ].join('\n')
  console.log(body)
  if (args.write) {
    writeSection(path.join(__dirname, 'RESULTS.md'), args.section, body, '# Benchmark results')
    require('./summary').writeSummary()
    console.error('wrote section "converge" of bench/RESULTS.md')
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
