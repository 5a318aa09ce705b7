"""pyarrow side of __test__/matrix.spec.js: writes the nested/decimal inputs (pyarrow as an
independent writer) and compares outputs to inputs (pyarrow as an independent reader).

    python3 nested.py gen <dir>                          -> {"files": [...], "rows": N}
    python3 nested.py compare '<json: {inputs, outputs}>' -> schema texts, row counts, first diff
"""
import datetime
import decimal
import json
import os
import random
import sys

import pyarrow as pa
import pyarrow.parquet as pq

_next_id = [0]


def fid(name, typ, nullable=True):
    """A field carrying a Parquet field id (as Iceberg files do), ids assigned depth first."""
    _next_id[0] += 1
    return pa.field(name, typ, nullable, metadata={b"PARQUET:field_id": str(_next_id[0]).encode()})


def schema():
    _next_id[0] = 0
    return pa.schema([
        fid("id", pa.int64(), nullable=False),
        fid("ts", pa.timestamp("us", tz="UTC")),
        fid("li", pa.list_(fid("element", pa.int32()))),
        fid("ls", pa.list_(fid("element", pa.string()))),
        fid("st", pa.struct([fid("a", pa.int32()), fid("b", pa.string()), fid("c", pa.list_(fid("element", pa.float64())))])),
        fid("m", pa.map_(fid("key", pa.string(), nullable=False), fid("value", pa.int64()))),
        fid("d9", pa.decimal128(9, 2)),
        fid("d18", pa.decimal128(18, 4)),
        fid("d38", pa.decimal128(38, 10)),
        fid("lst", pa.list_(fid("element", pa.struct([fid("x", pa.int32()), fid("y", pa.string())])))),
        fid("fsb", pa.binary(16)),
        fid("ll", pa.list_(fid("element", pa.list_(fid("element", pa.int32()))))),
    ], metadata={b"gencompact.test": b"matrix"})


WORDS = ["", "a", "zeta", "ünïcødé", "emoji \U0001F600", "x" * 40, "line\nbreak", "tab\tsep"]
T0 = datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc)


def dec(r, precision, scale):
    if r.random() < 0.1:
        return None
    # the extremes of the type, else 1..precision digits; built exactly (no context rounding)
    n = 10 ** precision - 1 if r.random() < 0.1 else r.randrange(10 ** r.randint(1, precision))
    return decimal.Decimal((int(r.random() < 0.5), tuple(int(c) for c in str(n)), -scale))


def maybe(r, p, f):
    return None if r.random() < p else f()


def row(r, i):
    return {
        "id": i,
        # non-zero microseconds, some before 1970
        "ts": maybe(r, 0.1, lambda: T0 + datetime.timedelta(days=r.randint(-20000, 2000), microseconds=r.randint(1, 86_400_000_000))),
        "li": maybe(r, 0.15, lambda: [maybe(r, 0.1, lambda: r.randint(-2**31, 2**31 - 1)) for _ in range(r.randint(0, 5))]),
        "ls": maybe(r, 0.15, lambda: [maybe(r, 0.1, lambda: r.choice(WORDS)) for _ in range(r.randint(0, 4))]),
        "st": maybe(r, 0.15, lambda: {
            "a": maybe(r, 0.2, lambda: r.randint(-1000, 1000)),
            "b": maybe(r, 0.2, lambda: r.choice(WORDS)),
            "c": maybe(r, 0.2, lambda: [r.uniform(-1e300, 1e300) if r.random() < 0.3 else round(r.uniform(-10, 10), 3) for _ in range(r.randint(0, 3))]),
        }),
        "m": maybe(r, 0.15, lambda: [(f"k{j}", maybe(r, 0.2, lambda: r.randint(-2**63, 2**63 - 1))) for j in range(r.randint(0, 4))]),
        "d9": dec(r, 9, 2),
        "d18": dec(r, 18, 4),
        "d38": dec(r, 38, 10),
        "lst": maybe(r, 0.15, lambda: [maybe(r, 0.1, lambda: {"x": maybe(r, 0.2, lambda: r.randint(0, 99)), "y": maybe(r, 0.2, lambda: r.choice(WORDS))}) for _ in range(r.randint(0, 3))]),
        "fsb": maybe(r, 0.15, lambda: bytes(r.randrange(256) for _ in range(16))),
        "ll": maybe(r, 0.15, lambda: [maybe(r, 0.2, lambda: [maybe(r, 0.1, lambda: r.randint(-50, 50)) for _ in range(r.randint(0, 3))]) for _ in range(r.randint(0, 3))]),
    }


# (rows, input codec, rows per row group, data page version)
FILES = [(1, "snappy", 100, "1.0"), (40, "zstd", 16, "1.0"), (300, "gzip", 128, "2.0"),
         (900, "none", 250, "1.0"), (1500, "snappy", 600, "2.0"), (2200, "zstd", 1000, "1.0")]


def gen(out_dir):
    r = random.Random(20240301)
    sch = schema()
    ids = list(range(sum(n for n, *_ in FILES)))
    r.shuffle(ids)  # ids unique, in no order within or across files
    files, at = [], 0
    os.makedirs(out_dir, exist_ok=True)
    for k, (n, codec, rg, page_version) in enumerate(FILES):
        t = pa.Table.from_pylist([row(r, i) for i in ids[at:at + n]], schema=sch)
        at += n
        f = os.path.join(out_dir, f"in-{k}.parquet")
        pq.write_table(t, f, compression=codec, row_group_size=rg, data_page_version=page_version,
                       store_decimal_as_integer=True)  # d9 -> INT32, d18 -> INT64, d38 -> FIXED_LEN_BYTE_ARRAY
        files.append(f)
    print(json.dumps({"files": files, "rows": at}))


def schema_text(pf):
    s = str(pf.schema)
    return s.split("\n", 1)[1] if s.startswith("<") else s


def read_all(files):
    tables = [pq.read_table(f) for f in files]
    return pa.concat_tables(tables).sort_by("id") if tables else None


def compare(req):
    ins, outs = req["inputs"], req["outputs"]
    in_pf = [pq.ParquetFile(f) for f in ins]
    out_pf = [pq.ParquetFile(f) for f in outs]
    kv = lambda pf: {k.decode(): v.decode() for k, v in (pf.metadata.metadata or {}).items()}
    a, b = read_all(ins), read_all(outs)
    res = {
        "inputSchemas": sorted({schema_text(p) for p in in_pf}),
        "outputSchemas": sorted({schema_text(p) for p in out_pf}),
        "inputArrowSchema": str(a.schema.remove_metadata()),
        "outputArrowSchemas": sorted({str(p.schema_arrow.remove_metadata()) for p in out_pf}),
        "arrowSchemaEquals": all(p.schema_arrow.equals(in_pf[0].schema_arrow, check_metadata=False) for p in out_pf),
        "inputKv": kv(in_pf[0]),
        "outputKv": [kv(p) for p in out_pf],
        "outputRowGroups": sum(p.metadata.num_row_groups for p in out_pf),
        "inputRows": a.num_rows,
        "outputRows": b.num_rows,
        "tableEquals": a.num_rows == b.num_rows and a.equals(b),
        "firstDiff": None,
    }
    # a readable first difference (python values: Decimal exact, datetime to the µs)
    for x, y in zip(a.to_pylist(), b.to_pylist()):
        if x != y:
            col = next(c for c in x if x[c] != y.get(c))
            res["firstDiff"] = {"id": x["id"], "outputId": y["id"], "column": col, "input": repr(x[col]), "output": repr(y.get(col))}
            break
    # a sample of exact values, so the spec can see decimals and µs survive as text
    res["sample"] = [{c: repr(v[c]) for c in ("id", "ts", "d9", "d18", "d38")} for v in b.slice(0, 3).to_pylist()]
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    else:
        compare(json.loads(sys.argv[2]))
