//! The JS contract, declared once: the option objects of `compactGeneration` and
//! `planCompaction` as typed structs. Their doc comments and field types generate index.d.ts
//! (`#[napi(object)]`; the option structs derive no conversion from JS, only the plan result
//! and the string enums convert to JS), their serde derive is the parser (the N-API layer runs
//! napi's serde deserializer over the JS value; `deny_unknown_fields` refuses keys the README's
//! API section does not list), and `Options::validate` checks ranges and rules between fields.
//! Nothing here calls into Node: unit tests parse the same structs from JSON.
//! Memory: the options themselves.

use super::values::{Count, Equals, FieldId, JsOnly, Num, Obj, PartitionValues};
use napi_derive::napi;
use serde::Deserialize;

/// Options of `compactGeneration`. `planCompaction` takes the same object (`Partial<CompactOptions>`):
/// it reads the layout options and the planning rules and accepts the other keys unused.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CompactOptions {
    /// Directory for the new data files; created if missing.
    // (Parsed as optional: planCompaction does not need it; compactGeneration's `validate`
    // requires it.)
    #[serde(default, deserialize_with = "optional")]
    pub out_dir: String,
    /// File size goal in bytes actually written. Default 128 MiB.
    #[napi(ts_type = "number")]
    pub target_file_bytes: Option<Num>,
    /// Most rows in one decoded batch; also caps a row group. Default 10,000.
    #[napi(ts_type = "number")]
    pub batch_rows: Option<Num>,
    /// Most decoded (Arrow) bytes in one batch; also caps a row group. Default 32 MiB.
    #[napi(ts_type = "number")]
    pub batch_bytes: Option<Num>,
    /// Each output file is sorted end to end by these columns (top-level primitive columns).
    #[serde(default, deserialize_with = "objects")]
    pub sort_by: Option<Vec<SortKeyOptions>>,
    /// The Iceberg sort order id reported for files sorted by `sortBy` (requires `sortBy`). Default 0.
    /// For `planCompaction`: a file whose `sortOrderId` (from its manifest) equals this non-zero
    /// id is known sorted.
    #[napi(ts_type = "number")]
    pub sort_order_id: Option<Num>,
    /// Directory for temporary sorted runs when a tuple does not fit `batchBytes`; default outDir.
    /// Created if missing (and removed again); run files are removed on success and failure.
    /// Each run file is its chunks in zstd frames: runs take about what the tuple's rows take compressed
    /// (`spill.bytes` in the result).
    pub tmp_dir: Option<String>,
    /// Iceberg partition spec. No output file spans two tuples.
    #[serde(default, deserialize_with = "objects")]
    pub partition_by: Option<Vec<PartitionFieldOptions>>,
    /// Keep the first row of each value of this column (in `files` order, then row order) and
    /// drop later ones; a null key never equals anything (every null-key row is kept).
    pub dedupe_by: Option<String>,
    /// Default: the inputs' own codec (the one holding the most input bytes; zstd at level 3
    /// when that is zstd), so the table keeps a codec its readers already decode.
    // (A string, not an enum: names are matched case-insensitively and 'uncompressed' is 'none'.)
    #[napi(ts_type = "'zstd' | 'snappy' | 'gzip' | 'lz4' | 'none'")]
    pub compression: Option<String>,
    /// A level for `compression` (zstd 1-22, gzip 0-9); needs `compression`.
    #[napi(ts_type = "number")]
    pub compression_level: Option<Num>,
    /// Rows to write to a side Parquet file instead of the data files.
    #[serde(default, deserialize_with = "object")]
    pub divert: Option<DivertOptions>,
    /// Location prefix for `dataFile.file_path` (e.g. the table's `file:///…/data/`); default:
    /// the output's absolute path.
    pub out_location: Option<String>,
    /// Threads this call may use (default: the machine's available parallelism); concurrent
    /// calls share the cores through the call gate. With more than one, verification runs
    /// beside writing.
    #[napi(ts_type = "number")]
    pub threads: Option<Num>,
    /// Output files are `<prefix>-<n>.parquet`. Default: random per call.
    pub file_name_prefix: Option<String>,
    /// Re-read the outputs before publishing: row counts and a content digest of every row
    /// against the surviving input rows. Default true.
    pub verify: Option<bool>,
    /// A `planCompaction` result for these `files`: only the files of its 'rewrite' groups are
    /// read and written; the files it keeps are carried into `outDir` (`result.kept`).
    #[serde(default, deserialize_with = "object")]
    pub plan: Option<CompactionPlanResult>,
    /// With `plan`: 'link' (default: hard links in outDir, a copy across file systems) or
    /// 'in-place' (kept files stay where they are).
    pub keep: Option<KeepMode>,
    /// Planning rule: files of at least this size (and at most `maxFileBytes`), with no deletes,
    /// one tuple and (with `sortBy`) known sorted, are sealed: always kept. Default 0.75 ×
    /// targetFileBytes.
    #[napi(ts_type = "number")]
    pub min_file_bytes: Option<Num>,
    /// Planning rule: files above this are split. Default 1.8 × targetFileBytes.
    #[napi(ts_type = "number")]
    pub max_file_bytes: Option<Num>,
    /// Planning rule: unsealed files in a tuple that make it due (when rewriting them writes
    /// fewer files). Default 5; a caller that knows a day is closed may pass 2 (or 1).
    #[napi(ts_type = "number")]
    pub min_input_files: Option<Num>,
    /// With `plan` and `dedupeBy`: 'call' (default: no rewritten row repeats a key of any kept
    /// file) or 'tuple' (only of the kept files of its own tuple; for `planCompaction`: the
    /// dedupe key embeds the partition columns, so kept files of other tuples need not be read).
    pub dedupe_scope: Option<DedupeScope>,
    /// Aborting it rejects the call with `ERR_ABORTED` and removes every file of the call.
    // (Taken by the N-API layer as the JS object it is; see `JsOnly`.)
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<JsOnly>,
    /// Called (non-blocking) as the call progresses.
    // (Taken by the N-API layer as the JS function it is; see `JsOnly`.)
    #[napi(ts_type = "(progress: ProgressEvent) => void")]
    pub on_progress: Option<JsOnly>,
}

/// One `sortBy` key.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SortKeyOptions {
    pub column: String,
    pub descending: Option<bool>,
    /// Default true ascending, false descending (Iceberg's default null order).
    pub nulls_first: Option<bool>,
}

/// One field of the partition spec.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PartitionFieldOptions {
    pub column: String,
    /// One of identity (default), year, month, day, hour, bucket[N], truncate[W].
    pub transform: Option<String>,
    /// The partition field name (default Iceberg's: `date_day` for day(date), the column itself
    /// for identity).
    pub name: Option<String>,
}

/// Rows whose `column` — or the value at object `path` inside a VARIANT or JSON-string column —
/// equals `equals` are written to the side Parquet file `to` (same schema and codec; created
/// only when a row matches; must not exist) instead of the data files. Applied after deletes,
/// before dedupe.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DivertOptions {
    pub column: String,
    pub path: Option<Vec<String>>,
    #[napi(ts_type = "string | number | boolean")]
    pub equals: Equals,
    pub to: String,
}

/// A data file of the generation with the deletes that apply to it.
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InputFile {
    /// Local path to read.
    pub path: String,
    /// The file's location as the table's manifests record it (what position deletes reference
    /// in `file_path`, and deletion vectors in `referenced-data-file`). Default: `path`.
    pub location: Option<String>,
    /// The delete files that apply to this data file (the caller decides, from sequence numbers).
    #[serde(default, deserialize_with = "objects")]
    pub deletes: Option<Vec<DeleteSource>>,
    /// Planning facts the caller's manifests record (read from the file when absent; used by
    /// `planCompaction` and by `compactGeneration` with a `plan`).
    #[napi(ts_type = "number | bigint")]
    pub file_size_in_bytes: Option<Count>,
    #[napi(ts_type = "number | bigint")]
    pub record_count: Option<Count>,
    /// By partition field name, typed as `dataFile.partition` (numbers, BigInts, strings,
    /// Buffers, booleans, null compare by value).
    #[napi(ts_type = "Record<string, string | number | bigint | boolean | Buffer | null>")]
    pub partition: Option<PartitionValues>,
    /// The sort order the manifest records for this file.
    #[napi(ts_type = "number")]
    pub sort_order_id: Option<Num>,
    /// The caller needs this file rewritten: its group is due (reason 'forced').
    pub rewrite: Option<bool>,
}

/// `{ kind: 'position', path }` (a position-delete Parquet file), `{ kind: 'deletion-vector',
/// path, offset, length }` (a Puffin `deletion-vector-v1` blob, located as the manifest records
/// it) or `{ kind: 'equality', path, fieldIds }` (an equality-delete Parquet file).
#[napi(object, object_from_js = false, object_to_js = false)]
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteSource {
    pub kind: DeleteKind,
    pub path: String,
    #[napi(ts_type = "number")]
    pub offset: Option<Num>,
    #[napi(ts_type = "number")]
    pub length: Option<Num>,
    #[napi(ts_type = "Array<number>")]
    pub field_ids: Option<Vec<FieldId>>,
}

/// The kinds of delete file (`DeleteSource.kind`).
#[napi(string_enum = "kebab-case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeleteKind {
    Position,
    DeletionVector,
    Equality,
}

/// `keep`: what becomes of the files a plan keeps.
#[napi(string_enum = "kebab-case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeepMode {
    Link,
    InPlace,
}

/// `dedupeScope`: which kept files' keys a rewrite must not repeat.
#[napi(string_enum = "kebab-case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DedupeScope {
    Call,
    Tuple,
}

/// A plan group's decision.
#[napi(string_enum = "kebab-case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanAction {
    Rewrite,
    Keep,
}

/// What `planCompaction` decided. Handed back as `compactGeneration`'s `plan`, only `paths` and
/// each group's `action`, `rewrite` and `keep` are read; the rest is reported, not checked.
// (No `deny_unknown_fields` here: a plan is handed back as it was returned, and its report-only
// fields are not parsed at all.)
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionPlanResult {
    /// The planned files' paths, in `files` order.
    pub paths: Vec<String>,
    /// Some group is to be rewritten.
    #[serde(default, deserialize_with = "unread")]
    pub due: bool,
    /// One per partition tuple, in order of first appearance.
    #[serde(deserialize_with = "all_objects")]
    pub groups: Vec<PlanGroup>,
    #[serde(default, deserialize_with = "unread")]
    pub rewrite_files: u32,
    #[serde(default, deserialize_with = "unread")]
    pub rewrite_bytes: i64,
    #[serde(default, deserialize_with = "unread")]
    pub keep_files: u32,
    #[serde(default, deserialize_with = "unread")]
    pub keep_bytes: i64,
}

/// One partition tuple's decision.
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanGroup {
    /// The tuple's partition values, typed as `OutputFile.partition`.
    #[napi(ts_type = "Record<string, unknown>")]
    #[serde(default, deserialize_with = "unread")]
    pub partition: serde_json::Map<String, serde_json::Value>,
    pub action: PlanAction,
    /// Why it is rewritten (stable words: 'deletes', 'oversize', 'unsorted', 'small-files',
    /// 'fills-target', 'spans-tuples', 'forced'); empty when kept.
    #[serde(default, deserialize_with = "unread")]
    pub reasons: Vec<String>,
    /// Indexes into `files` of the files a rewrite reads.
    #[serde(deserialize_with = "indexes")]
    pub rewrite: Vec<u32>,
    /// Indexes into `files` of the files left as they are.
    #[serde(deserialize_with = "indexes")]
    pub keep: Vec<u32>,
    /// Files the rewrite writes (0 when kept).
    #[serde(default, deserialize_with = "unread")]
    pub expected_files: i64,
}

// Option objects are read from JS objects only: serde's derived structs would also take an
// array of their fields in order (`sortBy: [['ts', true]]`), which the contract does not.

/// An optional option object.
fn object<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Ok(Option::<Obj<T>>::deserialize(d)?.map(|o| o.0))
}

/// An optional array of option objects.
fn objects<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    Ok(Option::<Vec<Obj<T>>>::deserialize(d)?.map(|v| v.into_iter().map(|o| o.0).collect()))
}

/// An array of option objects.
fn all_objects<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Vec::<Obj<T>>::deserialize(d)?.into_iter().map(|o| o.0).collect())
}

/// Indexes into `files`: JS numbers (not BigInts), non-negative integers.
fn indexes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
    Vec::<Num>::deserialize(d)?
        .into_iter()
        .map(|Num(n)| {
            if n.fract() == 0.0 && n >= 0.0 && n <= f64::from(u32::MAX) {
                Ok(n as u32)
            } else {
                Err(serde::de::Error::invalid_value(serde::de::Unexpected::Float(n), &"an index into `files` (a non-negative integer)"))
            }
        })
        .collect()
}

/// A value that may be absent, null or undefined: the type's default then.
fn optional<'de, D: serde::Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A field of a handed-back plan that nothing reads: skipped whatever it holds (napi's
/// deserializer does not walk a value it is told to ignore, so a deep or cyclic value costs nothing).
fn unread<'de, D: serde::Deserializer<'de>, T: Default>(d: D) -> Result<T, D::Error> {
    serde::de::IgnoredAny::deserialize(d)?;
    Ok(T::default())
}
