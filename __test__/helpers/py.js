'use strict'
// pyarrow as an independent reader (python3 -c). Every call prints one line of JSON.

const { execFileSync } = require('child_process')

const SCRIPT = `
import sys, json
import pyarrow.parquet as pq
out = []
for f in sys.argv[1:]:
    pf = pq.ParquetFile(f)
    s = str(pf.schema)
    # first line is "<pyarrow._parquet.ParquetSchema object at 0x...>"
    s = s.split('\\n', 1)[1] if s.startswith('<') else s
    kv = {k.decode(): v.decode() for k, v in (pf.metadata.metadata or {}).items()}
    md = pf.metadata
    codecs = sorted({md.row_group(i).column(j).compression for i in range(md.num_row_groups) for j in range(md.num_columns)})
    t = pf.read()
    out.append({"file": f, "schema": s, "kv": kv, "numRows": md.num_rows, "numRowGroups": md.num_row_groups,
                "codecs": codecs, "readRows": t.num_rows, "arrowSchema": str(t.schema.remove_metadata())})
print(json.dumps(out))
`

/** [{ file, schema (pq.ParquetFile(f).schema as text), kv, numRows, numRowGroups, codecs, readRows, arrowSchema }] */
function pyInspect(files) {
  const stdout = execFileSync('python3', ['-c', SCRIPT, ...files], { encoding: 'utf8', maxBuffer: 64 << 20 })
  return JSON.parse(stdout)
}

module.exports = { pyInspect }
