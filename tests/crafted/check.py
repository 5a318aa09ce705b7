#!/usr/bin/env python3
"""What pyarrow reads, for __test__/crafted.spec.js: the rows and types of a call's inputs (minus
the rows their delete files delete) against those of its outputs. Reads one JSON object on stdin:
  { inputs: [path], outputs: [path], positionDeletes?: [path], equalityDeletes?: [{ path, column }],
    sortBy?: column, partitionBy?: column }
and prints { expectedRows, gotRows, typesExpected, typesGot, missing, extra, sorted, onePartitionPerFile,
readError }. Where the inputs' Arrow schemas (ARROW:schema) disagree, the expected reading is the
Parquet columns' own (pyarrow on copies without ARROW:schema). A dictionary type compares as its
value type (an encoding, not a type of the values)."""
import json
import os
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pqfile import FMD_KV, PqFile  # noqa: E402


def plain(t):
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in t.columns]
    return pa.table(cols, names=t.column_names)


def read_without_arrow_schema(path, tmp):
    f = PqFile.read(path)
    kv = f.meta.get(FMD_KV)
    if kv is not None:
        kv.items = [e for e in kv.items if e.get(1) != b"ARROW:schema"]
    p = os.path.join(tmp, f"{len(os.listdir(tmp))}.parquet")
    f.write(p)
    return pq.read_table(p)


def rows(t):
    return [tuple(r.values()) for r in t.to_pylist()]


def main():
    req = json.load(sys.stdin)
    with tempfile.TemporaryDirectory() as tmp:
        tabs = [] if req.get("withoutArrowSchema") else [plain(pq.read_table(p)) for p in req["inputs"]]
        if req.get("withoutArrowSchema") or any(not t.schema.remove_metadata().equals(tabs[0].schema.remove_metadata()) for t in tabs):
            tabs = [plain(read_without_arrow_schema(p, tmp)) for p in req["inputs"]]
    expected_types = [str(f.type) for f in tabs[0].schema]
    expected = [r for t in tabs for r in rows(t)]
    if req.get("positionDeletes"):
        assert len(req["inputs"]) == 1, "position deletes: one data file"
        gone = {r["pos"] for p in req["positionDeletes"] for r in pq.read_table(p).to_pylist()}
        expected = [r for i, r in enumerate(expected) if i not in gone]
    for d in req.get("equalityDeletes", []):
        gone = set(pq.read_table(d["path"]).column(d["column"]).to_pylist())
        at = tabs[0].column_names.index(d["column"])
        expected = [r for r in expected if r[at] not in gone]
    out = {"expectedRows": len(expected), "typesExpected": expected_types, "readError": None}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            read = (lambda p: read_without_arrow_schema(p, tmp)) if req.get("withoutArrowSchema") else pq.read_table
            got_tabs = [plain(read(p)) for p in req["outputs"]]
    except Exception as e:  # an output pyarrow cannot read
        out.update(readError=str(e)[:300], gotRows=None, typesGot=None)
        print(json.dumps(out))
        return
    got_types = None
    for t in got_tabs:
        ty = [str(f.type) for f in t.schema]
        got_types = ty if got_types in (None, ty) else "outputs disagree"
    got = [r for t in got_tabs for r in rows(t)]
    key = repr
    exp_s, got_s = sorted(expected, key=key), sorted(got, key=key)
    out.update(gotRows=len(got), typesGot=got_types,
               missing=[repr(r) for r in exp_s if r not in got_s][:3],
               extra=[repr(r) for r in got_s if r not in exp_s][:3],
               sameRows=exp_s == got_s)
    if req.get("sortBy"):
        ok = True
        for t in got_tabs:
            ks = t.column(req["sortBy"]).to_pylist()
            # ascending, nulls first (Iceberg's default null order)
            ok = ok and ks == sorted(ks, key=lambda k: (k is not None, k))
        out["sorted"] = ok
    if req.get("partitionBy"):
        out["onePartitionPerFile"] = all(len(set(t.column(req["partitionBy"]).to_pylist())) <= 1 for t in got_tabs)
    print(json.dumps(out, default=str))


main()
