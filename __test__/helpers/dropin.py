"""pyarrow / pyiceberg side of dropin.spec.js: one JSON request on stdin, one JSON answer on stdout.

ops:
  write   {files: [{path, columns: [{name, type, fieldId?, nullable?, values}], rowGroupSize?, compression?, kv?}]}
          writes each Parquet file with pyarrow (field ids as PARQUET:field_id). Values arrive as JSON:
          int64 / timestamp(µs) may be decimal strings (past 2^53), dates are days, binary is hex.
  meta    {paths} -> per file: rows, row groups (rows, compressed bytes, start offset), compressed
          bytes per codec, and per top-level primitive column its field id, value / null counts and
          the Iceberg bounds pyiceberg encodes from the footer min/max (truncate(16) for strings).
  bucket  {n, type, values} -> pyiceberg's BucketTransform(n) of each value
"""
import sys, json, datetime
import pyarrow as pa
import pyarrow.parquet as pq

EPOCH_DATE = datetime.date(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
EPOCH_NAIVE = datetime.datetime(1970, 1, 1)

ARROW = {
    'int32': pa.int32(), 'int64': pa.int64(), 'string': pa.string(), 'bool': pa.bool_(),
    'double': pa.float64(), 'float': pa.float32(), 'date': pa.date32(), 'binary': pa.binary(),
    'timestamptz': pa.timestamp('us', tz='UTC'), 'timestamp': pa.timestamp('us'),
}


def convert(t, v):
    if v is None:
        return None
    if t in ('int64', 'int32'):
        return int(v)
    if t in ('timestamptz', 'timestamp'):
        base = EPOCH_UTC if t == 'timestamptz' else EPOCH_NAIVE
        return base + datetime.timedelta(microseconds=int(v))
    if t == 'date':
        return EPOCH_DATE + datetime.timedelta(days=int(v))
    if t == 'binary':
        return bytes.fromhex(v)
    if t in ('double', 'float'):
        return float(v)
    return v


def write(req):
    return [write_one(f) for f in req['files']]


def write_one(req):
    fields, arrays = [], []
    for c in req['columns']:
        md = {b'PARQUET:field_id': str(c['fieldId']).encode()} if c.get('fieldId') is not None else None
        t = ARROW[c['type']]
        fields.append(pa.field(c['name'], t, nullable=c.get('nullable', True), metadata=md))
        arrays.append(pa.array([convert(c['type'], v) for v in c['values']], type=t))
    schema = pa.schema(fields, metadata={k.encode(): v.encode() for k, v in (req.get('kv') or {}).items()})
    table = pa.Table.from_arrays(arrays, schema=schema)
    pq.write_table(table, req['path'], row_group_size=req.get('rowGroupSize'),
                   compression=req.get('compression', 'snappy'), use_dictionary=req.get('dictionary', True))
    return {'rows': table.num_rows}


def iceberg_type(arrow_type):
    from pyiceberg import types as T
    if pa.types.is_int32(arrow_type): return T.IntegerType()
    if pa.types.is_int64(arrow_type): return T.LongType()
    if pa.types.is_string(arrow_type): return T.StringType()
    if pa.types.is_boolean(arrow_type): return T.BooleanType()
    if pa.types.is_date32(arrow_type): return T.DateType()
    if pa.types.is_timestamp(arrow_type): return T.TimestamptzType() if arrow_type.tz else T.TimestampType()
    if pa.types.is_binary(arrow_type): return T.BinaryType()
    if pa.types.is_float64(arrow_type): return T.DoubleType()
    if pa.types.is_float32(arrow_type): return T.FloatType()
    return None  # groups: no bounds


def plain(v):
    if isinstance(v, datetime.datetime):
        base = EPOCH_UTC if v.tzinfo else EPOCH_NAIVE
        return (v - base) // datetime.timedelta(microseconds=1)
    if isinstance(v, datetime.date):
        return (v - EPOCH_DATE).days
    return v


def meta(req):
    from pyiceberg.conversions import to_bytes
    out = []
    for path in req['paths']:
        pf = pq.ParquetFile(path)
        md = pf.metadata
        arrow = pf.schema_arrow
        rgs, codecs = [], {}
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            compressed = 0
            for j in range(rg.num_columns):
                c = rg.column(j)
                compressed += c.total_compressed_size
                codecs[c.compression] = codecs.get(c.compression, 0) + c.total_compressed_size
            c0 = rg.column(0)
            start = c0.data_page_offset
            if c0.has_dictionary_page and c0.dictionary_page_offset is not None:
                start = min(start, c0.dictionary_page_offset)
            rgs.append({'rows': rg.num_rows, 'compressed': compressed, 'offset': start})
        cols = {}
        for j in range(md.num_columns):
            p = md.row_group(0).column(j).path_in_schema if md.num_row_groups else md.schema.column(j).path
            if '.' in p:
                continue
            f = arrow.field(p)
            fid = int(f.metadata[b'PARQUET:field_id']) if f.metadata and b'PARQUET:field_id' in f.metadata else None
            lo = hi = None
            values = nulls = 0
            ok = True
            for i in range(md.num_row_groups):
                c = md.row_group(i).column(j)
                st = c.statistics
                values += c.num_values
                nulls += st.null_count
                if st.null_count == c.num_values:
                    continue
                if not st.has_min_max:
                    ok = False
                    continue
                lo = st.min if lo is None or st.min < lo else lo
                hi = st.max if hi is None or st.max > hi else hi
            entry = {'fieldId': fid, 'values': values, 'nulls': nulls, 'type': str(f.type)}
            it = iceberg_type(f.type)
            if ok and lo is not None and it is not None:
                lo, hi = plain(lo), plain(hi)
                if isinstance(lo, str):
                    lo = lo[:16]
                    if len(hi) > 16:
                        hi = hi[:15] + chr(ord(hi[15]) + 1)
                entry.update(lowerHex=to_bytes(it, lo).hex(), upperHex=to_bytes(it, hi).hex())
            cols[p] = entry
        out.append({'rows': md.num_rows, 'rowGroups': rgs, 'codecBytes': codecs, 'columns': cols})
    return out


def bucket(req):
    from pyiceberg.transforms import BucketTransform
    from pyiceberg import types as T
    t = {'long': T.LongType(), 'int': T.IntegerType(), 'string': T.StringType()}[req['type']]
    fn = BucketTransform(req['n']).transform(t)
    return [fn(int(v) if req['type'] in ('long', 'int') else v) for v in req['values']]


if __name__ == '__main__':
    req = json.load(sys.stdin)
    print(json.dumps({'write': write, 'meta': meta, 'bucket': bucket}[req['op']](req)))
