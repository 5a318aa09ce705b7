"""Seeds of the whole-call fuzzer, written at the start of every run (nothing outside the repository
is needed): small Parquet files from pyarrow (every codec, data page v1 and v2, PLAIN, dictionary,
DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT, nested list /
struct / map columns, nulls) and DuckDB, and Iceberg deletes: position-delete and equality-delete
Parquet files and a Puffin file of deletion-vector-v1 blobs (pyroaring).

A case is what one call reads: `files` (compactGeneration's InputFile list) plus the columns options
may name (`sortable`, `partition`, `dedupe`). Deterministic in `seed`.
"""

import datetime
import json
import os
import random
import sys

import pyarrow as pa
import pyarrow.parquet as pq

FILE_PATH_ID = 2147483546
POS_ID = 2147483545
DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
T0 = datetime.datetime(2026, 11, 28, tzinfo=datetime.timezone.utc)


def fid(name, typ, i, nullable=True):
    return pa.field(name, typ, nullable=nullable, metadata={b'PARQUET:field_id': str(i).encode()})


FLAT = pa.schema([
    fid('id', pa.int64(), 1), fid('cat', pa.string(), 2), fid('ts', pa.timestamp('us', tz='UTC'), 3),
    fid('n', pa.int32(), 4), fid('f', pa.float64(), 5), fid('s', pa.string(), 6), fid('b', pa.bool_(), 7),
    fid('bin', pa.binary(), 8), fid('d', pa.date32(), 9),
])
FLAT_SORTABLE = ['id', 'cat', 'ts', 'n', 'f', 's', 'd']

NESTED = pa.schema([
    fid('id', pa.int64(), 1), fid('cat', pa.string(), 2),
    fid('l', pa.list_(pa.field('element', pa.int64())), 3),
    fid('st', pa.struct([fid('a', pa.int32(), 5), fid('b', pa.string(), 6)]), 4),
    fid('m', pa.map_(pa.string(), pa.int64()), 7),
    fid('ls', pa.list_(pa.field('element', pa.struct([fid('x', pa.float64(), 10), fid('y', pa.string(), 11)]))), 8),
])


def flat_rows(rng, n, start):
    cats = ['alpha', 'beta', 'gamma', 'delta', None]
    rows = {k: [] for k in FLAT.names}
    for i in range(n):
        rid = start + i
        rows['id'].append(None if rng.random() < 0.03 else (rid if rng.random() > 0.1 else rng.randrange(start, start + n)))
        rows['cat'].append(rng.choice(cats))
        rows['ts'].append(None if rng.random() < 0.05 else T0 + datetime.timedelta(seconds=rng.randrange(3 * 86400)))
        rows['n'].append(None if rng.random() < 0.2 else rng.randrange(-1000, 1000))
        rows['f'].append(None if rng.random() < 0.1 else rng.choice([rng.uniform(-1e6, 1e6), 0.0, -0.0, float('nan')]))
        rows['s'].append(None if rng.random() < 0.1 else ''.join(rng.choice('abcdefghij') for _ in range(rng.randrange(0, 24))))
        rows['b'].append(None if rng.random() < 0.1 else rng.random() < 0.5)
        rows['bin'].append(None if rng.random() < 0.1 else bytes(rng.randrange(256) for _ in range(rng.randrange(0, 12))))
        rows['d'].append(None if rng.random() < 0.1 else datetime.date(2026, 11, 28 + rng.randrange(3)))
    return pa.table(rows, schema=FLAT)


def nested_rows(rng, n, start):
    rows = {k: [] for k in NESTED.names}
    for i in range(n):
        rows['id'].append(start + i)
        rows['cat'].append(rng.choice(['alpha', 'beta', None]))
        r = rng.random()
        rows['l'].append(None if r < 0.1 else [] if r < 0.2 else [rng.choice([None, rng.randrange(-99, 99)]) for _ in range(rng.randrange(1, 5))])
        rows['st'].append(None if rng.random() < 0.1 else {'a': rng.choice([None, rng.randrange(100)]), 'b': rng.choice([None, 'x' * rng.randrange(5)])})
        rows['m'].append(None if rng.random() < 0.1 else [(f'k{j}', rng.choice([None, j])) for j in range(rng.randrange(0, 4))])
        rows['ls'].append(None if rng.random() < 0.1 else [None if rng.random() < 0.1 else {'x': rng.uniform(0, 1), 'y': rng.choice([None, 'yy'])} for _ in range(rng.randrange(0, 3))])
    return pa.table(rows, schema=NESTED)


def write_pyarrow(path, table, **kw):
    kw.setdefault('row_group_size', 120)
    kw.setdefault('data_page_size', 1024)
    pq.write_table(table, path, **kw)


# The deletion-vector blobs and Puffin files deletes.spec.js writes (pyroaring's portable 64-bit
# Roaring map framed by the spec: length, magic, bitmap, CRC-32; a footer naming each blob's data file).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '__test__', 'helpers'))
from deletes import dv_blob, write_puffin  # noqa: E402,F401


def make(out_dir, seed=1):
    """Writes the seeds under out_dir; returns the cases (also written to out_dir/cases.json)."""
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(seed)
    cases = []

    def p(name):
        return os.path.join(out_dir, name)

    def flat_case(name, nfiles=2, rows=260, **kw):
        files = []
        for i in range(nfiles):
            path = p(f'{name}-{i}.parquet')
            write_pyarrow(path, flat_rows(rng, rows, 10_000 * i), **kw)
            files.append({'path': path})
        cases.append({'name': name, 'files': files, 'sortable': FLAT_SORTABLE, 'partition': ['cat', 'd'], 'dedupe': 'id'})
        return files

    for codec in ['SNAPPY', 'GZIP', 'ZSTD', 'LZ4', 'BROTLI', 'NONE']:
        flat_case(f'pa-{codec.lower()}-v1', compression=codec)
    for codec in ['SNAPPY', 'ZSTD', 'NONE']:
        flat_case(f'pa-{codec.lower()}-v2', compression=codec, data_page_version='2.0')
    flat_case('pa-plain', compression='SNAPPY', use_dictionary=False)
    for ver in ['1.0', '2.0']:
        enc = {'id': 'DELTA_BINARY_PACKED', 'n': 'DELTA_BINARY_PACKED', 'ts': 'DELTA_BINARY_PACKED',
               's': 'DELTA_LENGTH_BYTE_ARRAY', 'cat': 'DELTA_BYTE_ARRAY', 'bin': 'DELTA_BYTE_ARRAY',
               'f': 'BYTE_STREAM_SPLIT', 'd': 'BYTE_STREAM_SPLIT'}
        flat_case(f'pa-delta-bss-v{ver[0]}', compression='ZSTD' if ver == '2.0' else 'SNAPPY', use_dictionary=False,
                  column_encoding=enc, data_page_version=ver)
    # Arrow dictionary columns with nulls (ARROW:schema says dictionary, so readers keep them so)
    files = []
    for i in range(2):
        path = p(f'pa-arrow-dict-{i}.parquet')
        t = flat_rows(rng, 400, 10_000 * i)
        t = t.set_column(1, fid('cat', pa.dictionary(pa.int32(), pa.string()), 2), t.column('cat').dictionary_encode())
        t = t.set_column(5, fid('s', pa.dictionary(pa.int32(), pa.string()), 6),
                         pa.array([None if v is None else v[:2] for v in t.column('s').to_pylist()]).dictionary_encode())
        write_pyarrow(path, t, compression='SNAPPY')
        files.append({'path': path})
    cases.append({'name': 'pa-arrow-dict', 'files': files, 'sortable': FLAT_SORTABLE, 'partition': ['cat', 'd'], 'dedupe': 'id',
                  'allShapes': True})
    flat_case('pa-one-file-big-pages', nfiles=1, rows=1500, compression='ZSTD', data_page_size=1 << 20, row_group_size=1 << 20)

    for ver in ['1.0', '2.0']:
        files = []
        for i in range(2):
            path = p(f'pa-nested-v{ver[0]}-{i}.parquet')
            write_pyarrow(path, nested_rows(rng, 200, 10_000 * i), compression='SNAPPY', data_page_version=ver)
            files.append({'path': path})
        cases.append({'name': f'pa-nested-v{ver[0]}', 'files': files, 'sortable': ['id', 'cat'], 'partition': ['cat'], 'dedupe': 'id'})

    import duckdb
    con = duckdb.connect()
    for codec in ['zstd', 'snappy', 'uncompressed']:
        files = []
        for i in range(2):
            path = p(f'duck-{codec}-{i}.parquet')
            con.execute(f"""COPY (SELECT (r * 7 + {i * 1000})::BIGINT AS id,
                    CASE WHEN r % 11 = 0 THEN NULL ELSE 'c' || (r % 4)::VARCHAR END AS cat,
                    TIMESTAMPTZ '2026-11-28 00:00:00+00' + to_seconds(r * 613 % 259200) AS ts,
                    CASE WHEN r % 5 = 0 THEN NULL ELSE (r * 31 % 977)::INTEGER END AS n,
                    (r * 1.5)::DOUBLE AS f, repeat('x', (r % 13)::INTEGER) || r::VARCHAR AS s,
                    DATE '2026-11-28' + (r % 3)::INTEGER AS d,
                    CASE WHEN r % 7 = 0 THEN NULL ELSE [r, r + 1] END AS l
                FROM range({300 + i * 40}) t(r)) TO '{path}' (FORMAT parquet, COMPRESSION {codec}, ROW_GROUP_SIZE 128)""")
            files.append({'path': path})
        cases.append({'name': f'duck-{codec}', 'files': files, 'sortable': ['id', 'cat', 'ts', 'n', 's', 'd'], 'partition': ['cat', 'd'], 'dedupe': 'id'})

    # Iceberg deletes over pyarrow data files (field ids set), located by file:// URLs.
    data = []
    for i in range(3):
        path = p(f'ice-data-{i}.parquet')
        write_pyarrow(path, flat_rows(rng, 200, 10_000 * i), compression='ZSTD', row_group_size=64)
        data.append({'path': path, 'location': 'file://' + path})
    posd = p('ice-pos-deletes.parquet')
    rows = sorted({(f['location'], rng.randrange(0, 230)) for f in data[:2] for _ in range(40)})
    pschema = pa.schema([fid('file_path', pa.string(), FILE_PATH_ID, False), fid('pos', pa.int64(), POS_ID, False)])
    pq.write_table(pa.table({'file_path': [r[0] for r in rows], 'pos': [r[1] for r in rows]}, schema=pschema), posd,
                   row_group_size=16, compression='snappy')
    eqd = p('ice-eq-deletes.parquet')
    eschema = pa.schema([fid('id', pa.int64(), 1), fid('cat', pa.string(), 2)])
    ids = [10_000 * rng.randrange(3) + rng.randrange(200) for _ in range(30)] + [None]
    pq.write_table(pa.table({'id': ids, 'cat': [rng.choice(['alpha', 'beta', None]) for _ in ids]}, schema=eschema), eqd,
                   row_group_size=8, compression='zstd')
    puf = p('ice-dvs.puffin')
    blobs = write_puffin(puf, [(data[0]['location'], sorted({rng.randrange(200) for _ in range(30)})),
                               (data[2]['location'], sorted({rng.randrange(200) for _ in range(20)} | {70000, 70001}))])
    sort_ice = ['id', 'cat', 'ts', 'n', 's', 'd']
    cases.append({'name': 'ice-position', 'files': [
        {**data[0], 'deletes': [{'kind': 'position', 'path': posd}]},
        {**data[1], 'deletes': [{'kind': 'position', 'path': posd}]}, data[2]],
        'sortable': sort_ice, 'partition': ['cat'], 'dedupe': 'id'})
    cases.append({'name': 'ice-equality', 'files': [
        {**f, 'deletes': [{'kind': 'equality', 'path': eqd, 'fieldIds': [1] if i < 2 else [1, 2]}]} for i, f in enumerate(data)],
        'sortable': sort_ice, 'partition': ['cat'], 'dedupe': 'id'})
    cases.append({'name': 'ice-dv', 'files': [
        {**data[0], 'deletes': [{'kind': 'deletion-vector', 'path': puf, **blobs[0]}]}, data[1],
        {**data[2], 'deletes': [{'kind': 'deletion-vector', 'path': puf, **blobs[1]}]}],
        'sortable': sort_ice, 'partition': ['cat'], 'dedupe': 'id'})
    cases.append({'name': 'ice-mixed', 'files': [
        {**data[0], 'deletes': [{'kind': 'position', 'path': posd}, {'kind': 'deletion-vector', 'path': puf, **blobs[0]},
                                {'kind': 'equality', 'path': eqd, 'fieldIds': [1]}]},
        {**data[1], 'deletes': [{'kind': 'position', 'path': posd}]}],
        'sortable': sort_ice, 'partition': ['cat'], 'dedupe': 'id'})

    extra = os.environ.get('CALLFUZZ_PARQUET_TESTING')  # optional: a parquet-testing data/ directory
    if extra and os.path.isdir(extra):
        for name in ['alltypes_plain.parquet', 'datapage_v2.snappy.parquet', 'delta_byte_array.parquet',
                     'delta_length_byte_array.parquet', 'byte_stream_split.zstd.parquet', 'nested_lists.snappy.parquet',
                     'nested_maps.snappy.parquet', 'lz4_raw_compressed.parquet', 'nulls.snappy.parquet',
                     'delta_encoding_optional_column.parquet', 'int32_with_null_pages.parquet']:
            src = os.path.join(extra, name)
            if os.path.exists(src):
                dst = p('pt-' + name)
                with open(src, 'rb') as a, open(dst, 'wb') as b:
                    b.write(a.read())
                cases.append({'name': 'pt-' + name, 'files': [{'path': dst}], 'sortable': [], 'partition': [], 'dedupe': None})

    with open(p('cases.json'), 'w') as f:
        json.dump(cases, f, indent=1)
    return cases


if __name__ == '__main__':
    import sys
    cs = make(sys.argv[1] if len(sys.argv) > 1 else '/tmp/callfuzz-seeds')
    for c in cs:
        print(c['name'], [os.path.getsize(f['path']) for f in c['files']])
