'use strict'
// One call of the whole-call fuzzer, in its own process: reads the job (argv[2]: { files, opts }),
// loads the addon (GENCOMPACT_ADDON: a .node file, else the package's index.js, which honours
// NAPI_RS_NATIVE_LIBRARY_PATH), calls compactGeneration once and writes argv[3]:
// { ok, files?, rowsWritten?, peakMemoryBytes?, code?, message?, name?, rssIdle, rssPeak }
// rssIdle is VmRSS with the addon loaded, before the call; rssPeak is VmHWM after it.

const fs = require('fs')
const path = require('path')

function status(key) {
  const m = fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'))
  return m ? Number(m[1]) * 1024 : 0
}

const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))
const addon = process.env.GENCOMPACT_ADDON ? require(path.resolve(process.env.GENCOMPACT_ADDON)) : require(path.join(__dirname, '..', '..'))
const rssIdle = status('VmRSS')
const done = out => {
  fs.writeFileSync(process.argv[3], JSON.stringify({ ...out, rssIdle, rssPeak: status('VmHWM') }))
  process.exit(0)
}
addon.compactGeneration(job.files, job.opts).then(
  r => done({ ok: true, files: r.files.map(f => f.path), rowsWritten: r.rowsWritten, rowsRead: r.rowsRead, peakMemoryBytes: r.peakMemoryBytes }),
  e => done({ ok: false, code: e && e.code, message: String(e && e.message), name: e && e.constructor && e.constructor.name }),
)
