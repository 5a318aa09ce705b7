'use strict'
// Shared by the bench CLIs: the input files, given as paths or as one JSON file holding an
// array (or `{ files }`).
const fs = require('fs')

function readFileList(args) {
  if (args.length === 1 && args[0].endsWith('.json')) {
    const j = JSON.parse(fs.readFileSync(args[0], 'utf8'))
    return Array.isArray(j) ? j : j.files
  }
  return args
}

module.exports = { readFileList }
