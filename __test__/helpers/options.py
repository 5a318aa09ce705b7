"""pyarrow side of options.spec.js: the inputs and the comparison, one line of JSON back.

  options.py gen <dir>         pyarrow inputs: a dictionary-encoded string column with nulls
                               (a row group where it is all null, so its chunk's dictionary is
                               empty), a duration (kept only through ARROW:schema), a UTC
                               timestamp, a list, a dedupe key with repeats and nulls, a
                               partition column; several row groups, codecs and page versions.
  options.py meta <dir>        inputs whose Parquet columns are identical but whose ARROW:schema
                               differ (int64 / duration), agree (duration twice), or does not
                               decode (written after the data, so the file holds no other).
  options.py read < json       [files]: pyarrow's Arrow schema and rows of each, or its error.
  options.py compare < json    [{inputs, outputs, dedupeBy}], each: pyarrow reads every input and every
                               output; the inputs' rows (after dedupe's drops: the first row of
                               each non-null key in files order, then row order) and the
                               outputs' rows compared as multisets, and their Arrow schemas.
"""

import collections
import datetime
import json
import os
import random
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def gen(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rnd = random.Random(50)
    files = []
    next_id = 0
    layouts = [(120, 30, 'snappy', '1.0'), (90, 45, 'zstd', '2.0'), (150, 50, 'gzip', '1.0'), (60, 60, 'none', '2.0'),
               (80, 20, 'snappy', '2.0')]
    for f, (rows, row_group, codec, version) in enumerate(layouts):
        ids = list(range(next_id, next_id + rows))
        next_id += rows
        cats = [None if rnd.random() < 0.5 else f'category-{rnd.randint(0, 6)}' for _ in range(rows)]
        for i in range(min(row_group, rows)):
            cats[i] = None  # the first row group: all null, an empty dictionary
        keys = [None if rnd.random() < 0.05 else rnd.randint(0, 350) for _ in range(rows)]
        base = datetime.datetime(2025, 3, 1, tzinfo=datetime.timezone.utc)
        table = pa.table({
            'id': pa.array(ids, pa.int64()),
            'k': pa.array(keys, pa.int64()),
            'ts': pa.array([base + datetime.timedelta(microseconds=rnd.randint(0, 10**10)) for _ in range(rows)],
                           pa.timestamp('us', tz='UTC')),
            'cat': pa.array(cats, pa.string()).dictionary_encode(),
            's': pa.array([None if rnd.random() < 0.2 else 'v%x' % rnd.getrandbits(40) for _ in range(rows)], pa.string()),
            'p': pa.array([rnd.choice(['east', 'west', 'north', None]) for _ in range(rows)], pa.string()),
            'dur': pa.array([rnd.randint(-10**9, 10**9) for _ in range(rows)], pa.duration('us')),
            'li': pa.array([None if rnd.random() < 0.2 else [rnd.randint(-9, 9) for _ in range(rnd.randint(0, 3))]
                            for _ in range(rows)], pa.list_(pa.int32())),
        })
        path = os.path.join(out_dir, f'in-{f}.parquet')
        pq.write_table(table, path, row_group_size=row_group, compression=codec, data_page_version=version)
        files.append(path)
    print(json.dumps({'files': files, 'rows': next_id}))


def meta(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    ints = pa.table({'x': pa.array([1, 2], pa.int64()), 'ts': pa.array([0, 1], pa.timestamp('us', tz='Europe/Paris'))})
    durations = pa.table({'x': pa.array([5, 6], pa.duration('us')), 'ts': pa.array([2, 3], pa.timestamp('us', tz='Europe/Paris'))})
    paths = {}
    for name, table in [('ints', ints), ('durations', durations), ('durations2', durations)]:
        paths[name] = os.path.join(out_dir, f'{name}.parquet')
        pq.write_table(table, paths[name])
    paths['corrupt'] = os.path.join(out_dir, 'corrupt.parquet')
    table = pa.table({'x': pa.array([7, 8, 9], pa.int64()), 'ts': pa.array([4, 5, 6], pa.timestamp('us', tz='UTC'))})
    w = pq.ParquetWriter(paths['corrupt'], table.schema, store_schema=False)
    w.write_table(table)
    w.add_key_value_metadata({'ARROW:schema': 'bm90IGFuIGFycm93IHNjaGVtYQ=='})
    w.close()
    print(json.dumps(paths))


def read_back(files):
    out = []
    for f in files:
        try:
            t = pq.read_table(f)
            out.append({'types': str(t.schema.remove_metadata()), 'rows': [canonical(r) for r in t.to_pylist()]})
        except Exception as e:  # noqa: BLE001 (the error is the answer)
            out.append({'error': str(e)})
    print(json.dumps(out))


def canonical(row):
    return json.dumps(row, sort_keys=True, default=repr)


def read(files):
    return [pq.read_table(f) for f in files]


def compare_one(spec):
    inputs = read(spec['inputs'])
    outputs = read(spec['outputs'])
    dedupe = spec.get('dedupeBy')
    expected = []
    seen = set()
    for t in inputs:
        for row in t.to_pylist():
            key = row[dedupe] if dedupe else None
            if key is not None:
                if key in seen:
                    continue
                seen.add(key)
            expected.append(canonical(row))
    got = [canonical(row) for t in outputs for row in t.to_pylist()]
    want, have = collections.Counter(expected), collections.Counter(got)
    missing, extra = want - have, have - want
    in_types = sorted({str(t.schema.remove_metadata()) for t in inputs})
    out_types = sorted({str(t.schema.remove_metadata()) for t in outputs})
    return {
        'expected': len(expected), 'got': len(got),
        'missing': sum(missing.values()), 'extra': sum(extra.values()),
        'missingSample': list(missing)[:3], 'extraSample': list(extra)[:3],
        'inTypes': in_types, 'outTypes': out_types,
    }


def compare(specs):
    print(json.dumps([compare_one(spec) for spec in specs]))


if __name__ == '__main__':
    if sys.argv[1] == 'gen':
        gen(sys.argv[2])
    elif sys.argv[1] == 'meta':
        meta(sys.argv[2])
    elif sys.argv[1] == 'read':
        read_back(json.load(sys.stdin))
    elif sys.argv[1] == 'compare':
        compare(json.load(sys.stdin))
    else:
        raise SystemExit(f'unknown command {sys.argv[1]}')
