#!/usr/bin/env python3
"""Delete files for bench/deletes.js: the same deleted positions written two ways.

  python3 bench/make-deletes.py spec.json      (prints one line of JSON)

spec.json: {"out": dir, "seed": N, "fraction": F, "positionFiles": K,
            "files": [{"path": local path, "location": what deletes reference}, ...]}

For every data file, round(fraction x its row count) distinct positions, drawn with Python's
`random.Random(seed)` in input order (so the same spec gives the same positions), are written
  (a) as deletion vectors: one Puffin file `deletes.puffin` with one `deletion-vector-v1` blob per
      data file (4-byte big-endian length of magic + bitmap, magic D1 D3 39 64, the bitmap in the
      portable 64-bit Roaring serialization (pyroaring BitMap64), big-endian CRC-32 of magic +
      bitmap; footer `PFA1` + JSON + payload size and flags (LE) + `PFA1`), as the README's
      "Deletes" section describes the blobs the addon reads;
  (b) as K position-delete Parquet files `pos-<k>.parquet` (pyarrow): `file_path` (field id
      2147483546) and `pos` (2147483545), rows sorted by (file_path, pos), the data files split
      by location into K contiguous ranges, so each data file is covered by exactly one of them.
The output gives, per data file, its deleted count and where its DV blob / position file is, and
the total (the expected `rowsDeleted`), computed here from the drawn positions.
"""
import json
import os
import random
import struct
import sys
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap64

DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
PUFFIN_MAGIC = b"PFA1"
ROW_POSITION_FIELD_ID = 2147483645  # Iceberg's _pos reserved field, what a DV's `fields` lists
FILE_PATH_ID = 2147483546
POS_ID = 2147483545


def dv_blob(positions):
    bitmap = BitMap64(positions).serialize()
    body = DV_MAGIC + bitmap
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def main():
    spec = json.load(open(sys.argv[1]))
    out = spec["out"]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(spec["seed"])
    fraction = spec["fraction"]

    entries = []
    for f in spec["files"]:
        n = pq.ParquetFile(f["path"]).metadata.num_rows
        k = round(n * fraction)
        positions = sorted(rng.sample(range(n), k))
        entries.append({"path": f["path"], "location": f["location"], "rows": n, "positions": positions})

    # (a) one Puffin file, one DV per data file that has deletes
    puffin_path = os.path.join(out, "deletes.puffin")
    blobs_meta = []
    with open(puffin_path, "wb") as w:
        w.write(PUFFIN_MAGIC)
        offset = len(PUFFIN_MAGIC)
        for e in entries:
            if not e["positions"]:
                continue
            blob = dv_blob(e["positions"])
            w.write(blob)
            e["dv"] = {"offset": offset, "length": len(blob)}
            blobs_meta.append({
                "type": "deletion-vector-v1", "fields": [ROW_POSITION_FIELD_ID],
                "snapshot-id": 1, "sequence-number": 1, "offset": offset, "length": len(blob),
                "properties": {"referenced-data-file": e["location"], "cardinality": str(len(e["positions"]))},
            })
            offset += len(blob)
        payload = json.dumps({"blobs": blobs_meta, "properties": {"created-by": "gencompact bench/make-deletes.py"}},
                             separators=(",", ":")).encode()
        w.write(PUFFIN_MAGIC + payload + struct.pack("<I", len(payload)) + struct.pack("<I", 0) + PUFFIN_MAGIC)

    # (b) K position-delete files, each covering a contiguous range of locations
    schema = pa.schema([
        pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": str(FILE_PATH_ID).encode()}),
        pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": str(POS_ID).encode()}),
    ])
    with_deletes = sorted((e for e in entries if e["positions"]), key=lambda e: e["location"])
    k = max(1, min(spec["positionFiles"], len(with_deletes)))
    position_files = []
    for i in range(k):
        chunk = with_deletes[i * len(with_deletes) // k:(i + 1) * len(with_deletes) // k]
        p = os.path.join(out, f"pos-{i}.parquet")
        paths, poss = [], []
        for e in chunk:  # already sorted by location; positions sorted within
            paths.extend([e["location"]] * len(e["positions"]))
            poss.extend(e["positions"])
            e["positionFile"] = p
        pq.write_table(pa.table({"file_path": paths, "pos": poss}, schema=schema), p)
        position_files.append({"path": p, "bytes": os.path.getsize(p), "rows": len(poss), "dataFiles": len(chunk)})

    print(json.dumps({
        "expectedDeleted": sum(len(e["positions"]) for e in entries),
        "rows": sum(e["rows"] for e in entries),
        "puffin": {"path": puffin_path, "bytes": os.path.getsize(puffin_path), "blobs": len(blobs_meta)},
        "positionFiles": position_files,
        "files": [{"path": e["path"], "location": e["location"], "rows": e["rows"], "deleted": len(e["positions"]),
                   "dv": e.get("dv"), "positionFile": e.get("positionFile")} for e in entries],
    }))


if __name__ == "__main__":
    main()
