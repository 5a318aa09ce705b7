'use strict'
// The suite loads the test build (compiled with the `test-hooks` feature, `npm run build:test`,
// in target/test-addon), not the release binary at the package root, which stays what a user
// `require()`s. Fails early, once, when it is missing; helpers/environment.js points each process
// running tests (and the children they spawn) at it.

const fs = require('fs')
const path = require('path')

module.exports = () => {
  const binary = path.join(__dirname, '..', '..', 'target', 'test-addon', 'gencompact.linux-x64-gnu.node')
  if (!fs.existsSync(binary)) throw new Error(`no test build at ${binary}: run \`npm run build:test\` first`)
}
