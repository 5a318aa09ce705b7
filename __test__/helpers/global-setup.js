'use strict'
// The suite loads the test build (compiled with the `test-hooks` feature, `npm run build:test`,
// in target/test-addon), not the release binary at the package root, which stays what a user
// `require()`s. Set before jest starts its workers, so they and every child process they spawn
// (the CLI, helpers/child.js) inherit it; index.js honours the variable.

const fs = require('fs')
const path = require('path')

module.exports = () => {
  const binary = path.join(__dirname, '..', '..', 'target', 'test-addon', 'gencompact.linux-x64-gnu.node')
  if (!fs.existsSync(binary)) throw new Error(`no test build at ${binary}: run \`npm run build:test\` first`)
  process.env.NAPI_RS_NATIVE_LIBRARY_PATH = binary
}
