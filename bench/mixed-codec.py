#!/usr/bin/env python3
"""The mixed-codec, pyarrow-written benchmark shape (bench/run.js --shape mixed-codec).

  python3 bench/mixed-codec.py spec.json
    spec: { "out": dir, "files": [input.parquet, ...], "codecs": ["snappy", "zstd", "gzip"] }

Re-writes each input with pyarrow, row group by row group (same rows per row group), file i with
codecs[i % len(codecs)] at pyarrow's default level, into out/part-NNNNN.parquet. pyarrow keeps the
Parquet schema's field ids (PARQUET:field_id), nullability, logical types and the key-value
metadata (iceberg.schema), and adds its own ARROW:schema key as pyarrow writers do.

VARIANT: pyarrow reads a VARIANT-annotated group as a plain struct<metadata: binary, value: binary>
and writes it back without the VARIANT annotation (checked with pyarrow 26: neither
arrow_extensions_enabled nor a Python extension type keeps it), so here those columns are plain
groups of two required binaries, the bytes unchanged. The script reports which codecs it wrote and
whether any VARIANT annotation survived.

Prints one JSON line: { files, rows, bytes, codecs: {codec: files}, variantKept, pyarrow }.
"""
import json
import os
import sys

import pyarrow
import pyarrow.parquet as pq


def main():
    spec = json.load(open(sys.argv[1]))
    out = spec["out"]
    codecs = spec.get("codecs") or ["snappy", "zstd", "gzip"]
    os.makedirs(out, exist_ok=True)
    files, rows, total = [], 0, 0
    used = {}
    for i, src in enumerate(spec["files"]):
        codec = codecs[i % len(codecs)]
        dst = os.path.join(out, "part-%05d.parquet" % i)
        pf = pq.ParquetFile(src)
        with pq.ParquetWriter(dst, pf.schema_arrow, compression=codec) as w:
            for rg in range(pf.metadata.num_row_groups):
                t = pf.read_row_group(rg)
                w.write_table(t, row_group_size=max(1, t.num_rows))
                rows += t.num_rows
        files.append(os.path.abspath(dst))
        total += os.path.getsize(dst)
        used[codec] = used.get(codec, 0) + 1
    written = pq.ParquetFile(files[0]).schema
    variant_kept = "Variant" in str(written)
    print(json.dumps({
        "files": files, "rows": rows, "bytes": total, "codecs": used,
        "variantKept": variant_kept, "pyarrow": pyarrow.__version__,
    }))


if __name__ == "__main__":
    main()
