'use strict'
// Per-file column metrics as pyarrow reads them from the footers, with the Iceberg bounds and
// single-value bytes pyiceberg computes from them, compared with what a call returned.

const { execFileSync } = require('child_process')

// pyarrow reads each file's footer statistics; the expected Iceberg bounds (truncate(16), upper
// bound rounded up) and their single-value bytes come from pyiceberg's conversions.
const PY = `
import sys, json, datetime
import pyarrow.parquet as pq
from pyiceberg.conversions import to_bytes
from pyiceberg.types import StringType, IntegerType, LongType, BooleanType, TimestamptzType, DateType
out = []
for f in json.load(sys.stdin):
    md = pq.ParquetFile(f).metadata
    cols = {}
    for j in range(md.num_columns):
        c0 = md.row_group(0).column(j)
        path = c0.path_in_schema
        if '.' in path: continue
        lo = hi = None; nulls = 0; values = 0; ok = True
        for i in range(md.num_row_groups):
            c = md.row_group(i).column(j); st = c.statistics
            values += c.num_values; nulls += st.null_count
            if st.null_count == c.num_values: continue
            if not st.has_min_max: ok = False; continue
            lo = st.min if lo is None or st.min < lo else lo
            hi = st.max if hi is None or st.max > hi else hi
        pt = c0.physical_type
        if isinstance(lo, datetime.datetime):
            epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
            lo, hi = [int((v - epoch) / datetime.timedelta(microseconds=1)) for v in (lo, hi)]
            t = TimestamptzType()
        elif isinstance(lo, str):
            t = StringType()
            lo = lo[:16]
            if len(hi) > 16: hi = hi[:15] + chr(ord(hi[15]) + 1)
        elif isinstance(lo, bool): t = BooleanType()
        elif pt == 'INT32': t = IntegerType()
        else: t = LongType()
        entry = {"values": values, "nulls": nulls}
        if ok and lo is not None:
            entry.update(lower=lo, upper=hi, lowerHex=to_bytes(t, lo).hex(), upperHex=to_bytes(t, hi).hex())
        cols[path] = entry
    out.append(cols)
print(json.dumps(out))
`

/** [{ [column]: { values, nulls, lower?, upper?, lowerHex?, upperHex? } }] per path. */
function pyMetrics(paths) {
  return JSON.parse(execFileSync('python3', ['-c', PY], { input: JSON.stringify(paths), encoding: 'utf8', maxBuffer: 64 << 20 }))
}

/** Checks every primitive top-level column of every file against pyarrow; returns how many bounds it compared. */
function expectMetricsMatchPyarrow(files) {
  const expected = pyMetrics(files.map(f => f.path))
  let checked = 0
  for (const [i, f] of files.entries()) {
    for (const [name, e] of Object.entries(expected[i])) {
      const c = f.columns.find(col => col.name === name)
      expect(c).toBeDefined()
      expect([name, c.valueCount, c.nullValueCount]).toEqual([name, e.values, e.nulls])
      if (e.lower === undefined) {
        expect([name, c.lowerBound]).toEqual([name, undefined])
        continue
      }
      expect([name, c.lowerBound, c.upperBound]).toEqual([name, e.lower, e.upper])
      expect([name, c.lowerBoundBytes.toString('hex'), c.upperBoundBytes.toString('hex')]).toEqual([name, e.lowerHex, e.upperHex])
      checked++
    }
    // VARIANT groups carry no bounds
    expect(f.columns.find(col => col.name === 'tool_definitions').lowerBound).toBeUndefined()
  }
  return checked
}

module.exports = { pyMetrics, expectMetricsMatchPyarrow }
