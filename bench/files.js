'use strict'
// Shared by the bench scripts: the input files, given as paths or as one JSON file holding an
// array (or `{ files }`), and the Parquet files a tool wrote.
const fs = require('fs')
const path = require('path')

function readFileList(args) {
  if (args.length === 1 && args[0].endsWith('.json')) {
    const j = JSON.parse(fs.readFileSync(args[0], 'utf8'))
    return Array.isArray(j) ? j : j.files
  }
  return args
}

/** Every .parquet file under `dir` (recursively), sorted. */
function listParquet(dir) {
  const out = []
  if (!fs.existsSync(dir)) return out
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name)
    if (ent.isDirectory()) out.push(...listParquet(p))
    else if (ent.name.endsWith('.parquet')) out.push(p)
  }
  return out.sort()
}

module.exports = { readFileList, listParquet }
