#!/usr/bin/env node
// Install proof: the published shape installs and works on a machine without build tools.
//  1. `npm pack` the main package and the linux-x64-gnu platform package (npm/linux-x64-gnu, with
//     the binary scripts/build-cross.js put there);
//  2. install both tarballs into a fresh temporary project, with only node and npm on PATH (no
//     cargo, rustc, cc, make, python): nothing may need building; third-party dependencies come
//     from npm's cache (or the registry), ours from the tarballs only;
//  3. there, `require('gencompact')` must load the platform package's binary (read back from
//     /proc/self/maps), not a file in the main package (which must hold no .node), and compact a
//     generated partition; the installed `gencompact` CLI must compact it too.
//   node scripts/install-proof.js [--keep]
'use strict'
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')

const ROOT = path.join(__dirname, '..')
const PLATFORM_DIR = path.join(ROOT, 'npm', 'linux-x64-gnu')
const BINARY = 'gencompact.linux-x64-gnu.node'
const keep = process.argv.includes('--keep')
let failures = 0
let checks = 0

function check(ok, what) {
  checks++
  if (ok) console.log(`  ok: ${what}`)
  else {
    failures++
    console.error(`  FAILED: ${what}`)
  }
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 << 20, ...opts })
  if (r.status !== 0) {
    console.error(`install-proof: ${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}${r.error ? ', ' + r.error.message : ''})\n${r.stdout ?? ''}${r.stderr ?? ''}`)
    process.exit(1)
  }
  return r
}

if (!fs.existsSync(path.join(PLATFORM_DIR, BINARY))) {
  console.error(`install-proof: ${path.join(PLATFORM_DIR, BINARY)} missing (node scripts/build-cross.js builds it)`)
  process.exit(1)
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gencompact-install-'))
const pkgs = path.join(tmp, 'tarballs')
const app = path.join(tmp, 'app')
const bin = path.join(tmp, 'bin') // PATH for the install and the run: node and npm, nothing else
fs.mkdirSync(pkgs)
fs.mkdirSync(app)
fs.mkdirSync(bin)
try {
  // 1. pack
  const packed = (dir) => JSON.parse(run('npm', ['pack', '--json', '--pack-destination', pkgs], { cwd: dir }).stdout)[0]
  const main = packed(ROOT)
  const platform = packed(PLATFORM_DIR)
  console.log(`install-proof: packed ${main.filename} (${main.entryCount} files) and ${platform.filename} (${(platform.size / 1048576).toFixed(1)} MiB)`)
  check(!main.files.some((f) => f.path.endsWith('.node')), 'the main package holds no .node file')
  check(main.files.some((f) => f.path === 'cli/gencompact.js'), 'the main package holds the CLI')
  check(platform.files.some((f) => f.path === BINARY), `the platform package holds ${BINARY}`)

  // 2. install with only node and npm on PATH
  fs.symlinkSync(process.execPath, path.join(bin, 'node'))
  // npm's own entry point, found through the npm on the current PATH (a symlink to bin/npm-cli.js)
  const which = spawnSync('/bin/sh', ['-c', 'command -v npm'], { encoding: 'utf8' })
  const npmCli = which.status === 0 ? fs.realpathSync(which.stdout.trim()) : null
  if (!npmCli || !npmCli.endsWith('.js')) {
    console.error(`install-proof: cannot find npm-cli.js (npm on PATH: ${which.stdout.trim() || 'none'})`)
    process.exit(1)
  }
  fs.writeFileSync(path.join(bin, 'npm'), `#!/bin/sh\nexec "${path.join(bin, 'node')}" "${npmCli}" "$@"\n`, { mode: 0o755 })
  const env = { HOME: process.env.HOME, PATH: bin, npm_config_cache: process.env.npm_config_cache || path.join(os.homedir(), '.npm') }
  for (const tool of ['cargo', 'rustc', 'cc', 'gcc', 'make', 'python3', 'node-gyp']) {
    const r = spawnSync('/bin/sh', ['-c', `command -v ${tool}`], { env, encoding: 'utf8' })
    check(r.status !== 0, `${tool} is not on the install step's PATH`)
  }
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'install-proof', version: '1.0.0', private: true }, null, 2))
  run(path.join(bin, 'npm'), ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts=false',
    path.join(pkgs, main.filename), path.join(pkgs, platform.filename)], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const installedMain = path.join(app, 'node_modules', 'gencompact')
  check(!fs.readdirSync(installedMain).some((f) => f.endsWith('.node')), 'no .node file in node_modules/gencompact')

  // 3. require, compact, CLI
  const inDir = path.join(tmp, 'partition')
  const gen = JSON.parse(run(process.execPath, [path.join(ROOT, 'fixtures', 'gen-partition.js'), '--dir', inDir, '--rows', '600', '--files', '12',
    '--tuples', '3', '--seed', '7', '--codec', 'SNAPPY', '--fat-bytes', '2000', '--row-bytes', '1000']).stdout.trim().split('\n').pop())
  const probe = `
    const fs = require('fs')
    const { compactGeneration } = require('gencompact')
    const maps = fs.readFileSync('/proc/self/maps', 'utf8').split('\\n').map((l) => l.split(/\\s+/)[5]).filter((p) => p && p.endsWith('.node'))
    const files = fs.readdirSync(${JSON.stringify(inDir)}).filter((f) => f.endsWith('.parquet')).map((f) => ${JSON.stringify(inDir)} + '/' + f)
    compactGeneration(files, { outDir: ${JSON.stringify(path.join(tmp, 'out-api'))}, partitionBy: [{ column: 'session_id' }], sortBy: [{ column: 'ts' }] })
      .then((r) => console.log(JSON.stringify({ loaded: [...new Set(maps)], rowsRead: r.rowsRead, rowsWritten: r.rowsWritten, files: r.files.length })))
      .catch((e) => { console.error(e); process.exit(1) })`
  const out = JSON.parse(run(path.join(bin, 'node'), ['-e', probe], { cwd: app, env }).stdout.trim().split('\n').pop())
  const expected = fs.realpathSync(path.join(app, 'node_modules', 'gencompact-linux-x64-gnu', BINARY))
  check(out.loaded.length === 1 && out.loaded[0] === expected, `require('gencompact') loaded ${out.loaded.join(', ')} (expected ${expected})`)
  check(out.rowsRead === gen.rows && out.rowsWritten === gen.rows && out.files === 3, `compacted ${out.rowsWritten} of ${gen.rows} rows into ${out.files} files (3 tuples)`)
  const cli = run(path.join(app, 'node_modules', '.bin', 'gencompact'), ['compact', inDir, '--out', path.join(tmp, 'out-cli'), '--json'], { cwd: app, env })
  const res = JSON.parse(cli.stdout)
  check(res.rowsWritten === gen.rows, `the installed CLI (npx gencompact) compacted ${res.rowsWritten} of ${gen.rows} rows`)
} finally {
  if (!keep) fs.rmSync(tmp, { recursive: true, force: true })
  else console.log(`install-proof: kept ${tmp}`)
}
console.log(`install-proof: ${checks - failures} passed, ${failures} failed`)
process.exit(failures ? 1 : 0)
