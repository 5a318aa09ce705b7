//! The result of `compactGeneration` as JS sees it: the report (`report`) converted into the
//! README's and index.d.ts's shapes — output and kept files with their Iceberg `dataFile`
//! records, counts, memory and spill figures.
//!
//! Memory: one JS-shaped copy of the report.

use crate::iceberg::metrics::BoundValue;
use crate::iceberg::partition::PartitionValue;
use crate::node_values::{CopiedBuffer, OrderedObject, TypedValue};
use crate::report::{ColumnReport, CompactReport, FileReport};
use napi::bindgen_prelude::*;
use napi_derive::napi;

#[napi(object, object_from_js = false)]
pub struct ColumnMetrics {
    pub name: String,
    /// Parquet field id when the input carries one.
    pub field_id: Option<i32>,
    pub column_size_bytes: i64,
    pub value_count: i64,
    pub null_value_count: i64,
    /// Floating-point columns, when the writer recorded NaN counts.
    pub nan_value_count: Option<i64>,
    /// Primitive columns: bounds as JS values (strings, numbers — timestamps in µs, dates in
    /// days —, booleans; bytes as lowercase hex), truncated as Iceberg does.
    #[napi(ts_type = "unknown")]
    pub lower_bound: Option<serde_json::Value>,
    #[napi(ts_type = "unknown")]
    pub upper_bound: Option<serde_json::Value>,
    /// The bounds in Iceberg's single-value binary encoding.
    #[napi(ts_type = "Buffer")]
    pub lower_bound_bytes: Option<CopiedBuffer>,
    #[napi(ts_type = "Buffer")]
    pub upper_bound_bytes: Option<CopiedBuffer>,
}

/// The file as the Iceberg DataFile record a manifest writer takes (the spec's field names;
/// counts as BigInt; metric maps keyed by field id).
#[napi(object, object_from_js = false)]
pub struct IcebergDataFile {
    #[napi(js_name = "content", ts_type = "0")]
    pub content: u32,
    #[napi(js_name = "file_path")]
    pub file_path: String,
    #[napi(js_name = "file_format", ts_type = "'parquet'")]
    pub file_format: String,
    /// By partition field name; `long` and timestamps (µs) as BigInt, `binary`/`fixed` as
    /// Buffer, `int`, dates (days) and the year/month/day/hour/bucket results as numbers.
    #[napi(js_name = "partition", ts_type = "Record<string, unknown>")]
    pub partition: OrderedObject<TypedValue>,
    #[napi(js_name = "record_count")]
    pub record_count: BigInt,
    #[napi(js_name = "file_size_in_bytes")]
    pub file_size_in_bytes: BigInt,
    #[napi(js_name = "column_sizes", ts_type = "Record<number, bigint>")]
    pub column_sizes: OrderedObject<BigInt>,
    #[napi(js_name = "value_counts", ts_type = "Record<number, bigint>")]
    pub value_counts: OrderedObject<BigInt>,
    #[napi(js_name = "null_value_counts", ts_type = "Record<number, bigint>")]
    pub null_value_counts: OrderedObject<BigInt>,
    #[napi(js_name = "nan_value_counts", ts_type = "Record<number, bigint>")]
    pub nan_value_counts: OrderedObject<BigInt>,
    /// Iceberg single-value encoding, truncated as Iceberg does.
    #[napi(js_name = "lower_bounds", ts_type = "Record<number, Buffer>")]
    pub lower_bounds: OrderedObject<CopiedBuffer>,
    #[napi(js_name = "upper_bounds", ts_type = "Record<number, Buffer>")]
    pub upper_bounds: OrderedObject<CopiedBuffer>,
    #[napi(js_name = "split_offsets")]
    pub split_offsets: Vec<BigInt>,
    #[napi(js_name = "sort_order_id")]
    pub sort_order_id: i32,
}

#[napi(object, object_from_js = false)]
pub struct OutputFile {
    /// Final path under outDir.
    pub path: String,
    /// Transformed partition values of this file's tuple.
    #[napi(ts_type = "Record<string, unknown>")]
    pub partition: serde_json::Map<String, serde_json::Value>,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub row_groups: u32,
    pub split_offsets: Vec<i64>,
    /// opts.sortOrderId only when the file is globally sorted, else 0.
    pub sort_order_id: i32,
    /// One per top-level field.
    pub columns: Vec<ColumnMetrics>,
    /// The same figures as the Iceberg DataFile record to commit (`files.map(f => f.dataFile)`).
    pub data_file: IcebergDataFile,
    /// Kept files only: the index into `files` of the input it is.
    pub input: Option<u32>,
}

/// The `divert` side file.
#[napi(object, object_from_js = false)]
pub struct DivertedFile {
    /// `divert.to`; it exists only when `rows` > 0.
    pub path: String,
    pub rows: i64,
}

#[napi(object, object_from_js = false)]
pub struct CompactResult {
    pub files: Vec<OutputFile>,
    /// With a `plan`: the files it kept, linked into outDir (or, with `keep: 'in-place'`, where
    /// they are), each with `input` and its `dataFile` read from its footer. Empty without.
    pub kept: Vec<OutputFile>,
    pub input_files: u32,
    /// Rows decoded from the data files, deleted ones included:
    /// rowsRead = rowsDeleted + (diverted?.rows ?? 0) + duplicatesDropped + rowsWritten.
    pub rows_read: i64,
    /// Rows removed by the table's deletes (each row once).
    pub rows_deleted: i64,
    /// Rows in the returned data files.
    pub rows_written: i64,
    pub duplicates_dropped: i64,
    /// Present when `divert` was given.
    pub diverted: Option<DivertedFile>,
    pub bytes_read: i64,
    pub bytes_written: i64,
    pub elapsed_ms: f64,
    /// The most bytes the call held at once by its own accounting (decoded batches, pages,
    /// dictionaries, sort buffers, spill state, the open row group's encoders, verification):
    /// at most 3 × batchBytes + 64 MiB.
    pub peak_memory_bytes: i64,
    /// Sorted runs spilled to disk (`sortBy` tuples larger than the sort buffer).
    pub spill: SpillReport,
}

/// What a call spilled to `tmpDir`.
#[napi(object, object_from_js = false)]
pub struct SpillReport {
    /// Run files written (intermediate merges included).
    pub runs: i64,
    /// Bytes written to run files.
    pub bytes: i64,
    /// The most bytes of run files on disk at once.
    pub peak_bytes: i64,
    /// The most merge passes one partition tuple's sorted runs took: 1 where they merged at
    /// once, more where more runs overlapped than one merge holds open (at most 64, each a file
    /// descriptor) or its memory allows; 0 where nothing was spilled.
    pub merge_passes: i64,
}

/// Partition values as JS values: numbers, strings, booleans, null; bytes as lowercase hex.
fn json_value(v: PartitionValue) -> serde_json::Value {
    use serde_json::Value;
    match v {
        PartitionValue::Null => Value::Null,
        PartitionValue::Bool(b) => Value::Bool(b),
        PartitionValue::Int(i) | PartitionValue::Long(i) | PartitionValue::Date(i) | PartitionValue::Timestamp(i) => Value::from(i),
        PartitionValue::Decimal(s) => Value::String(s),
        PartitionValue::Float(f) => serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null),
        PartitionValue::String(s) => Value::String(s),
        PartitionValue::Bytes(b) => Value::String(b.iter().map(|x| format!("{x:02x}")).collect()),
    }
}

fn bound_value(v: &BoundValue) -> serde_json::Value {
    use serde_json::Value;
    match v {
        BoundValue::Bool(b) => Value::Bool(*b),
        BoundValue::Int(i) => Value::from(*i),
        BoundValue::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number).unwrap_or(Value::Null),
        BoundValue::String(s) => Value::String(s.clone()),
        BoundValue::Bytes(b) => Value::String(b.iter().map(|x| format!("{x:02x}")).collect()),
    }
}

fn data_file(f: &FileReport) -> IcebergDataFile {
    let by_id = |value: &dyn Fn(&ColumnReport) -> Option<u64>| -> OrderedObject<BigInt> {
        OrderedObject(f.columns.iter().filter_map(|c| Some((c.field_id?.to_string(), BigInt::from(value(c)?)))).collect())
    };
    let bounds = |pick: &dyn Fn(&ColumnReport) -> Option<&Vec<u8>>| -> OrderedObject<CopiedBuffer> {
        OrderedObject(f.columns.iter().filter_map(|c| Some((c.field_id?.to_string(), CopiedBuffer(pick(c)?.clone())))).collect())
    };
    IcebergDataFile {
        content: 0,
        file_path: f.location.clone(),
        file_format: "parquet".into(),
        partition: OrderedObject(f.partition.iter().map(|(k, v)| (k.clone(), TypedValue(v.clone()))).collect()),
        record_count: BigInt::from(f.record_count),
        file_size_in_bytes: BigInt::from(f.file_size_in_bytes),
        column_sizes: by_id(&|c| Some(c.column_size_bytes)),
        value_counts: by_id(&|c| Some(c.value_count)),
        null_value_counts: by_id(&|c| Some(c.null_value_count)),
        nan_value_counts: by_id(&|c| c.nan_value_count),
        lower_bounds: bounds(&|c| c.lower_bound.as_ref().map(|(_, b)| b)),
        upper_bounds: bounds(&|c| c.upper_bound.as_ref().map(|(_, b)| b)),
        split_offsets: f.split_offsets.iter().map(|o| BigInt::from(*o)).collect(),
        sort_order_id: f.sort_order_id,
    }
}

fn output_file(f: FileReport, input: Option<usize>) -> OutputFile {
    OutputFile {
        input: input.map(|i| i as u32),
        data_file: data_file(&f),
        path: f.path,
        partition: f.partition.into_iter().map(|(k, v)| (k, json_value(v))).collect(),
        record_count: f.record_count as i64,
        file_size_in_bytes: f.file_size_in_bytes as i64,
        row_groups: f.row_groups,
        split_offsets: f.split_offsets.into_iter().map(|o| o as i64).collect(),
        sort_order_id: f.sort_order_id,
        columns: f
            .columns
            .into_iter()
            .map(|c| ColumnMetrics {
                name: c.name,
                field_id: c.field_id,
                column_size_bytes: c.column_size_bytes as i64,
                value_count: c.value_count as i64,
                null_value_count: c.null_value_count as i64,
                nan_value_count: c.nan_value_count.map(|n| n as i64),
                lower_bound: c.lower_bound.as_ref().map(|(v, _)| bound_value(v)),
                upper_bound: c.upper_bound.as_ref().map(|(v, _)| bound_value(v)),
                lower_bound_bytes: c.lower_bound.map(|(_, b)| CopiedBuffer(b)),
                upper_bound_bytes: c.upper_bound.map(|(_, b)| CopiedBuffer(b)),
            })
            .collect(),
    }
}

pub(crate) fn to_js(r: CompactReport) -> CompactResult {
    CompactResult {
        files: r.files.into_iter().map(|f| output_file(f, None)).collect(),
        kept: r.kept.into_iter().map(|(i, f)| output_file(f, Some(i))).collect(),
        input_files: r.input_files,
        rows_read: r.rows_read as i64,
        rows_deleted: r.rows_deleted as i64,
        rows_written: r.rows_written as i64,
        duplicates_dropped: r.duplicates_dropped as i64,
        peak_memory_bytes: r.peak_memory_bytes as i64,
        spill: SpillReport {
            runs: r.files_spilled as i64,
            bytes: r.bytes_spilled as i64,
            peak_bytes: r.spill_peak_bytes as i64,
            merge_passes: r.merge_passes as i64,
        },
        diverted: r.diverted.map(|(path, rows)| DivertedFile { path, rows: rows as i64 }),
        bytes_read: r.bytes_read as i64,
        bytes_written: r.bytes_written as i64,
        elapsed_ms: r.elapsed_ms,
    }
}
