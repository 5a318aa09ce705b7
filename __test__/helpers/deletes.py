"""Python side of deletes.spec.js: Iceberg delete files and the rows they leave, from references
that are not gencompact. One JSON request on stdin ({"op": ..., ...}), one JSON answer on stdout.

ops:
  build   {dir, seed}
      A format-v2 table built by pyiceberg (SQL catalog on SQLite under dir/catalog.db, warehouse
      file://dir/wh): five appends, one data file each, several row groups each (row-group limit
      100), duplicate and null row ids. Its data files are local paths whose table location is a
      file:// URL, as in a real table. Then, written here with pyarrow / pyroaring:
        P1, P2     position-delete Parquet files (file_path 2147483546, pos 2147483545, sorted by
                   both, several row groups): each covers several data files, by URL location and
                   by plain path, overlapping each other, with positions at and past a file's row count;
        PF         a Puffin file with the deletion-vector-v1 blobs of three data files (by URL),
        PF_PLAIN   the same for two data files referenced by their plain paths;
        E1..E4     equality-delete Parquet files (E2 with a null key and an extra unlisted column,
                   E3 with a renamed column carrying the field id, E4 an int32 column for a long).
      Each is proven well-formed by pyiceberg's own readers: the DV blobs through
      pyiceberg.table.deletion_vector (plus the blob's CRC-32 checked here), the position deletes
      by committing them (a delete manifest: ManifestWriterV2 with content deletes, in a new
      snapshot) to the table, and to a second table registering the same data files at their
      plain paths, whose scan().to_arrow() applies them; the same for the Puffin files (pyiceberg's
      scan applies a Puffin delete file by each blob's referenced-data-file even in a v2 table).
      Those scans are returned as `pyiceberg.{positionUrl, positionPlain, dvUrl, dvPlain,
      positionAndDvUrl}` (row digests).
      Answer: {dataFiles: [{path, location, rows, rowGroups}], deletes: {P1: {path}, ...,
               PF: {path, blobs: [{data, offset, length, referencedDataFile, cardinality}]}},
               intended: {...positions per source and data file}, pyiceberg: {...}}
  expect  {scenarios: {name: {inputs: [{path, location?, deletes: [...]}] (compactGeneration's
           files, as given to it), dedupeBy?}}}
      What the Iceberg spec's rules leave, computed by DuckDB: position deletes anti-joined on
      (file_path = location, pos = file_row_number); DV positions as pyiceberg's Puffin reader
      decodes the blob at (offset, length); equality deletes anti-joined with IS NOT DISTINCT FROM
      on the columns carrying the listed field ids in each file; then the first occurrence of each
      non-null dedupe key in files order, then row order.
      Answer per scenario: {rowsRead, rowsDeleted, duplicatesDropped, rows, digest, lines}
  check   {warehouse, outputs: [{path, dataFile}], inputPath, partitionBy: [{column, name}],
           sortBy: [{column, descending?, nullsFirst?}]}
      The outputs as pyarrow reads them (row digest; per file its partition tuples, sortedness,
      schema and field ids, and the min / max of each primitive column), and a
      NEW pyiceberg table (format v2) whose single fast-append snapshot holds DataFiles built only
      from the `dataFile` records compactGeneration returned: its manifest entries and its scan.
  selfcheck {dir}
      build, then DuckDB's expectations against every pyiceberg scan of `build` (they must agree).
  crafted {data, puffin, offset, length, outputs}
      A crafted deletion vector (tests/corpus-deletes) as pyroaring decodes it (or refuses it),
      the data file's surviving rows by pyarrow, and the outputs' rows by pyarrow.
  bigPositionDeletes {path, location, rows}
      A large, small-on-disk position-delete file (for the abort-while-loading test).

Row digest: every column of a row as a JSON array (timestamps as µs, dates as days), lines sorted,
sha256 of the lines joined by newlines. Digests compare row multisets.
"""

import datetime
import hashlib
import json
import os
import random
import struct
import sys
import zlib

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

FILE_PATH_ID = 2147483546  # Iceberg spec: reserved field ids of position-delete files
POS_ID = 2147483545
DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
PUFFIN_MAGIC = b"PFA1"
SIZES = [730, 520, 610, 260, 180]
DATES = [datetime.date(2026, 11, 28), datetime.date(2026, 11, 29), datetime.date(2026, 11, 30)]
COLUMNS = ["_hyp_cache_row_id", "session_id", "date", "ts", "n", "attrs"]
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def iceberg_schema():
    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, LongType, NestedField, StringType, TimestamptzType
    return Schema(
        NestedField(1, "_hyp_cache_row_id", StringType(), required=False),
        NestedField(2, "session_id", StringType(), required=False),
        NestedField(3, "date", DateType(), required=False),
        NestedField(4, "ts", TimestamptzType(), required=False),
        NestedField(5, "n", LongType(), required=False),
        NestedField(6, "attrs", StringType(), required=False),
    )


def field(name, typ, fid, nullable=True):
    return pa.field(name, typ, nullable=nullable, metadata={b"PARQUET:field_id": str(fid).encode()})


def catalog(d):
    from pyiceberg.catalog.sql import SqlCatalog
    return SqlCatalog("t", uri=f"sqlite:///{os.path.join(d, 'catalog.db')}", warehouse=f"file://{os.path.join(d, 'wh')}")


def local(location):
    assert location.startswith("file://"), location
    return location[len("file://"):]


# ---------------------------------------------------------------- row digests

def canonical_lines(table):
    """One JSON line per row over COLUMNS (timestamps µs since the epoch, dates days), sorted."""
    cols = []
    for c in COLUMNS:
        col = table.column(c)
        if pa.types.is_timestamp(col.type):
            col = pc.cast(pc.cast(col, pa.timestamp("us", tz="UTC")), pa.int64())
        elif pa.types.is_date(col.type):
            col = pc.cast(pc.cast(col, pa.date32()), pa.int32())
        cols.append(col.to_pylist())
    return sorted(json.dumps(list(row), separators=(",", ":")) for row in zip(*cols))


def digest_of(table):
    lines = canonical_lines(table)
    return {"rows": len(lines), "digest": hashlib.sha256("\n".join(lines).encode()).hexdigest(), "lines": lines}


# ---------------------------------------------------------------- Puffin / deletion vectors

def dv_blob(positions):
    """deletion-vector-v1 (Iceberg Puffin spec): 4-byte big-endian length of magic + bitmap, the
    magic, the portable 64-bit Roaring bitmap, big-endian CRC-32 of magic + bitmap."""
    from pyroaring import BitMap64
    body = DV_MAGIC + BitMap64(positions).serialize()
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def write_puffin(path, dvs):
    """dvs: [(referenced_data_file, positions)] -> blob metadata written in the footer."""
    out = bytearray(PUFFIN_MAGIC)
    blobs = []
    for ref, positions in dvs:
        b = dv_blob(positions)
        blobs.append({"type": "deletion-vector-v1", "fields": [POS_ID], "snapshot-id": -1, "sequence-number": -1,
                      "offset": len(out), "length": len(b),
                      "properties": {"referenced-data-file": ref, "cardinality": str(len(set(positions)))}})
        out += b
    payload = json.dumps({"blobs": blobs, "properties": {"created-by": "gencompact deletes.spec"}}).encode()
    # footer: magic, payload, payload size (4-byte little-endian), flags (4 bytes, uncompressed), magic
    out += PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + bytes(4) + PUFFIN_MAGIC
    with open(path, "wb") as f:
        f.write(out)
    return blobs


def pyiceberg_dvs(path):
    """The puffin file as pyiceberg reads it: [(blob metadata, referenced file, sorted positions)],
    each blob's framing (length, magic, CRC) checked here too (pyiceberg's reader skips those)."""
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile
    with open(path, "rb") as f:
        data = f.read()
    pf = PuffinFile(data)
    dvs = deletion_vectors_from_puffin_file(pf)
    out = []
    for blob, dv in zip(pf.footer.blobs, dvs):
        raw = data[blob.offset:blob.offset + blob.length]
        (n,) = struct.unpack(">I", raw[:4])
        assert len(raw) == n + 8, f"blob length {len(raw)} != 4 + {n} + 4"
        assert raw[4:8] == DV_MAGIC, "bad DV magic"
        assert struct.unpack(">I", raw[4 + n:8 + n])[0] == zlib.crc32(raw[4:4 + n]) & 0xFFFFFFFF, "bad DV CRC"
        out.append((blob, dv.referenced_data_file, sorted(dv.to_vector().to_pylist())))
    return out


# ---------------------------------------------------------------- delete files

def write_position_deletes(path, rows):
    """rows: [(file_path, pos)], written sorted by (file_path, pos) as the spec requires."""
    rows = sorted(rows)
    schema = pa.schema([field("file_path", pa.string(), FILE_PATH_ID, False), field("pos", pa.int64(), POS_ID, False)])
    t = pa.table({"file_path": [r[0] for r in rows], "pos": [r[1] for r in rows]}, schema=schema)
    pq.write_table(t, path, row_group_size=16, compression="snappy")
    return len(rows)


def write_equality_deletes(path, columns):
    """columns: [(name, arrow type, field id, values)]."""
    schema = pa.schema([field(n, t, fid) for n, t, fid, _ in columns])
    t = pa.table({n: pa.array(v, type=ty) for n, ty, _, v in columns}, schema=schema)
    pq.write_table(t, path, row_group_size=4, compression="zstd")
    return t.num_rows


def delete_manifest_writer():
    from pyiceberg.manifest import ManifestContent, ManifestWriterV2

    class DeleteManifestWriterV2(ManifestWriterV2):
        """ManifestWriterV2 writes content `data` only; a delete manifest is the same Avro file with
        the manifest content (metadata key and manifest-list field) set to deletes."""

        def content(self):
            return ManifestContent.DELETES

        @property
        def _meta(self):
            return {**super()._meta, "content": "deletes"}

    return DeleteManifestWriterV2


def commit_deletes(tbl, files):
    """One new snapshot whose manifest list keeps the data manifests and adds a delete manifest
    holding the position-delete files `files` ([(path, 'PARQUET' | 'PUFFIN')])."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles
    from pyiceberg.typedef import Record
    Writer = delete_manifest_writer()

    class AddDeletes(_FastAppendFiles):
        def new_manifest_writer(self, spec):
            return Writer(spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression)

    with tbl.transaction() as tx:
        with AddDeletes(operation=Operation.OVERWRITE, transaction=tx, io=tx._table.io) as op:
            for p, fmt in files:
                rows = pq.read_metadata(p).num_rows if fmt == "PARQUET" else sum(len(ps) for _, _, ps in pyiceberg_dvs(p))
                df = DataFile.from_args(
                    _table_format_version=2, content=DataFileContent.POSITION_DELETES, file_path=p,
                    file_format=FileFormat(fmt), partition=Record(), record_count=rows,
                    file_size_in_bytes=os.path.getsize(p), column_sizes={}, value_counts={}, null_value_counts={},
                    nan_value_counts={}, lower_bounds={}, upper_bounds={}, key_metadata=None, split_offsets=None,
                    equality_ids=None, sort_order_id=None)
                df.spec_id = tbl.spec().spec_id
                op.append_data_file(df)


# ---------------------------------------------------------------- build

def gen_rows(rng, size, seen):
    ids, sess, dates, ts, ns, attrs = [], [], [], [], [], []
    for _ in range(size):
        u = rng.random()
        if u < 0.05:
            rid = None
        elif u < 0.22 and seen:
            rid = rng.choice(seen)
        else:
            rid = f"row-{len(seen):06d}"
            seen.append(rid)
        ids.append(rid)
        sess.append(None if rng.random() < 0.06 else f"s{rng.randrange(6)}")
        d = None if rng.random() < 0.02 else rng.choice(DATES)
        dates.append(d)
        base = datetime.datetime.combine(d or DATES[0], datetime.time(), tzinfo=datetime.timezone.utc)
        ts.append(base + datetime.timedelta(microseconds=rng.randrange(86_400_000_000)))
        v = rng.random()
        ns.append(None if v < 0.05 else rng.randint(-2**62, 2**62) if v < 0.15 else rng.randint(-400, 400))
        attrs.append(None if rng.random() < 0.05 else json.dumps({"k": rng.choice("abc"), "v": rng.randrange(12)}))
    return {"_hyp_cache_row_id": ids, "session_id": sess, "date": dates, "ts": ts, "n": ns, "attrs": attrs}


def build(req):
    from pyiceberg.manifest import DataFile
    d = req["dir"]
    rng = random.Random(req["seed"])
    os.makedirs(os.path.join(d, "wh"), exist_ok=True)
    dd = os.path.join(d, "deletes")
    os.makedirs(dd, exist_ok=True)
    cat = catalog(d)
    cat.create_namespace("gen")
    schema = iceberg_schema()
    tbl = cat.create_table("gen.url", schema=schema, properties={"format-version": "2", "write.parquet.row-group-limit": "100",
                                                                 "write.parquet.compression-codec": "zstd"})
    arrow_schema = tbl.schema().as_arrow()

    # -- data: one append (one data file) per file, file order = append order
    seen, columns, data = [], [], []
    for size in SIZES:
        cols = gen_rows(rng, size, seen)
        before = {t.file.file_path for t in tbl.scan().plan_files()}
        tbl.append(pa.table(cols, schema=arrow_schema))
        added = [t.file for t in tbl.scan().plan_files() if t.file.file_path not in before]
        assert len(added) == 1, added
        loc = added[0].file_path
        md = pq.read_metadata(local(loc))
        assert md.num_rows == size and md.num_row_groups == (size + 99) // 100, (md.num_rows, md.num_row_groups)
        data.append({"path": local(loc), "location": loc, "rows": size, "rowGroups": md.num_row_groups})
        columns.append(cols)
    url = [f["location"] for f in data]
    plain = [f["path"] for f in data]
    for f in data:
        fids = {fl.name: int(fl.metadata[b"PARQUET:field_id"]) for fl in pq.read_schema(f["path"])}
        assert fids == {n: i + 1 for i, n in enumerate(COLUMNS)}, fids

    # -- position deletes: (file index, by location?, positions); past-count positions included
    P1 = [(0, True, [99, 100, 101, 199, 200, *range(300, 420), 729, 730, 5000]),
          (1, True, [0, 1, *range(250, 261), 519]),
          (2, True, [5, 6, 7, 600, 609, 10**6]),
          (3, False, [1, 2, 3, 259, 260])]
    P2 = [(1, True, [*range(255, 266), *range(300, 311)]),
          (3, True, list(range(10, 21))),
          (0, False, [*range(50, 61), 99]),
          (4, False, [0, 179])]
    deletes, intended = {}, {}
    for name, spec in (("P1", P1), ("P2", P2)):
        p = os.path.join(dd, f"{name}.parquet")
        rows = [((url if by_url else plain)[i], pos) for i, by_url, ps in spec for pos in ps]
        write_position_deletes(p, rows)
        deletes[name] = {"path": p, "rows": len(rows)}
        intended[name] = [{"data": i, "byLocation": by_url, "positions": ps} for i, by_url, ps in spec]

    # -- deletion vectors (blob order differs from data order); D4 loses every row
    PF = [(2, [*range(0, 100), 150, 609]),
          (0, [0, 1, 2, 99, 100, *range(350, 361), *range(600, 651)]),
          (4, list(range(0, 180)))]
    PF_PLAIN = [(1, [10, 11, 519]), (3, [2, 3, *range(100, 200)])]
    for name, spec, refs in (("PF", PF, url), ("PF_PLAIN", PF_PLAIN, plain)):
        p = os.path.join(dd, f"{name}.puffin")
        blobs = write_puffin(p, [(refs[i], ps) for i, ps in spec])
        decoded = pyiceberg_dvs(p)
        out = []
        for (i, ps), b, (pb, ref, got) in zip(spec, blobs, decoded):
            assert (pb.offset, pb.length) == (b["offset"], b["length"])
            assert ref == refs[i], (ref, refs[i])
            assert got == sorted(set(ps)), f"pyiceberg decodes {name} blob of file {i} differently"
            assert int(pb.properties["cardinality"]) == len(got)
            out.append({"data": i, "offset": b["offset"], "length": b["length"], "referencedDataFile": ref, "cardinality": len(got)})
        deletes[name] = {"path": p, "blobs": out, "size": os.path.getsize(p)}
        intended[name] = [{"data": i, "positions": ps} for i, ps in spec]

    # -- equality deletes, with values taken from the data
    def at(i, c, pos):
        return columns[i][c][pos]
    dup_ids = [r for r in seen if sum(col["_hyp_cache_row_id"].count(r) for col in columns[:3]) >= 2][:4]
    e1_ids = [at(0, "_hyp_cache_row_id", 305), at(0, "_hyp_cache_row_id", 360), at(0, "_hyp_cache_row_id", 5),
              at(3, "_hyp_cache_row_id", 30), *dup_ids, "row-absent"]
    e1_ids = [x for x in dict.fromkeys(e1_ids) if x is not None]
    e2 = [(None, DATES[0]), ("s3", DATES[1]), ("s9", DATES[0])]
    attrs_vals = [v for v in dict.fromkeys(columns[1]["attrs"]) if v is not None][:2]
    small_ns = [v for v in dict.fromkeys(columns[2]["n"]) if v is not None and -400 <= v <= 400][:3]
    E = {
        "E1": ([1], [("_hyp_cache_row_id", pa.string(), 1, e1_ids)]),
        "E2": ([2, 3], [("session_id", pa.string(), 2, [s for s, _ in e2]), ("date", pa.date32(), 3, [x for _, x in e2]),
                        ("n", pa.int64(), 5, [rng.randint(10**12, 10**13) for _ in e2])]),  # n: not listed, ignored
        "E3": ([6], [("payload", pa.string(), 6, [*attrs_vals, None])]),                  # renamed: matched by field id
        "E4": ([5], [("n", pa.int32(), 5, small_ns)]),                                    # int -> long widening
    }
    for name, (fids, cols) in E.items():
        p = os.path.join(dd, f"{name}.parquet")
        write_equality_deletes(p, cols)
        back = pq.read_table(p)
        assert [int(fl.metadata[b"PARQUET:field_id"]) for fl in back.schema] == [c[2] for c in cols]
        deletes[name] = {"path": p, "fieldIds": fids, "rows": back.num_rows}
        intended[name] = {c[0]: back.column(c[0]).to_pylist() for c in cols}
    assert any(v is None for v in intended["E2"]["session_id"]) and any(v is None for v in intended["E3"]["payload"])

    # -- pyiceberg applies the deletes: fresh tables registering the same data files (by their URL
    #    locations, or by their plain paths) plus one snapshot adding the delete files. Deletion
    #    vectors belong to format v3, which pyiceberg 0.12 cannot write; its scan still applies a
    #    Puffin delete file committed to a v2 table (every blob, by referenced-data-file), so the
    #    Puffin files are checked that way too.
    entries = {t.file.file_path: t.file for t in tbl.scan().plan_files()}
    full_before = digest_of(tbl.scan().to_arrow())
    assert full_before["rows"] == sum(SIZES)
    pos = [(deletes["P1"]["path"], "PARQUET"), (deletes["P2"]["path"], "PARQUET")]
    oracles = {"positionUrl": (True, pos), "positionPlain": (False, pos),
               "dvUrl": (True, [(deletes["PF"]["path"], "PUFFIN")]), "dvPlain": (False, [(deletes["PF_PLAIN"]["path"], "PUFFIN")]),
               "positionAndDvUrl": (True, pos + [(deletes["PF"]["path"], "PUFFIN")])}
    res = {}
    for key, (by_url, dels) in oracles.items():
        t = cat.create_table(f"gen.{key}", schema=schema, properties={"format-version": "2"})
        with t.transaction() as tx:
            with tx.update_snapshot().fast_append() as fa:
                for f in data:
                    src = entries[f["location"]]
                    df = DataFile.from_args(
                        _table_format_version=2, content=src.content, file_path=f["location"] if by_url else f["path"],
                        file_format=src.file_format, partition=src.partition, record_count=src.record_count,
                        file_size_in_bytes=src.file_size_in_bytes, column_sizes=src.column_sizes, value_counts=src.value_counts,
                        null_value_counts=src.null_value_counts, nan_value_counts=src.nan_value_counts,
                        lower_bounds=src.lower_bounds, upper_bounds=src.upper_bounds, key_metadata=None,
                        split_offsets=src.split_offsets, equality_ids=None, sort_order_id=src.sort_order_id)
                    df.spec_id = t.spec().spec_id
                    fa.append_data_file(df)
        commit_deletes(t, dels)
        t = catalog(d).load_table(t.name())  # what was persisted
        tasks = list(t.scan().plan_files())
        want = sorted(p for p, _ in dels)
        assert len(tasks) == len(data) and all(sorted(x.file_path for x in task.delete_files) == want for task in tasks)
        res[key] = dict(digest_of(t.scan().to_arrow()),
                        manifests=sorted(int(m.content) for m in t.current_snapshot().manifests(t.io)),
                        summary=dict(t.current_snapshot().summary.additional_properties))
    return {"dataFiles": data, "deletes": deletes, "intended": intended, "pyiceberg": res, "allRows": full_before}


# ---------------------------------------------------------------- expect (DuckDB)

def parquet_field_ids(path):
    """{field id: column name} of a Parquet file's top-level fields (empty when it carries none)."""
    out = {}
    for fl in pq.read_schema(path):
        fid = (fl.metadata or {}).get(b"PARQUET:field_id")
        if fid is not None:
            out[int(fid)] = fl.name
    return out


def q(name):
    return '"' + name.replace('"', '""') + '"'


def s(v):
    return "'" + str(v).replace("'", "''") + "'"


def expect_one(con, sc):
    def run(sql, params=None):
        return con.execute(sql, params or []).fetchall()
    inputs = sc["inputs"]
    norm = [{"path": x, "deletes": []} if isinstance(x, str) else x for x in inputs]
    for t in ("inputs", "data", "del", "live"):
        run(f"DROP TABLE IF EXISTS {t}")
    run("CREATE TABLE inputs (idx INTEGER, fname VARCHAR, location VARCHAR)")
    for i, f in enumerate(norm):
        run("INSERT INTO inputs VALUES (?, ?, ?)", [i, f["path"], f.get("location") or f["path"]])
    paths = "[" + ", ".join(s(f["path"]) for f in norm) + "]"
    run(f"""CREATE TABLE data AS
        SELECT r.* EXCLUDE (filename, file_row_number), i.idx AS _idx, r.file_row_number AS _pos
        FROM read_parquet({paths}, filename = true, file_row_number = true) r JOIN inputs i ON r.filename = i.fname""")
    run("CREATE TABLE del (idx INTEGER, pos BIGINT, src VARCHAR)")
    dv_cache = {}
    for i, f in enumerate(norm):
        loc = f.get("location") or f["path"]
        data_ids = parquet_field_ids(f["path"])
        for d in f.get("deletes") or []:
            if d["kind"] == "position":
                # spec: a row applies where file_path equals the data file's location (as strings)
                run(f"INSERT INTO del SELECT {i}, pos, {s(d['path'])} FROM read_parquet({s(d['path'])}) WHERE file_path = ?", [loc])
            elif d["kind"] == "deletion-vector":
                if d["path"] not in dv_cache:
                    dv_cache[d["path"]] = pyiceberg_dvs(d["path"])
                hit = [(ref, ps) for b, ref, ps in dv_cache[d["path"]] if (b.offset, b.length) == (d["offset"], d["length"])]
                assert len(hit) == 1, f"no blob at {d['offset']}/{d['length']} in {d['path']}"
                ref, ps = hit[0]
                assert ref == loc, f"blob references {ref}, input location is {loc}"
                run(f"INSERT INTO del SELECT {i}, unnest(?::BIGINT[]), {s(d['path'])}", [ps])
            elif d["kind"] == "equality":
                del_ids = parquet_field_ids(d["path"])
                on = []
                for fid in d["fieldIds"]:
                    dc = data_ids[fid] if data_ids else None
                    ec = del_ids[fid] if del_ids else dc
                    on.append(f"d.{q(dc)} IS NOT DISTINCT FROM e.{q(ec)}")
                run(f"""INSERT INTO del SELECT DISTINCT d._idx, d._pos, {s(d['path'])}
                    FROM data d JOIN read_parquet({s(d['path'])}) e ON {' AND '.join(on)} WHERE d._idx = {i}""")
            else:
                raise ValueError(d["kind"])
    rows_read = run("SELECT count(*) FROM data")[0][0]
    run("""CREATE OR REPLACE TABLE live AS SELECT * FROM data d
                   WHERE NOT EXISTS (SELECT 1 FROM del WHERE del.idx = d._idx AND del.pos = d._pos)""")
    live = run("SELECT count(*) FROM live")[0][0]
    key = sc.get("dedupeBy")
    if key:
        kept_sql = f"""SELECT * EXCLUDE (rn_) FROM (SELECT *, row_number() OVER (PARTITION BY {q(key)} ORDER BY _idx, _pos) AS rn_ FROM live)
                       WHERE {q(key)} IS NULL OR rn_ = 1"""
    else:
        kept_sql = "SELECT * FROM live"
    kept = con.sql(f"SELECT {', '.join(q(c) for c in COLUMNS)} FROM ({kept_sql})").to_arrow_table()
    per_source = dict(run("SELECT src, count(DISTINCT (idx, pos)) FROM del d JOIN data ON d.idx = data._idx AND d.pos = data._pos GROUP BY src"))
    dg = digest_of(kept)
    return dict(dg, rowsRead=rows_read, rowsDeleted=rows_read - live, duplicatesDropped=live - dg["rows"], perSource=per_source)


def expect(req):
    import duckdb
    con = duckdb.connect(":memory:")
    con.execute("SET threads = 1").fetchall()
    con.execute("SET TimeZone = 'UTC'").fetchall()
    return {name: expect_one(con, sc) for name, sc in req["scenarios"].items()}


# ---------------------------------------------------------------- check (outputs, new table)

def untag(v):
    """JSON from the spec: {"$big": "123"} BigInt, {"$buf": "hex"} Buffer."""
    if isinstance(v, dict):
        if set(v) == {"$big"}:
            return int(v["$big"])
        if set(v) == {"$buf"}:
            return bytes.fromhex(v["$buf"])
        return {k: untag(x) for k, x in v.items()}
    if isinstance(v, list):
        return [untag(x) for x in v]
    return v


def sort_ok(table, sort_by):
    """Rows ordered by sort_by (Iceberg default null order: first ascending, last descending)."""
    keys = []
    for sf in sort_by:
        col = table.column(sf["column"])
        if pa.types.is_timestamp(col.type):
            col = pc.cast(pc.cast(col, pa.timestamp("us", tz="UTC")), pa.int64())
        desc = sf.get("descending", False)
        nulls_first = sf.get("nullsFirst", not desc)
        keys.append((col.to_pylist(), desc, nulls_first))
    def cmp(a, b, desc, nulls_first):
        if a is None or b is None:
            if a is None and b is None:
                return 0
            return (-1 if a is None else 1) * (1 if nulls_first else -1)
        c = (a > b) - (a < b)
        return -c if desc else c
    for r in range(1, table.num_rows):
        for vals, desc, nf in keys:
            c = cmp(vals[r - 1], vals[r], desc, nf)
            if c < 0:
                break
            if c > 0:
                return False
    return True


def min_max(table):
    """{field id: [min, max]} of the primitive columns as strings (dates as days, timestamps as µs),
    the way pyiceberg's from_bytes decodes Iceberg bounds; [None, None] when all null."""
    out = {}
    for i, c in enumerate(COLUMNS):
        col = table.column(c)
        if pa.types.is_timestamp(col.type):
            col = pc.cast(pc.cast(col, pa.timestamp("us", tz="UTC")), pa.int64())
        elif pa.types.is_date(col.type):
            col = pc.cast(col, pa.int32())
        mm = pc.min_max(col).as_py()
        out[str(i + 1)] = [None if mm["min"] is None else str(mm["min"]), None if mm["max"] is None else str(mm["max"])]
    return out


def check(req):
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.conversions import from_bytes
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.typedef import Record
    outs = req["outputs"]
    input_schema = pq.read_schema(req["inputPath"])
    tables, per_file = [], []
    for o in outs:
        t = pq.read_table(o["path"])
        tables.append(t)
        md = pq.read_metadata(o["path"])
        part_cols = []
        for p in req["partitionBy"]:
            col = t.column(p["column"])
            part_cols.append((pc.cast(col, pa.int32()) if pa.types.is_date(col.type) else col).to_pylist())
        tuples = sorted({json.dumps(list(tup)) for tup in zip(*part_cols)}) if part_cols else []
        sch = pq.read_schema(o["path"])
        per_file.append({"path": o["path"], "rows": t.num_rows, "rowGroups": md.num_row_groups, "tuples": tuples,
                         "sorted": sort_ok(t, req.get("sortBy") or []), "minMax": min_max(t),
                         "sameSchema": sch.remove_metadata().equals(input_schema.remove_metadata(), check_metadata=True)
                         and [fl.metadata.get(b"PARQUET:field_id") for fl in sch] == [fl.metadata.get(b"PARQUET:field_id") for fl in input_schema],
                         "fieldIds": {fl.name: int(fl.metadata[b"PARQUET:field_id"]) for fl in sch if fl.metadata and b"PARQUET:field_id" in fl.metadata}})
    outputs = digest_of(pa.concat_tables(tables)) if tables else {"rows": 0, "digest": None, "lines": []}

    wh = req["warehouse"]
    os.makedirs(wh, exist_ok=True)
    uri = f"sqlite:///{os.path.join(wh, 'catalog.db')}"
    cat = SqlCatalog("c", uri=uri, warehouse=f"file://{wh}")
    cat.create_namespace("out")
    schema = iceberg_schema()
    spec = PartitionSpec(*[PartitionField(source_id=schema.find_field(p["column"]).field_id, field_id=1000 + i,
                                          transform=IdentityTransform(), name=p["name"])
                           for i, p in enumerate(req["partitionBy"])], spec_id=0)
    tbl = cat.create_table("out.compacted", schema=schema, partition_spec=spec, properties={"format-version": "2"})
    with tbl.transaction() as tx:
        with tx.update_snapshot().fast_append() as fa:
            for o in outs:
                r = untag(o["dataFile"])
                df = DataFile.from_args(
                    _table_format_version=2, content=DataFileContent(r["content"]), file_path=r["file_path"],
                    file_format=FileFormat(r["file_format"].upper()),
                    partition=Record(*[r["partition"][p["name"]] for p in req["partitionBy"]]),
                    record_count=r["record_count"], file_size_in_bytes=r["file_size_in_bytes"],
                    column_sizes={int(k): v for k, v in r["column_sizes"].items()},
                    value_counts={int(k): v for k, v in r["value_counts"].items()},
                    null_value_counts={int(k): v for k, v in r["null_value_counts"].items()},
                    nan_value_counts={int(k): v for k, v in r["nan_value_counts"].items()},
                    lower_bounds={int(k): v for k, v in r["lower_bounds"].items()},
                    upper_bounds={int(k): v for k, v in r["upper_bounds"].items()},
                    key_metadata=None, split_offsets=r["split_offsets"], equality_ids=None, sort_order_id=r["sort_order_id"])
                df.spec_id = 0
                fa.append_data_file(df)
    tbl = SqlCatalog("c", uri=uri, warehouse=f"file://{wh}").load_table("out.compacted")
    sch = tbl.schema()
    entries = []
    for task in tbl.scan().plan_files():
        d = task.file
        entries.append({
            "file_path": d.file_path, "content": int(d.content), "file_format": d.file_format.value,
            "partition": {p["name"]: d.partition[i] for i, p in enumerate(req["partitionBy"])},
            "record_count": d.record_count, "file_size_in_bytes": d.file_size_in_bytes,
            "column_sizes": dict(d.column_sizes or {}), "value_counts": dict(d.value_counts or {}),
            "null_value_counts": dict(d.null_value_counts or {}), "nan_value_counts": dict(d.nan_value_counts or {}),
            "lower_bounds": {k: v.hex() for k, v in (d.lower_bounds or {}).items()},
            "upper_bounds": {k: v.hex() for k, v in (d.upper_bounds or {}).items()},
            "lowerDecoded": {k: str(from_bytes(sch.find_field(k).field_type, v)) for k, v in (d.lower_bounds or {}).items()},
            "upperDecoded": {k: str(from_bytes(sch.find_field(k).field_type, v)) for k, v in (d.upper_bounds or {}).items()},
            "split_offsets": d.split_offsets, "sort_order_id": d.sort_order_id,
            "deletes": len(task.delete_files),
        })
    scan = digest_of(tbl.scan().to_arrow())
    summary = dict(tbl.current_snapshot().summary.additional_properties)
    return {"outputs": outputs, "perFile": per_file, "table": {"entries": entries, "scan": scan, "summary": summary}}


# ---------------------------------------------------------------- self-check

def selfcheck(req):
    """build, then DuckDB's expectations against pyiceberg's scans where pyiceberg applies the deletes."""
    b = build({"dir": req["dir"], "seed": req.get("seed", 7)})
    ds, files = b["deletes"], b["dataFiles"]
    pos = [{"kind": "position", "path": ds["P1"]["path"]}, {"kind": "position", "path": ds["P2"]["path"]}]

    def dv(name, i):
        return [{"kind": "deletion-vector", "path": ds[name]["path"], "offset": x["offset"], "length": x["length"]}
                for x in ds[name]["blobs"] if x["data"] == i]
    sc = {
        "positionUrl": [{"path": f["path"], "location": f["location"], "deletes": pos} for f in files],
        "positionPlain": [{"path": f["path"], "deletes": pos} for f in files],
        "dvUrl": [{"path": f["path"], "location": f["location"], "deletes": dv("PF", i)} for i, f in enumerate(files)],
        "dvPlain": [{"path": f["path"], "deletes": dv("PF_PLAIN", i)} for i, f in enumerate(files)],
        "positionAndDvUrl": [{"path": f["path"], "location": f["location"], "deletes": pos + dv("PF", i)} for i, f in enumerate(files)],
    }
    e = expect({"scenarios": {k: {"inputs": v} for k, v in sc.items()}})
    report = {}
    for k in sc:
        py = b["pyiceberg"][k]
        report[k] = {"duck": (e[k]["rows"], e[k]["digest"][:12], e[k]["rowsDeleted"], e[k]["perSource"]),
                     "pyiceberg": (py["rows"], py["digest"][:12]), "manifests": py["manifests"],
                     "agree": py["digest"] == e[k]["digest"]}
    assert all(r["agree"] for r in report.values()), report
    return report


# ---------------------------------------------------------------- crafted vectors, big delete files

def crafted(req):
    """{data, puffin, offset, length, outputs}: the blob as pyroaring (CRoaring) decodes it —
    `rejects` when it refuses the vector, else the data file's rows (column n, as pyarrow reads
    them) whose positions it does not hold — and the outputs' n values as pyarrow reads them."""
    from pyroaring import BitMap64
    with open(req["puffin"], "rb") as f:
        f.seek(req["offset"])
        raw = f.read(req["length"])
    (n,) = struct.unpack(">I", raw[:4])
    assert raw[4:8] == DV_MAGIC and len(raw) == n + 8, "not a deletion-vector-v1 blob"
    try:
        bm = BitMap64.deserialize(raw[8:4 + n])
    except Exception as e:  # CRoaring refuses the bytes
        return {"pyroaring": "rejects", "why": str(e)}
    rows = pq.read_table(req["data"]).column("n").to_pylist()
    survivors = sorted(v for pos, v in enumerate(rows) if pos not in bm)
    got = sorted(v for out in req.get("outputs", []) for v in pq.read_table(out).column("n").to_pylist())
    return {"pyroaring": "reads", "cardinality": len(bm), "expected": survivors, "got": got}


def big_position_deletes(req):
    """{path, location, rows}: a position-delete file of `rows` positions 0.. of `location` (pos
    DELTA_BINARY_PACKED, file_path dictionary-encoded: a few hundred KB), row groups of 1M rows."""
    n = req["rows"]
    schema = pa.schema([
        pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": str(FILE_PATH_ID).encode()}),
        pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": str(POS_ID).encode()}),
    ])
    pos = pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n)), 1)
    # (file_path as a dictionary array, so that 30M copies of a long location need no 2^31 bytes of
    # offsets; without the Arrow schema stored it is a plain string column in the file)
    paths = pa.DictionaryArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), n), pa.array([req["location"]]))
    table = pa.Table.from_arrays([paths, pos], names=["file_path", "pos"])
    table = table.cast(pa.schema([schema.field("file_path").with_type(pa.dictionary(pa.int32(), pa.string())), schema.field("pos")]))
    pq.write_table(table, req["path"], row_group_size=1 << 20, use_dictionary=["file_path"], store_schema=False,
                   column_encoding={"pos": "DELTA_BINARY_PACKED"}, compression="zstd")
    return {"rows": n, "bytes": os.path.getsize(req["path"])}


OPS = {"build": build, "expect": expect, "check": check, "selfcheck": selfcheck, "crafted": crafted,
       "bigPositionDeletes": big_position_deletes}

if __name__ == "__main__":
    request = json.load(sys.stdin)
    answer = OPS[request["op"]](request)
    sys.stdout.write(json.dumps(answer, default=lambda v: v.isoformat() if isinstance(v, datetime.date) else str(v)))
