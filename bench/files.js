'use strict'
// Shared by the bench scripts: the input files, given as paths or as one JSON file holding an
// array (or `{ files }`), the Parquet files a tool wrote, and the marked sections of the reports.
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

/**
 * Writes `body` into `file` between <!-- bench:<section> begin --> and <!-- bench:<section> end -->
 * (appended when absent; the rest of the file is kept). `title` heads a file that does not exist.
 */
function writeSection(file, section, body, title) {
  const begin = `<!-- bench:${section} begin -->`
  const end = `<!-- bench:${section} end -->`
  const block = `${begin}\n${body.trim()}\n${end}`
  let text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : `${title}\n`
  const i = text.indexOf(begin)
  const j = text.indexOf(end)
  if (i >= 0 && j > i) text = text.slice(0, i) + block + text.slice(j + end.length)
  else text = text.replace(/\s*$/, '\n\n') + block + '\n'
  fs.writeFileSync(file, text)
}

module.exports = { readFileList, listParquet, writeSection }
