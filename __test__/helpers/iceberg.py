"""Commit compactGeneration's output files to a real Iceberg table (pyiceberg, SQL catalog on
SQLite) using the metrics the call returned, then read the table back.

Input (JSON on stdin):
  {
    "warehouse": "/abs/dir",                       # the catalog's SQLite file and table metadata go here
    "partitionBy": ["session_id", ...],            # identity partition source columns, in order
    "sortBy": "ts", "sortOrderId": 1,              # the table's sort order (ascending, nulls first)
    "digestColumns": ["_hyp_cache_row_id", ...],   # columns hashed per row by `digest`
    "files": [{ "path", "partition": {name: value}, "recordCount", "fileSizeInBytes",
                "splitOffsets", "sortOrderId",
                "columns": [{ "name", "fieldId", "columnSizeBytes", "valueCount", "nullValueCount",
                              "nanValueCount"?, "lowerHex"?, "upperHex"? }] }],
    "filters": [{ "name", "column", "op": "ge"|"le"|"between"|"eq", "value"?, "lo"?, "hi"? }]
  }
Output (one line of JSON on stdout):
  {
    "schemaParse": {"ok": bool, "error": str|null},    # Schema.model_validate_json on iceberg.schema as-is
    "rejected": [{"id", "name", "type", "error"}],      # fields pyiceberg cannot parse (dropped from the table)
    "schemaFields": [{"id", "name", "type"}],           # the created table's schema
    "icebergSchemaKv": {path: text},                    # iceberg.schema of every file
    "spec": [{"sourceId", "fieldId", "name", "transform"}], "sortOrder": {"orderId", "fields"},
    "formatVersion": int, "snapshotSummary": {...},
    "entries": [{ "path", "partition", "recordCount", "fileSizeInBytes", "splitOffsets", "sortOrderId",
                  "columnSizes", "valueCounts", "nullValueCounts", "nanValueCounts",
                  "lowerHex", "upperHex", "lowerDecoded", "upperDecoded", "fileFormat", "content", "specId" }],
    "inspectFiles": [{ "path", "recordCount", "fileSizeInBytes", "splitOffsets", "sortOrderId" }],
    "pyicebergStats": {path: {...}},                    # what pyiceberg itself derives from the footer
    "full": {"rows", "tsSum", "digest", "columns"},
    "filters": {name: {"planned": [paths], "partitionPass": [paths], "metricsPass": [paths],
                       "rows", "tsSum", "digest"}}
  }
Timestamps (tsSum, decoded bounds) are integer microseconds since the epoch; sums are strings.
"""

import datetime
import hashlib
import json
import os
import sys
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.conversions import from_bytes
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThanOrEqual
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import DateType, NestedField, PrimitiveType, TimestampType, TimestamptzType

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def json_default(v):
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return (v - EPOCH) // datetime.timedelta(microseconds=1)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, Mapping):  # pyiceberg's LazyDict (manifest maps)
        return dict(v)
    raise TypeError(f"not JSON serializable: {type(v)}")


def parse_schema(text):
    """Parse iceberg.schema; on failure parse field by field and drop those pyiceberg rejects."""
    try:
        return Schema.model_validate_json(text), {"ok": True, "error": None}, []
    except Exception as e:  # pydantic ValidationError
        whole = {"ok": False, "error": str(e)}
    doc = json.loads(text)
    kept, rejected = [], []
    for f in doc["fields"]:
        try:
            kept.append(NestedField.model_validate(f))
        except Exception as e:
            rejected.append({"id": f["id"], "name": f["name"], "type": f["type"], "error": str(e).splitlines()[-2].strip()})
    schema = Schema(*kept, schema_id=doc.get("schema-id", 0), identifier_field_ids=doc.get("identifier-field-ids", []))
    return schema, whole, rejected


def partition_value(source_type, v):
    """A JSON partition value as Iceberg's identity transform holds it (dates as days, timestamps as µs)."""
    if v is None:
        return None
    if isinstance(source_type, DateType) and isinstance(v, str):
        return (datetime.date.fromisoformat(v) - datetime.date(1970, 1, 1)).days
    if isinstance(source_type, (TimestampType, TimestamptzType)) and not isinstance(v, int):
        raise ValueError(f"timestamp partition value must be integer microseconds, got {v!r}")
    return v


def file_field_ids(path):
    """{top-level name: Parquet field id} of a file (None where a field carries none)."""
    out = {}
    for fl in pq.ParquetFile(path).schema_arrow:
        fid = (fl.metadata or {}).get(b"PARQUET:field_id")
        out[fl.name] = int(fid) if fid is not None else None
    return out


def name_mapping_for(path):
    """A name mapping of the file's own field ids. pyiceberg 0.12 reads a file by its field ids only
    when EVERY field, nested ones included, carries one; VARIANT children carry none (as in
    Iceberg), so it needs `schema.name-mapping.default`. Top-level fields map to their Parquet ids;
    id-less children get ids above every real one (they are outside the table schema anyway)."""
    from pyiceberg.table.name_mapping import MappedField, NameMapping
    arrow = pq.ParquetFile(path).schema_arrow
    next_id = [1 << 20]

    def mapped(fl):
        fid = (fl.metadata or {}).get(b"PARQUET:field_id")
        if fid is None:
            next_id[0] += 1
            fid = next_id[0]
        children = [mapped(fl.type.field(i)) for i in range(fl.type.num_fields)] if pa.types.is_struct(fl.type) else []
        if pa.types.is_list(fl.type) or pa.types.is_map(fl.type):
            raise ValueError(f"name_mapping_for: lists/maps not handled ({fl.name})")
        return MappedField(**{"field-id": int(fid), "names": [fl.name], "fields": children})

    return NameMapping([mapped(fl) for fl in arrow])


def decode_bound(schema, fid, b):
    try:
        t = schema.find_field(fid).field_type
    except ValueError:
        return None  # a field outside the table schema
    if not isinstance(t, PrimitiveType):
        return None
    return from_bytes(t, b)


def digest(table, columns):
    """count, sum of ts (µs) and sha256 of the sorted per-row lines over `columns`."""
    n = table.num_rows
    ts = table.column("ts").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    ts_sum = pc.sum(ts).as_py() if n else 0
    cols = []
    for c in columns:
        col = table.column(c)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
        cols.append(col.to_pylist())
    lines = sorted("\t".join("" if v is None else str(v) for v in row) for row in zip(*cols))
    h = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return {"rows": n, "tsSum": str(ts_sum), "digest": h}


def build_filter(f):
    c, op = f["column"], f["op"]
    if op == "ge":
        return GreaterThanOrEqual(c, f["value"])
    if op == "le":
        return LessThanOrEqual(c, f["value"])
    if op == "between":
        return And(GreaterThanOrEqual(c, f["lo"]), LessThanOrEqual(c, f["hi"]))
    if op == "eq":
        return EqualTo(c, f["value"])
    raise ValueError(f"unknown op {op}")


def main():
    req = json.load(sys.stdin)
    wh = req["warehouse"]
    files = req["files"]
    out = {}

    # -- schema from the outputs' iceberg.schema (every file must carry the same text)
    kv = {f["path"]: pq.ParquetFile(f["path"]).metadata.metadata[b"iceberg.schema"].decode() for f in files}
    out["icebergSchemaKv"] = kv
    text = kv[files[0]["path"]]
    schema, out["schemaParse"], out["rejected"] = parse_schema(text)

    # -- catalog, namespace, table: identity spec on partitionBy (ids 1000..), sort order sortBy asc nulls first
    uri = f"sqlite:///{os.path.join(wh, 'catalog.db')}"
    catalog = SqlCatalog("t", uri=uri, warehouse=f"file://{wh}")
    catalog.create_namespace("gc")
    spec = PartitionSpec(
        *[
            PartitionField(source_id=schema.find_field(name).field_id, field_id=1000 + i, transform=IdentityTransform(), name=name)
            for i, name in enumerate(req["partitionBy"])
        ],
        spec_id=0,
    )
    order = SortOrder(
        SortField(source_id=schema.find_field(req["sortBy"]).field_id, transform=IdentityTransform(),
                  direction=SortDirection.ASC, null_order=NullOrder.NULLS_FIRST),
        order_id=req["sortOrderId"],
    )
    # format-version 2: pyiceberg 0.12 writes manifests for v1/v2 only
    tbl = catalog.create_table("gc.messages", schema=schema, partition_spec=spec, sort_order=order,
                               properties={"format-version": "2",
                                           "schema.name-mapping.default": name_mapping_for(files[0]["path"]).model_dump_json()})
    out["fileFieldIds"] = {f["path"]: file_field_ids(f["path"]) for f in files}

    # -- one DataFile per output, from the call's metrics
    spec_struct = tbl.spec().partition_type(tbl.schema())
    source_types = [tbl.schema().find_field(pf.source_id).field_type for pf in tbl.spec().fields]
    with tbl.transaction() as tx:
        with tx.update_snapshot().fast_append() as fa:
            for f in files:
                cols = [c for c in f["columns"] if c.get("fieldId") is not None]
                part = Record(*[partition_value(t, f["partition"][pf.name]) for t, pf in zip(source_types, spec_struct.fields)])
                df = DataFile.from_args(
                    _table_format_version=2,
                    content=DataFileContent.DATA,
                    file_path=f["path"],
                    file_format=FileFormat.PARQUET,
                    partition=part,
                    record_count=f["recordCount"],
                    file_size_in_bytes=f["fileSizeInBytes"],
                    column_sizes={c["fieldId"]: c["columnSizeBytes"] for c in cols},
                    value_counts={c["fieldId"]: c["valueCount"] for c in cols},
                    null_value_counts={c["fieldId"]: c["nullValueCount"] for c in cols},
                    nan_value_counts={c["fieldId"]: c["nanValueCount"] for c in cols if c.get("nanValueCount") is not None},
                    lower_bounds={c["fieldId"]: bytes.fromhex(c["lowerHex"]) for c in cols if c.get("lowerHex") is not None},
                    upper_bounds={c["fieldId"]: bytes.fromhex(c["upperHex"]) for c in cols if c.get("upperHex") is not None},
                    key_metadata=None,
                    split_offsets=f["splitOffsets"],
                    equality_ids=None,
                    sort_order_id=f["sortOrderId"],
                )
                df.spec_id = tbl.spec().spec_id
                fa.append_data_file(df)

    # -- read everything back through a fresh catalog (what was persisted, not what is cached)
    tbl = SqlCatalog("t", uri=uri, warehouse=f"file://{wh}").load_table("gc.messages")
    schema = tbl.schema()
    out["schemaFields"] = [{"id": fl.field_id, "name": fl.name, "type": str(fl.field_type)} for fl in schema.fields]
    out["spec"] = [{"sourceId": pf.source_id, "fieldId": pf.field_id, "name": pf.name, "transform": str(pf.transform)} for pf in tbl.spec().fields]
    so = tbl.sort_order()
    out["sortOrder"] = {"orderId": so.order_id, "fields": [{"sourceId": sf.source_id, "direction": str(sf.direction), "nullOrder": str(sf.null_order)} for sf in so.fields]}
    out["formatVersion"] = tbl.format_version
    out["snapshotSummary"] = dict(tbl.current_snapshot().summary.additional_properties, operation=str(tbl.current_snapshot().summary.operation))

    entries = []
    for task in tbl.scan().plan_files():
        d = task.file
        entries.append({
            "path": d.file_path, "content": int(d.content), "fileFormat": str(d.file_format.value), "specId": d.spec_id,
            "partition": {pf.name: d.partition[i] for i, pf in enumerate(spec_struct.fields)},
            "recordCount": d.record_count, "fileSizeInBytes": d.file_size_in_bytes,
            "splitOffsets": d.split_offsets, "sortOrderId": d.sort_order_id,
            "columnSizes": d.column_sizes, "valueCounts": d.value_counts, "nullValueCounts": d.null_value_counts,
            "nanValueCounts": d.nan_value_counts,
            "lowerHex": {k: v.hex() for k, v in d.lower_bounds.items()},
            "upperHex": {k: v.hex() for k, v in d.upper_bounds.items()},
            "lowerDecoded": {k: decode_bound(schema, k, v) for k, v in d.lower_bounds.items()},
            "upperDecoded": {k: decode_bound(schema, k, v) for k, v in d.upper_bounds.items()},
        })
    out["entries"] = entries
    out["inspectFiles"] = [
        {"path": r["file_path"], "recordCount": r["record_count"], "fileSizeInBytes": r["file_size_in_bytes"],
         "splitOffsets": r["split_offsets"], "sortOrderId": r["sort_order_id"]}
        for r in tbl.inspect.files().to_pylist()
    ]

    # -- what pyiceberg itself derives from each footer (its add_files path), for comparison only
    from pyiceberg.io.pyarrow import (MetricModeTypes, MetricsMode, StatisticsCollector, compute_statistics_plan,
                                      data_file_statistics_from_parquet_metadata, parquet_path_to_id_mapping)

    class IdMapping(dict):  # leaves of fields outside the table schema (the VARIANT groups) map to -1
        def __missing__(self, key):
            return -1

    class Plan(dict):  # ... and collect nothing but their column sizes
        def __missing__(self, key):
            return StatisticsCollector(field_id=-1, iceberg_type=None, mode=MetricsMode(MetricModeTypes.NONE), column_name="?")

    stats = {}
    for f in files:
        st = data_file_statistics_from_parquet_metadata(
            parquet_metadata=pq.read_metadata(f["path"]),
            stats_columns=Plan(compute_statistics_plan(schema, tbl.properties)),
            parquet_column_mapping=IdMapping(parquet_path_to_id_mapping(schema)),
        )
        sd = st.to_serialized_dict()
        stats[f["path"]] = {
            "recordCount": sd["record_count"],
            "splitOffsets": sd["split_offsets"],
            "columnSizes": {k: v for k, v in sd["column_sizes"].items() if k != -1},
            "valueCounts": sd["value_counts"], "nullValueCounts": sd["null_value_counts"],
            "lowerHex": {k: v.hex() for k, v in sd["lower_bounds"].items()},
            "upperHex": {k: v.hex() for k, v in sd["upper_bounds"].items()},
            "partition": list(st.partition(tbl.spec(), schema)._data),
        }
    out["pyicebergStats"] = stats

    # -- full scan, and filtered scans with which files each evaluator lets through
    cols = req["digestColumns"]
    full = tbl.scan().to_arrow()
    out["full"] = dict(digest(full, cols), columns=full.column_names)
    committed = [t.file for t in tbl.scan().plan_files()]
    res = {}
    for flt in req["filters"]:
        scan = tbl.scan(row_filter=build_filter(flt))
        planner = scan._manifest_planner  # pyiceberg 0.12's evaluators, to tell partition from metrics pruning
        part_eval = planner._build_partition_evaluator(tbl.spec().spec_id)
        metrics_eval = planner._build_metrics_evaluator()
        t = scan.to_arrow()
        res[flt["name"]] = dict(
            digest(t, cols),
            planned=sorted(task.file.file_path for task in scan.plan_files()),
            partitionPass=sorted(d.file_path for d in committed if part_eval(d)),
            metricsPass=sorted(d.file_path for d in committed if metrics_eval(d)),
        )
    out["filters"] = res
    print(json.dumps(out, default=json_default))


if __name__ == "__main__":
    main()
