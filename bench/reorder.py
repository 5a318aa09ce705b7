#!/usr/bin/env python3
"""reorder.py: a partition's rows re-written by pyarrow in the order of one column — a key
unrelated to arrival, so that every input file holds rows from all over the day and a column
of values unique to each row compresses only as well as unrelated values do — into as many
files as the input has, each with pyarrow's DEFAULT writer settings but the codec.

    python3 bench/reorder.py --by request_id --codec zstd IN_DIR OUT_DIR
        prints one line of JSON: {files: [paths], rows, bytes, by, codec, pyarrow}

The whole partition is read into memory (the unique shape: ~2.7 GB decoded). String columns are
taken as large strings while rows are gathered (a gathered column may exceed 2 GiB) and written
back as the input's types; field ids and key-value metadata (`iceberg.schema`) are kept.
pyarrow checks its dictionary limit only after 1,024 values, so files of fewer rows come out
dictionary-encoded in full, whatever their values.
"""
import argparse
import glob
import json
import os


def wide(pa, ty):
    if ty == pa.string():
        return pa.large_string()
    if ty == pa.binary():
        return pa.large_binary()
    if pa.types.is_struct(ty):
        return pa.struct([pa.field(f.name, wide(pa, f.type), f.nullable, f.metadata) for f in ty])
    return ty


def main():
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    ap = argparse.ArgumentParser()
    ap.add_argument('--by', required=True)
    ap.add_argument('--codec', default='zstd')
    ap.add_argument('src')
    ap.add_argument('dst')
    o = ap.parse_args()
    files = sorted(glob.glob(os.path.join(o.src, '*.parquet')))
    table = pa.concat_tables([pq.read_table(f) for f in files], promote_options='default')
    schema = table.schema
    table = table.cast(pa.schema([pa.field(f.name, wide(pa, f.type), f.nullable, f.metadata) for f in schema],
                                 metadata=schema.metadata))
    order = pc.sort_indices(table, sort_keys=[(o.by, 'ascending')])
    per = -(-table.num_rows // len(files))
    os.makedirs(o.dst, exist_ok=True)
    paths, total = [], 0
    for i in range(len(files)):
        rows = order.slice(i * per, per)
        if len(rows) == 0:
            break
        dst = os.path.join(os.path.abspath(o.dst), 'part-%05d.parquet' % i)
        pq.write_table(table.take(rows).cast(schema), dst, compression=o.codec)  # pyarrow's defaults otherwise
        paths.append(dst)
        total += os.path.getsize(dst)
    print(json.dumps({'files': paths, 'rows': table.num_rows, 'bytes': total, 'by': o.by, 'codec': o.codec,
                      'pyarrow': pa.__version__}))


if __name__ == '__main__':
    main()
