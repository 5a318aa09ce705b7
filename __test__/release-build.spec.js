'use strict'
// The published binary has no test switches. The binary scripts/build-cross.js builds for the
// linux-x64-gnu package (`npm run check:release`, before jest) is compiled without the `test-hooks`
// feature: GENCOMPACT_TEST_FAULT, GENCOMPACT_TEST_DISABLE_GUARDS and GENCOMPACT_TEST_PAUSE_AT set in
// its environment change nothing. Each case runs the same call against the test build the suite
// loads (built with the feature) as a control, so the test fails if the switch were ignored there
// too (then the case would prove nothing) or honoured by the release binary.

const fs = require('fs')
const path = require('path')
const { spawn, spawnSync } = require('child_process')
const hyp = require('./helpers/hyp')
const { CHILD } = require('./helpers/spawn')
const { makeTmpDir, removeDir, ourFiles } = require('./helpers/fsutil')

const ROOT = path.join(__dirname, '..')
const RELEASE = path.join(ROOT, 'npm', 'linux-x64-gnu', 'gencompact.linux-x64-gnu.node')
const TEST_BUILD = path.join(ROOT, 'target', 'test-addon', 'gencompact.linux-x64-gnu.node')
// what a user `require()`s after `npm test` (`npm run build`): no test switches either
const PACKAGE_ROOT = path.join(ROOT, 'gencompact.linux-x64-gnu.node')

let tmp
let gen
let n = 0

beforeAll(async () => {
  tmp = makeTmpDir('release-build')
  gen = await hyp.generate({ dir: path.join(tmp, 'in'), rows: 900, files: 9, tuples: 3, seed: 17 })
})

afterAll(() => removeDir(tmp))

/** One call in a child process loading `binary`, with `env`: { outcome, stderr }. */
function call(binary, opts, env) {
  const r = spawnSync(process.execPath, [CHILD, JSON.stringify({ files: gen.files, opts })], {
    env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: binary, ...env },
    encoding: 'utf8',
  })
  const last = r.stdout.trim().split('\n').pop()
  if (!last) throw new Error(`child printed nothing: status ${r.status}, signal ${r.signal}, stderr ${r.stderr}`)
  return { outcome: JSON.parse(last), stderr: r.stderr }
}

test('both binaries exist', () => {
  expect(fs.existsSync(RELEASE)).toBe(true)
  expect(fs.existsSync(TEST_BUILD)).toBe(true)
})

test('GENCOMPACT_TEST_FAULT=drop-row with verify off: the release binary publishes every row', () => {
  const env = { GENCOMPACT_TEST_FAULT: 'drop-row' }
  const control = call(TEST_BUILD, { outDir: path.join(tmp, `control-${++n}`), verify: false }, env)
  expect(control.outcome).toEqual({ phase: 'resolved', files: 1, rowsRead: 900, rowsWritten: 899 })
  const release = call(RELEASE, { outDir: path.join(tmp, `release-${++n}`), verify: false }, env)
  expect(release.outcome).toEqual({ phase: 'resolved', files: 1, rowsRead: 900, rowsWritten: 900 })
  // and the binary at the package root (what `require('gencompact')` loads in this clone) is a
  // release build too, the test build living in target/test-addon
  expect(fs.existsSync(PACKAGE_ROOT)).toBe(true)
  const root = call(PACKAGE_ROOT, { outDir: path.join(tmp, `root-${++n}`), verify: false }, env)
  expect(root.outcome).toEqual({ phase: 'resolved', files: 1, rowsRead: 900, rowsWritten: 900 })
})

test('GENCOMPACT_TEST_DISABLE_GUARDS=cleanup with a fault: the release binary neither injects the fault nor loses its cleanup', () => {
  // Control: the test build with the fault fails verification and, cleanup switched off, leaves its
  // files. The release binary ignores both switches: no fault, so nothing fails; all rows published.
  const env = { GENCOMPACT_TEST_DISABLE_GUARDS: 'cleanup', GENCOMPACT_TEST_FAULT: 'drop-row' }
  const controlDir = path.join(tmp, `control-${++n}`)
  const control = call(TEST_BUILD, { outDir: controlDir }, env)
  expect(control.outcome).toEqual(expect.objectContaining({ phase: 'rejected', code: 'ERR_VERIFY_FAILED' }))
  expect(ourFiles(controlDir).length).toBeGreaterThan(0) // the switch left them
  const releaseDir = path.join(tmp, `release-${++n}`)
  const release = call(RELEASE, { outDir: releaseDir }, env)
  expect(release.outcome).toEqual({ phase: 'resolved', files: 1, rowsRead: 900, rowsWritten: 900 })
})

test('GENCOMPACT_TEST_PAUSE_AT=read: the release binary does not pause', async () => {
  const env = { GENCOMPACT_TEST_PAUSE_AT: 'read' }
  // The control sleeps 60 s at the pause: it is shown by its message, then killed.
  const child = spawn(process.execPath, [CHILD, JSON.stringify({ files: gen.files, opts: { outDir: path.join(tmp, `control-${++n}`) } })], {
    env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: TEST_BUILD, ...env },
  })
  let stderr = ''
  child.stdout.resume()
  const paused = await new Promise((resolve) => {
    child.stderr.on('data', (d) => {
      stderr += d
      if (/gencompact-test: paused at read/.test(stderr)) {
        child.kill('SIGKILL')
        resolve(true)
      }
    })
    child.on('exit', () => resolve(/gencompact-test: paused at read/.test(stderr)))
  })
  expect(paused).toBe(true)
  const release = call(RELEASE, { outDir: path.join(tmp, `release-${++n}`) }, env)
  expect(release.outcome).toEqual({ phase: 'resolved', files: 1, rowsRead: 900, rowsWritten: 900 })
  expect(release.stderr).not.toMatch(/gencompact-test/)
})

test('the release binary does not even contain the switches\' names; the test build does', () => {
  const names = ['GENCOMPACT_TEST_FAULT', 'GENCOMPACT_TEST_DISABLE_GUARDS', 'GENCOMPACT_TEST_PAUSE_AT']
  const release = fs.readFileSync(RELEASE)
  const testBuild = fs.readFileSync(TEST_BUILD)
  for (const name of names) {
    expect([name, testBuild.includes(name)]).toEqual([name, true])
    expect([name, release.includes(name)]).toEqual([name, false])
  }
})
