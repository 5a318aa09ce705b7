#!/usr/bin/env python3
"""Writes the crafted inputs of __test__/crafted.spec.js (issue 50's classes, issue 41's two Thrift
cases): each malformed file is a valid file (written here by pyarrow, or the corpus' 5,000-level
schema) changed by exact edits of its footer, page headers or page bodies, through the compact
protocol codec in thrift_compact.py. The valid files (`base-*`, and the inputs of the valid-file
cases) are written beside them and are inputs of the tests too.

    python3 tests/crafted/gen.py          # rewrites tests/crafted/*.parquet

Every edit is checked here: the edited structure is parsed back and must say what the case
declares; the bases must read with pyarrow. The outputs are committed (a few hundred bytes to a few
KB each), so the tests do not depend on the pyarrow version installed.
"""

import base64
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import thrift_compact as tc  # noqa: E402
from pqfile import (CC_META, CMD_NUM_VALUES, DATA_PAGE, DICTIONARY_PAGE, FMD_KV, FMD_SCHEMA,  # noqa: E402
                    PH_COMPRESSED, PH_DATA, PH_DICT, PH_UNCOMPRESSED, RG_NUM_ROWS, PqFile)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
I32_MAX = (1 << 31) - 1


def out(name):
    return os.path.join(HERE, name)


def write_base(name, table, **kw):
    opts = dict(compression="none", write_statistics=True, data_page_version="1.0",
                write_page_index=False)
    opts.update(kw)
    pq.write_table(table, out(name), **opts)
    assert pq.read_table(out(name)).num_rows == table.num_rows
    return out(name)


def field(name, typ, fid=None, nullable=True):
    md = {b"PARQUET:field_id": str(fid).encode()} if fid is not None else None
    return pa.field(name, typ, nullable=nullable, metadata=md)


def varints(buf, pos, n):
    """The first `n` varints at `pos`: [(start, end, value)]."""
    res = []
    for _ in range(n):
        r = tc.Reader(buf, pos)
        v = r.varint()
        res.append((pos, r.pos, v))
        pos = r.pos
    return res


def compress(codec, data):
    return data if codec is None else pa.compress(data, codec=codec, asbytes=True)


def decompress(codec, data, size):
    return data if codec is None else pa.decompress(data, decompressed_size=size, codec=codec, asbytes=True)


def edit_page_body(f, rg, col, page, edit):
    """Decompresses `page`'s body, applies `edit(bytes) -> bytes`, compresses it again with the
    chunk's codec and writes it back with the header's two sizes updated."""
    codec = f.codec(rg, col)
    raw = decompress(codec, page.body, page.header.get(PH_UNCOMPRESSED))
    new = edit(raw)
    body = compress(codec, new)
    page.header.set(PH_UNCOMPRESSED, len(new))
    page.header.set(PH_COMPRESSED, len(body))
    f.replace_page(rg, col, page, page.header, body)


def first_page(f, col, kind, rg=0):
    return next(p for p in f.pages(rg, f.column_index(col)) if p.type == kind)


def reread_page(path, col, kind):
    f = PqFile.read(path)
    p = first_page(f, col, kind)
    return f, p, decompress(f.codec(0, f.column_index(col)), p.body, p.header.get(PH_UNCOMPRESSED))


# ---------------------------------------------------------------- 1: DELTA headers counting 2^40

def delta_count(name, encoding, codec):
    """A required string column encoded `encoding`, one data page v1 (no levels: the body starts
    with the values); the first DELTA_BINARY_PACKED header in it (prefix lengths for
    DELTA_BYTE_ARRAY, lengths for DELTA_LENGTH_BYTE_ARRAY) counts 2^40 values."""
    n = 20
    t = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array([f"value-{i:04d}" for i in range(n)])},
                 schema=pa.schema([field("id", pa.int64(), nullable=False), field("s", pa.string(), nullable=False)]))
    base = f"base-{name}.parquet"
    write_base(base, t, use_dictionary=False, column_encoding={"id": "PLAIN", "s": encoding},
               compression=codec or "none")
    f = PqFile.read(out(base))
    col = f.column_index("s")
    page = first_page(f, "s", DATA_PAGE)

    def edit(raw):
        # <block size> <miniblocks per block> <total value count> <first value>
        (_, _, block), (_, _, mini), (start, end, count) = varints(raw, 0, 3)
        assert (block, mini, count) == (128, 4, n), (block, mini, count)
        return raw[:start] + tc.varint(1 << 40) + raw[end:]

    edit_page_body(f, 0, col, page, edit)
    f.write(out(f"{name}.parquet"))
    _, _, raw = reread_page(out(f"{name}.parquet"), "s", DATA_PAGE)
    assert varints(raw, 0, 3)[2][2] == 1 << 40


# ---------------------------------------------------------------- 2, 3: dictionary page num_values

def dict_num_values(name, table, column, count):
    base = f"base-{name}.parquet"
    write_base(base, table, use_dictionary=True)
    f = PqFile.read(out(base))
    page = first_page(f, column, DICTIONARY_PAGE)
    page.header.get(PH_DICT).set(1, count)
    f.replace_page(0, f.column_index(column), page, page.header, page.body)
    f.write(out(f"{name}.parquet"))
    _, p, _ = reread_page(out(f"{name}.parquet"), column, DICTIONARY_PAGE)
    assert p.header.get(PH_DICT).get(1) == count


def schema_root_children(name):
    t = pa.table({"id": pa.array(range(8), pa.int64()), "s": pa.array([f"s{i}" for i in range(8)])})
    base = f"base-{name}.parquet"
    write_base(base, t)
    f = PqFile.read(out(base))
    root = f.meta.get(FMD_SCHEMA).items[0]
    assert root.get(5) == 2
    root.set(5, I32_MAX)
    f.write(out(f"{name}.parquet"))
    assert PqFile.read(out(f"{name}.parquet")).meta.get(FMD_SCHEMA).items[0].get(5) == I32_MAX


# ---------------------------------------------------------------- 4: a chunk's num_values of 2^40

def chunk_num_values(name):
    """Eight partition tuples (identity on `k`); the `v` column chunk declares 2^40 values."""
    n = 64
    t = pa.table({"k": pa.array([i % 8 for i in range(n)], pa.int32()), "v": pa.array(range(n), pa.int64())})
    base = f"base-{name}.parquet"
    write_base(base, t)
    f = PqFile.read(out(base))
    md = f.chunk(0, f.column_index("v")).get(CC_META)
    assert md.get(CMD_NUM_VALUES) == n
    md.set(CMD_NUM_VALUES, 1 << 40)
    f.write(out(f"{name}.parquet"))
    assert PqFile.read(out(f"{name}.parquet")).chunk(0, 1).get(CC_META).get(CMD_NUM_VALUES) == 1 << 40


# ---------------------------------------------------------------- 5, 6: a field repeated, another wire type

def repeat_rg_num_rows(src, dst, rows):
    """Appends to row group 0 a second `num_rows` (field 3), typed i32 instead of i64."""
    f = PqFile.read(src)
    rg = f.row_groups()[0]
    assert rg.field(RG_NUM_ROWS).ttype == tc.I64
    rg.fields.append(tc.Field(RG_NUM_ROWS, tc.I32, rows))
    f.write(dst)
    back = PqFile.read(dst).row_groups()[0]
    assert [(x.ttype, x.value) for x in back.fields if x.fid == RG_NUM_ROWS][1] == (tc.I32, rows)


def repeat_page_num_values(name):
    """A one-column file (one data page of 40 values); the page's DataPageHeader carries
    `num_values` (field 1) twice, the second typed i64 and saying 3."""
    n = 40
    t = pa.table({"id": pa.array(range(n), pa.int64())})
    base = f"base-{name}.parquet"
    write_base(base, t, use_dictionary=False)
    f = PqFile.read(out(base))
    page = first_page(f, "id", DATA_PAGE)
    dph = page.header.get(PH_DATA)
    assert dph.field(1).ttype == tc.I32 and dph.get(1) == n
    dph.fields.append(tc.Field(1, tc.I64, 3))
    f.replace_page(0, 0, page, page.header, page.body)
    f.write(out(f"{name}.parquet"))
    _, p, _ = reread_page(out(f"{name}.parquet"), "id", DATA_PAGE)
    assert [(x.ttype, x.value) for x in p.header.get(PH_DATA).fields if x.fid == 1] == [(tc.I32, n), (tc.I64, 3)]


def deletes():
    """A data file with field ids (id: 1, s: 2), a position-delete file deleting rows 0, 3, 5 of
    it (at location DATA_LOCATION), an equality-delete file deleting ids 10, 11, 12; and each
    delete file with its row group's num_rows repeated as an i32 0 (read so, the delete file is
    empty)."""
    n = 20
    data = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array([f"row{i}" for i in range(n)])},
                    schema=pa.schema([field("id", pa.int64(), 1, False), field("s", pa.string(), 2)]))
    write_base("del-data.parquet", data)
    loc = "s3://crafted/table/data/del-data.parquet"
    pos = pa.table({"file_path": [loc] * 3, "pos": pa.array([0, 3, 5], pa.int64())},
                   schema=pa.schema([field("file_path", pa.string(), 2147483546, False),
                                     field("pos", pa.int64(), 2147483545, False)]))
    write_base("base-posdel.parquet", pos)
    repeat_rg_num_rows(out("base-posdel.parquet"), out("posdel-rows-repeated.parquet"), 0)
    eq = pa.table({"id": pa.array([10, 11, 12], pa.int64())}, schema=pa.schema([field("id", pa.int64(), 1, False)]))
    write_base("base-eqdel.parquet", eq)
    repeat_rg_num_rows(out("base-eqdel.parquet"), out("eqdel-rows-repeated.parquet"), 0)


# ---------------------------------------------------------------- 7: a schema element's field repeated

def schema_repeat(name, fid, ttype, value):
    """`v` (INT64) gets its SchemaElement field `fid` a second time, typed `ttype`."""
    n = 16
    t = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array([i * 1000 + 7 for i in range(n)], pa.int64())})
    base = f"base-{name}.parquet"
    write_base(base, t)
    f = PqFile.read(out(base))
    el = next(e for e in f.meta.get(FMD_SCHEMA).items if e.get(4) == b"v")
    el.fields.append(tc.Field(fid, ttype, value))
    f.write(out(f"{name}.parquet"))
    back = next(e for e in PqFile.read(out(f"{name}.parquet")).meta.get(FMD_SCHEMA).items
                if any(x.fid == 4 and x.value == b"v" for x in e.fields))
    assert len([x for x in back.fields if x.fid == fid]) == 2


# ---------------------------------------------------------------- 8: ARROW:schema int64 vs duration

def arrow_schema_disagree():
    n = 10
    ints = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array([i * 1_000_000 for i in range(n)], pa.int64())})
    durs = pa.table({"id": pa.array(range(n, 2 * n), pa.int64()),
                     "v": pa.array([i * 1_000_000 for i in range(n, 2 * n)], pa.duration("us"))})
    write_base("arrow-int64.parquet", ints)
    write_base("arrow-duration.parquet", durs)
    # identical Parquet columns: only ARROW:schema tells them apart
    a, b = pq.read_schema(out("arrow-int64.parquet")), pq.read_schema(out("arrow-duration.parquet"))
    assert a.field("v").type == pa.int64() and b.field("v").type == pa.duration("us")
    sa, sb = pq.ParquetFile(out("arrow-int64.parquet")).schema, pq.ParquetFile(out("arrow-duration.parquet")).schema
    assert sa.equals(sb), (sa, sb)


# ---------------------------------------------------------------- 9: a corrupt ARROW:schema value

def arrow_schema_corrupt():
    n = 12
    t = lambda lo: pa.table({"id": pa.array(range(lo, lo + n), pa.int64()), "s": pa.array([f"s{i}" for i in range(lo, lo + n)])})
    write_base("arrowmeta-good.parquet", t(0))
    write_base("base-arrowmeta.parquet", t(n))
    for name, value in (("arrowmeta-not-base64.parquet", b"this is not base64 at all!"),
                        ("arrowmeta-not-ipc.parquet", base64.b64encode(b"\xff\xff\xff\xff" + b"\x10\x00\x00\x00" + b"\x00" * 16))):
        f = PqFile.read(out("base-arrowmeta.parquet"))
        kv = [e for e in f.meta.get(FMD_KV).items if e.get(1) == b"ARROW:schema"]
        assert len(kv) == 1
        kv[0].set(2, value)
        f.write(out(name))
        assert [e.get(2) for e in PqFile.read(out(name)).meta.get(FMD_KV).items if e.get(1) == b"ARROW:schema"] == [value]


# ---------------------------------------------------------------- 10: dictionary strings with nulls (valid)

def dict_nulls():
    """Three files of dictionary-encoded string columns with nulls: `k` (a sort key, a fifth of
    it null), `s` (null in runs of 100 rows), `p` (null in every row of day 0), `d` (an Arrow
    dictionary column); `day` is a partition column. Valid files: every batch or sorted chunk
    that holds only nulls of such a column has a dictionary of no values."""
    for i in range(3):
        n = 400
        rows = range(i * n, (i + 1) * n)
        k = [None if r % 5 == 0 else f"key-{(r * 7) % 23:02d}" for r in rows]
        s = [None if (r // 100) % 2 == 0 else f"str-{(r * 13) % 41:03d}" for r in rows]
        p = [None if r % 3 == 0 else f"part-{r % 11}" for r in rows]
        d = [None if r % 4 == 1 else f"cat-{r % 6}" for r in rows]
        t = pa.table({"id": pa.array(rows, pa.int64()), "day": pa.array([r % 3 for r in rows], pa.int32()),
                      "k": pa.array(k, pa.string()), "s": pa.array(s, pa.string()), "p": pa.array(p, pa.string()),
                      "d": pa.array(d, pa.string()).dictionary_encode()})
        write_base(f"dictnull-{i}.parquet", t, use_dictionary=True, compression="snappy")
        f = PqFile.read(out(f"dictnull-{i}.parquet"))
        for c in ("k", "s", "p", "d"):
            assert any(pg.type == DICTIONARY_PAGE for pg in f.pages(0, f.column_index(c))), c


# ---------------------------------------------------------------- 11: a dictionary page repeating a value (valid)

def dict_repeat():
    """An Arrow dictionary string column `s` whose dictionary page (plain, uncompressed) names its
    fifth value a second time: the format does not forbid it, and the indices still mean
    positions. Found by the whole-call fuzzer (seed 50, execution 12243): parquet-rs and DuckDB
    read by position, pyarrow's dictionary reader keeps one entry per distinct value so every
    later index names the next value; without the file's ARROW:schema it reads by position too."""
    n = 120
    words = [f"w{i:02d}" for i in range(12)]
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "s": pa.array([words[(i * 5) % 12] for i in range(n)]).dictionary_encode()})
    write_base("dictrepeat.parquet", t, use_dictionary=True)
    f = PqFile.read(out("dictrepeat.parquet"))
    col = f.column_index("s")
    page = first_page(f, "s", DICTIONARY_PAGE)

    def edit(raw):
        vals, pos = [], 0
        while pos < len(raw):
            k = int.from_bytes(raw[pos:pos + 4], "little")
            vals.append(raw[pos + 4:pos + 4 + k])
            pos += 4 + k
        assert len(vals) == 12 and len(set(vals)) == 12
        vals[4] = vals[2]
        return b"".join(len(v).to_bytes(4, "little") + v for v in vals)

    edit_page_body(f, 0, col, page, edit)
    f.write(out("dictrepeat.parquet"))
    # the two readings differ, and the positional one names the repeated value
    arrow = pq.read_table(out("dictrepeat.parquet")).column("s").chunks[0]
    f = PqFile.read(out("dictrepeat.parquet"))
    f.meta.get(FMD_KV).items = [e for e in f.meta.get(FMD_KV).items if e.get(1) != b"ARROW:schema"]
    f.write(out("dictrepeat-plain.tmp"))
    plain = pq.read_table(out("dictrepeat-plain.tmp")).column("s").to_pylist()
    os.remove(out("dictrepeat-plain.tmp"))
    assert len(arrow.dictionary) == 11 and max(arrow.indices.to_pylist()) == 11  # one entry short
    values = t.column("s").cast(pa.string()).to_pylist()
    order = list(dict.fromkeys(values))  # pyarrow's dictionary: first appearance
    assert plain == [order[2] if v == order[4] else v for v in values]


# ---------------------------------------------------------------- issue 41: the two Thrift cases

def page_uncompressed_twice():
    """A snappy data page whose header carries `uncompressed_page_size` (field 2) twice, the
    second typed i64 and saying i32::MAX."""
    n = 200
    t = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array([f"payload-{i * 7919 % 100003:06d}" for i in range(n)])})
    base = "base-uncompressed-twice.parquet"
    write_base(base, t, use_dictionary=False, compression="snappy")
    f = PqFile.read(out(base))
    col = f.column_index("s")
    page = first_page(f, "s", DATA_PAGE)
    assert page.header.field(PH_UNCOMPRESSED).ttype == tc.I32
    # field ids must be written in order for the short form; the repeat goes right after field 3
    fields = page.header.fields
    at = next(i for i, x in enumerate(fields) if x.fid == PH_COMPRESSED) + 1
    fields.insert(at, tc.Field(PH_UNCOMPRESSED, tc.I64, I32_MAX))
    f.replace_page(0, col, page, page.header, page.body)
    f.write(out("page-uncompressed-twice.parquet"))
    _, p, _ = None, first_page(PqFile.read(out("page-uncompressed-twice.parquet")), "s", DATA_PAGE), None
    assert [(x.ttype, x.value) for x in p.header.fields if x.fid == PH_UNCOMPRESSED][1] == (tc.I64, I32_MAX)


def schema_as_set():
    """tests/corpus/schema-5000-levels.parquet with one byte changed: FileMetaData's `schema`
    (field 2) typed as a set instead of a list."""
    src = os.path.join(ROOT, "tests", "corpus", "schema-5000-levels.parquet")
    f = PqFile.read(src)
    assert f.meta.field(FMD_SCHEMA).ttype == tc.LIST
    before = f.to_bytes()
    f.meta.field(FMD_SCHEMA).ttype = tc.SET
    f.meta.field(FMD_SCHEMA).value.ttype = tc.SET
    after = f.to_bytes()
    diff = [i for i in range(len(before)) if before[i] != after[i]]
    assert len(before) == len(after) and len(diff) == 1, diff
    assert before[diff[0]] & 0x0F == tc.LIST and after[diff[0]] & 0x0F == tc.SET
    with open(out("schema-5000-levels-as-set.parquet"), "wb") as w:
        w.write(after)


def main():
    delta_count("delta-byte-array-2p40", "DELTA_BYTE_ARRAY", None)
    delta_count("delta-length-byte-array-2p40", "DELTA_LENGTH_BYTE_ARRAY", None)
    delta_count("delta-byte-array-2p40-zstd", "DELTA_BYTE_ARRAY", "zstd")
    strings = pa.table({"s": pa.array([f"word-{i % 5}" for i in range(30)])})
    dict_num_values("dict-string-i32max", strings, "s", I32_MAX)
    schema_root_children("schema-root-i32max-children")
    ints = pa.table({"v": pa.array([i % 7 for i in range(30)], pa.int32())})
    dict_num_values("dict-int32-2p30", ints, "v", 1 << 30)
    chunk_num_values("chunk-num-values-2p40")
    t = pa.table({"id": pa.array(range(24), pa.int64()), "s": pa.array([f"r{i}" for i in range(24)])})
    write_base("base-rg-rows-repeated.parquet", t)
    repeat_rg_num_rows(out("base-rg-rows-repeated.parquet"), out("rg-rows-repeated.parquet"), 0)
    repeat_page_num_values("page-num-values-repeated")
    deletes()
    schema_repeat("schema-type-repeated", 1, tc.I64, 0)  # BOOLEAN, under i64 instead of i32
    schema_repeat("schema-name-repeated", 4, tc.BINARY, b"")
    arrow_schema_disagree()
    arrow_schema_corrupt()
    dict_nulls()
    dict_repeat()
    page_uncompressed_twice()
    schema_as_set()


if __name__ == "__main__":
    main()
