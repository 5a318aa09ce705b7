#!/usr/bin/env python3
"""Writes the crafted deletion-vector cases of issue 41 next to this script (committed; rerun to
regenerate, the bytes are deterministic):

  python3 tests/corpus-deletes/make.py

  data-10.parquet                 10 rows (n = 0..9 int64 field id 1, s = "row-<n>" string field id 2),
                                  written by pyarrow; its table location is LOCATION below.
  dv-dup-key0-123-then-5.puffin   a deletion vector whose portable 64-bit Roaring map lists key 0
                                  twice: {1, 2, 3}, then {5} (count 2). The roaring crate's treemap
                                  reader keeps only the later bitmap, bringing rows 1, 2, 3 back.
  dv-dup-key0-5-then-123.puffin   the same, reversed ({5}, then {1, 2, 3}): row 5 would come back.
  dv-keys-descending.puffin       key 1 {5}, then key 0 {1, 2, 3}: keys out of order.
  dv-cardinality-mismatch.puffin  a valid vector {1, 2, 3} whose footer says cardinality 4.
  dv-65536-full-runs.puffin       key 0 with 65,536 run containers, each one full run (every
                                  position below 2^32: 926 KB), built by pyroaring (BitMap64,
                                  run-optimized): deletes all 10 rows.
  dv-65536-runs-partial.puffin    the same but container 0 holds the runs {1-2, 4, 7-65535}, so
                                  rows 0, 3, 5, 6 of the data file survive.
  cases.json                      per Puffin file: offset, length, location and what the footer says.

The valid 32-bit bitmaps are serialized by pyroaring (BitMap, the portable format); the 64-bit
maps with repeated or descending keys are framed by hand here: an 8-byte little-endian count,
then per entry a 4-byte little-endian key and a 32-bit bitmap. Every blob is a
deletion-vector-v1 (4-byte big-endian length of magic + vector, magic D1 D3 39 64, the vector,
big-endian CRC-32 of magic + vector) in a Puffin file (PFA1, the blob, footer PFA1 + JSON +
payload size + flags (little-endian) + PFA1), the footer naming the blob's referenced-data-file
and cardinality.
"""
import json
import os
import struct
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap, BitMap64

HERE = os.path.dirname(os.path.abspath(__file__))
LOCATION = "s3://crafted/data-10.parquet"
DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])
PUFFIN_MAGIC = b"PFA1"
ROW_POSITION_FIELD_ID = 2147483645


def vector_of_entries(entries):
    """A portable 64-bit Roaring map of (key, 32-bit values) in the order given (keys may repeat)."""
    out = struct.pack("<Q", len(entries))
    for key, values in entries:
        out += struct.pack("<I", key) + BitMap(values).serialize()
    return out


def write_puffin(name, vector, cardinality):
    body = DV_MAGIC + vector
    blob = struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    offset = len(PUFFIN_MAGIC)
    meta = {"type": "deletion-vector-v1", "fields": [ROW_POSITION_FIELD_ID], "snapshot-id": 1, "sequence-number": 1,
            "offset": offset, "length": len(blob),
            "properties": {"referenced-data-file": LOCATION, "cardinality": str(cardinality)}}
    payload = json.dumps({"blobs": [meta], "properties": {"created-by": "gencompact tests/corpus-deletes/make.py"}},
                         separators=(",", ":")).encode()
    data = PUFFIN_MAGIC + blob + PUFFIN_MAGIC + payload + struct.pack("<I", len(payload)) + struct.pack("<I", 0) + PUFFIN_MAGIC
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    return {"file": name, "offset": offset, "length": len(blob), "location": LOCATION, "cardinality": cardinality}


def main():
    schema = pa.schema([
        pa.field("n", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"}),
        pa.field("s", pa.string(), nullable=False, metadata={b"PARQUET:field_id": b"2"}),
    ])
    table = pa.table({"n": list(range(10)), "s": [f"row-{i}" for i in range(10)]}, schema=schema)
    pq.write_table(table, os.path.join(HERE, "data-10.parquet"), compression="snappy")

    cases = [
        write_puffin("dv-dup-key0-123-then-5.puffin", vector_of_entries([(0, [1, 2, 3]), (0, [5])]), 4),
        write_puffin("dv-dup-key0-5-then-123.puffin", vector_of_entries([(0, [5]), (0, [1, 2, 3])]), 4),
        write_puffin("dv-keys-descending.puffin", vector_of_entries([(1, [5]), (0, [1, 2, 3])]), 4),
        write_puffin("dv-cardinality-mismatch.puffin", vector_of_entries([(0, [1, 2, 3])]), 4),
    ]
    full = BitMap64()
    full.add_range(0, 1 << 32)
    full.run_optimize()
    cases.append(write_puffin("dv-65536-full-runs.puffin", full.serialize(), len(full)))
    partial = BitMap64()
    partial.add_range(0, 1 << 32)
    for p in (0, 3, 5, 6):
        partial.remove(p)
    partial.run_optimize()
    cases.append(write_puffin("dv-65536-runs-partial.puffin", partial.serialize(), len(partial)))
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump({"data": "data-10.parquet", "location": LOCATION, "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
