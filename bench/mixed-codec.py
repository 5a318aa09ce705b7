#!/usr/bin/env python3
"""The mixed-codec, pyarrow-written benchmark shape (bench/run.js --shape mixed-codec).

  python3 bench/mixed-codec.py spec.json
    spec: { "out": dir, "files": [input.parquet, ...], "codecs": ["snappy", "zstd", "gzip"],
            "addColumnNewest": 0.1 }  (optional: the newest fraction of files gains a column)

Re-writes each input with pyarrow, row group by row group (same rows per row group), file i with
codecs[i % len(codecs)] at pyarrow's default level, into out/part-NNNNN.parquet. pyarrow keeps the
Parquet schema's field ids (PARQUET:field_id), nullability, logical types and the key-value
metadata (iceberg.schema), and adds its own ARROW:schema key as pyarrow writers do.

VARIANT: pyarrow reads a VARIANT-annotated group as a plain struct<metadata: binary, value: binary>
and writes it back without the VARIANT annotation (checked with pyarrow 26: neither
arrow_extensions_enabled nor a Python extension type keeps it), so here those columns are plain
groups of two required binaries, the bytes unchanged. The script reports which codecs it wrote and
whether any VARIANT annotation survived.

With addColumnNewest (bench/run.js --shape evolved), the newest fraction of the files (the last
ones) gain a nullable string column `region` (field id 1000, a few values, some nulls), as a table
whose schema evolved during the day: the inputs then have two schemas to unify.

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
    newest = float(spec.get("addColumnNewest") or 0)
    first_evolved = len(spec["files"]) - int(round(len(spec["files"]) * newest))
    os.makedirs(out, exist_ok=True)
    files, rows, total = [], 0, 0
    used = {}
    for i, src in enumerate(spec["files"]):
        codec = codecs[i % len(codecs)]
        dst = os.path.join(out, "part-%05d.parquet" % i)
        pf = pq.ParquetFile(src)
        schema = pf.schema_arrow
        evolved = newest > 0 and i >= first_evolved
        if evolved:
            schema = schema.append(pyarrow.field("region", pyarrow.string(), nullable=True, metadata={b"PARQUET:field_id": b"1000"}))
        with pq.ParquetWriter(dst, schema, compression=codec) as w:
            for rg in range(pf.metadata.num_row_groups):
                t = pf.read_row_group(rg)
                if evolved:
                    regions = [None if r % 7 == 3 else ["eu-west-1", "us-east-1", "ap-south-1"][r % 3] for r in range(t.num_rows)]
                    t = t.append_column(schema.field("region"), pyarrow.array(regions, pyarrow.string()))
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
        "evolvedFiles": len(spec["files"]) - first_evolved if newest > 0 else 0,
    }))


if __name__ == "__main__":
    main()
