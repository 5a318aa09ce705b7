'use strict'
// The suite's test environment: jest's node environment, with NAPI_RS_NATIVE_LIBRARY_PATH set to
// the test build (compiled with the `test-hooks` feature, `npm run build:test`, in
// target/test-addon) in the real environment of the process running the tests, so index.js loads
// it and every child process a test spawns (the CLI, helpers/child.js) inherits it. The release
// binary at the package root stays what a user `require()`s.
//
// Why here and not in the global setup: the variable is napi-rs's, not ours, and jest's own module
// resolver (unrs-resolver, a napi-rs addon) honours it too. Set in the parent before jest starts its
// workers, every worker inherited it and loaded our addon as its resolver binding, then failed to
// resolve anything (`Cannot find module '@jest/expect'`); only the in-band run worked, because the
// parent had loaded its resolver before the global setup ran. So each process running tests loads
// jest's resolver binding first, then sets the variable.

const fs = require('fs')
const path = require('path')
const NodeEnvironment = require('jest-environment-node').TestEnvironment

const TEST_BUILD = path.join(__dirname, '..', '..', 'target', 'test-addon', 'gencompact.linux-x64-gnu.node')

function loadJestResolverFirst() {
  let resolver
  try {
    resolver = require.resolve('unrs-resolver', { paths: [path.dirname(require.resolve('jest-resolve/package.json'))] })
  } catch {
    return // a jest whose resolver is not unrs-resolver: nothing of it reads the variable
  }
  require(resolver)
}

class AddonEnvironment extends NodeEnvironment {
  constructor(config, context) {
    if (!fs.existsSync(TEST_BUILD)) throw new Error(`no test build at ${TEST_BUILD}: run \`npm run build:test\` first`)
    loadJestResolverFirst()
    process.env.NAPI_RS_NATIVE_LIBRARY_PATH = TEST_BUILD
    super(config, context) // copies the environment (with the variable) into the test's sandbox
  }
}

module.exports = AddonEnvironment
