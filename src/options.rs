//! Option validation, in one place. The JS options are parsed into the typed structs of
//! `contract` (napi's serde deserializer in the N-API layer, JSON in unit tests); `validate`
//! checks ranges and rules between fields and turns them into `Options`.
//! Memory: nothing beyond the options themselves.

mod columns;
pub mod contract;
mod files;
pub mod plan;
pub mod values;
use columns::{divert, partition_by, sort_by};
pub use contract::CompactOptions;
pub use files::{input_files, listed_twice, plan_inputs, Key, PlanInput};

use crate::error::{CompactError, Result};
use crate::iceberg::partition::PartitionField;
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use serde::{Deserialize, Deserializer};
use std::path::PathBuf;

pub const DEFAULT_TARGET_FILE_BYTES: u64 = 128 * 1024 * 1024;
pub const DEFAULT_BATCH_ROWS: usize = 10_000;
pub const DEFAULT_BATCH_BYTES: usize = 32 * 1024 * 1024;
/// zstd's own default level (and DuckDB's); parquet-rs defaults to 1. On the seed shape level 3
/// writes 10 % smaller files (28 % when sorting interleaves tuples) for ~3 % more time.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;
pub(crate) const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

#[derive(Debug, Clone)]
pub struct Options {
    pub out_dir: PathBuf,
    pub target_file_bytes: u64,
    pub batch_rows: usize,
    pub batch_bytes: usize,
    /// `None`: the inputs' own codec (`resolve_codec`).
    pub compression: Option<Compression>,
    pub file_name_prefix: String,
    pub verify: bool,
    /// Column whose repeated values are dropped after their first occurrence.
    pub dedupe_by: Option<String>,
    /// Iceberg partition spec: no output file spans two tuples.
    pub partition_by: Option<Vec<PartitionField>>,
    /// Each output file is sorted end to end by these columns.
    pub sort_by: Option<Vec<SortKey>>,
    /// The Iceberg sort order id reported for sorted files.
    pub sort_order_id: i32,
    /// Where sorted runs are spilled (default: outDir).
    pub tmp_dir: Option<PathBuf>,
    /// Rows to write to a side file instead of the data files.
    pub divert: Option<DivertSpec>,
    /// Location prefix for `dataFile.file_path` (default: the absolute output path).
    pub out_location: Option<String>,
    /// Threads one call may use (default: the machine's available parallelism).
    pub threads: usize,
    /// A `planCompaction` result: rewrite only what it marks, carry what it keeps.
    pub plan: Option<plan::PlanSelection>,
}

/// `divert: { column, path?, equals, to }`.
#[derive(Debug, Clone, PartialEq)]
pub struct DivertSpec {
    pub column: String,
    /// Object keys into a VARIANT or JSON-string value; empty: the column's own value.
    pub path: Vec<String>,
    pub equals: serde_json::Value,
    pub to: PathBuf,
}

/// One `sortBy` entry. `nulls_first` defaults as Iceberg's null order does: first when
/// ascending, last when descending.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub column: String,
    pub descending: bool,
    pub nulls_first: bool,
}

impl Options {
    /// Options with defaults for `out_dir` (used by Rust callers and tests).
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        Options {
            out_dir: out_dir.into(),
            target_file_bytes: DEFAULT_TARGET_FILE_BYTES,
            batch_rows: DEFAULT_BATCH_ROWS,
            batch_bytes: DEFAULT_BATCH_BYTES,
            compression: None,
            file_name_prefix: random_prefix(),
            verify: true,
            dedupe_by: None,
            partition_by: None,
            sort_by: None,
            sort_order_id: 0,
            tmp_dir: None,
            divert: None,
            out_location: None,
            threads: available_threads(),
            plan: None,
        }
    }

    /// The codec outputs are written with: `compression`, else the codec holding the most
    /// input bytes (`dominant`, as the plan found it) in its writable form, else zstd.
    pub fn resolve_codec(&mut self, dominant: Option<Compression>) {
        if self.compression.is_none() {
            self.compression = Some(dominant.map(output_codec).unwrap_or(Compression::ZSTD(default_zstd())));
        }
    }

    /// The codec to write with (zstd until `resolve_codec` has run).
    pub fn codec(&self) -> Compression {
        self.compression.unwrap_or(Compression::ZSTD(default_zstd()))
    }

    /// Validates `compactGeneration`'s options: ranges, and the rules between fields.
    pub fn validate(o: &CompactOptions) -> Result<Self> {
        if o.out_dir.is_empty() {
            return Err(invalid("'outDir' must be a non-empty string, got none or an empty string".into()));
        }
        let mut opts = Options::new(&o.out_dir);
        if let Some(n) = integer(o.target_file_bytes, "targetFileBytes", 1024.0, MAX_SAFE_INTEGER)? {
            opts.target_file_bytes = n as u64;
        }
        if let Some(n) = integer(o.batch_rows, "batchRows", 1.0, 1.0e9)? {
            opts.batch_rows = n as usize;
        }
        if let Some(n) = integer(o.batch_bytes, "batchBytes", 1024.0, 16.0 * 1024.0 * 1024.0 * 1024.0)? {
            opts.batch_bytes = n as usize;
        }
        let level = integer(o.compression_level, "compressionLevel", -1e9, 1e9)?;
        opts.compression = compression(o.compression.as_deref(), level)?;
        opts.divert = divert(o.divert.as_ref())?;
        if let Some(n) = integer(o.threads, "threads", 1.0, 1024.0)? {
            opts.threads = n as usize;
        }
        opts.out_location = non_empty(&o.out_location, "outLocation", "a non-empty string")?;
        if let Some(prefix) = &o.file_name_prefix {
            check_prefix(prefix)?;
            opts.file_name_prefix = prefix.clone();
        }
        opts.partition_by = partition_by(o.partition_by.as_deref())?;
        opts.dedupe_by = non_empty(&o.dedupe_by, "dedupeBy", "a column name")?;
        opts.sort_by = sort_by(o.sort_by.as_deref())?;
        if let Some(n) = integer(o.sort_order_id, "sortOrderId", 0.0, i32::MAX as f64)? {
            if n > 0.0 && opts.sort_by.is_none() {
                return Err(invalid("'sortOrderId' claims a sort order, but no 'sortBy' was given".into()));
            }
            opts.sort_order_id = n as i32;
        }
        opts.tmp_dir = non_empty(&o.tmp_dir, "tmpDir", "a non-empty string")?.map(PathBuf::from);
        // The planning rules are validated as planCompaction does (they are the plan's, not
        // the rewrite's); the plan itself is checked against `files` by the call.
        plan::plan_options(o)?;
        opts.plan = plan::plan_selection(o.plan.as_ref(), o.keep, o.dedupe_scope)?;
        if let Some(verify) = o.verify {
            opts.verify = verify;
        }
        Ok(opts)
    }
}

/// Parses `T` from `de` (napi's deserializer over a JS value, or JSON in tests); an error is
/// `ERR_INVALID_OPTIONS` naming the option it is at (`root`, e.g. `files`, then the path inside:
/// `files[3].deletes[0].kind`, `sortBy[1].descending`), what was expected and what was given.
/// `reason` is the deserializer error's own message.
pub fn parse<'de, T, D>(root: &str, de: D, reason: impl Fn(D::Error) -> String) -> Result<T>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let at = match path.as_str() {
            "." => root.to_string(),
            p if root.is_empty() || p.starts_with('[') => format!("{root}{p}"),
            p => format!("{root}.{p}"),
        };
        let msg = js_words(&reason(e.into_inner()));
        invalid(if at.is_empty() { msg } else { format!("'{at}': {msg}") })
    })
}

/// serde's and napi's words for JS values, in JS's: a "unit value" is null or undefined (both
/// are visited as unit), a "map" an object, a "sequence" an array.
fn js_words(msg: &str) -> String {
    let mut out = msg.to_string();
    for (from, to) in [
        ("unit value", "null or undefined"),
        ("invalid type: map", "invalid type: object"),
        ("expected a sequence", "expected an array"),
        ("invalid type: sequence", "invalid type: array"),
        ("typeof Function value could not be deserialized", "invalid type: function"),
        ("typeof Symbol value could not be deserialized", "invalid type: symbol"),
    ] {
        out = out.replace(from, to);
    }
    out
}

/// The options object of `compactGeneration` and `planCompaction`, parsed (from an object only).
pub fn parse_options<'de, D: Deserializer<'de>>(de: D, reason: impl Fn(D::Error) -> String) -> Result<CompactOptions> {
    parse::<values::Obj<CompactOptions>, D>("", de, reason).map(|o| o.0)
}

/// An optional string option that must not be empty.
fn non_empty(value: &Option<String>, name: &str, what: &str) -> Result<Option<String>> {
    match value {
        Some(s) if s.is_empty() => Err(invalid(format!("'{name}' must be {what}, got an empty string"))),
        other => Ok(other.clone()),
    }
}

/// The machine's available parallelism (at least 1).
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The codec outputs take for an input codec: the same one, at its default level (zstd: 3);
/// Hadoop-framed LZ4 becomes raw LZ4; LZO, which nothing here can write, uncompressed.
pub fn output_codec(input: Compression) -> Compression {
    match input {
        Compression::ZSTD(_) => Compression::ZSTD(default_zstd()),
        Compression::GZIP(_) => Compression::GZIP(GzipLevel::default()),
        Compression::BROTLI(_) => Compression::BROTLI(BrotliLevel::default()),
        Compression::LZ4 | Compression::LZ4_RAW => Compression::LZ4_RAW,
        Compression::SNAPPY => Compression::SNAPPY,
        Compression::UNCOMPRESSED | Compression::LZO => Compression::UNCOMPRESSED,
    }
}

fn default_zstd() -> ZstdLevel {
    ZstdLevel::try_new(DEFAULT_ZSTD_LEVEL).unwrap_or_default()
}

fn invalid(msg: String) -> CompactError {
    CompactError::InvalidOptions(msg)
}

/// An integral number in [min, max], or `None` when absent.
fn integer(value: Option<values::Num>, name: &str, min: f64, max: f64) -> Result<Option<f64>> {
    match value.map(|n| n.0) {
        None => Ok(None),
        Some(n) if n.fract() == 0.0 && n >= min && n <= max => Ok(Some(n)),
        Some(n) => Err(invalid(format!("'{name}' must be an integer in [{min}, {max}], got {n}"))),
    }
}

fn compression(value: Option<&str>, level: Option<f64>) -> Result<Option<Compression>> {
    let name = match value {
        None if level.is_some() => {
            return Err(invalid("'compressionLevel' needs 'compression': without it the outputs keep the inputs' codec".into()))
        }
        None => return Ok(None),
        Some(s) => s.to_ascii_lowercase(),
    };
    let bad_level = |l: f64, range: &str| invalid(format!("'compressionLevel' {l} is out of range for {name} ({range})"));
    let codec = match name.as_str() {
        "zstd" => match level {
            None => Ok(Compression::ZSTD(default_zstd())),
            Some(l) => ZstdLevel::try_new(l as i32).map(Compression::ZSTD).map_err(|_| bad_level(l, "1..=22")),
        },
        "gzip" => match level {
            None => Ok(Compression::GZIP(GzipLevel::default())),
            Some(l) if l >= 0.0 => GzipLevel::try_new(l as u32).map(Compression::GZIP).map_err(|_| bad_level(l, "0..=9")),
            Some(l) => Err(bad_level(l, "0..=9")),
        },
        "snappy" | "lz4" | "none" | "uncompressed" if level.is_some() => {
            Err(invalid(format!("'compressionLevel' does not apply to {name}")))
        }
        "snappy" => Ok(Compression::SNAPPY),
        "lz4" => Ok(Compression::LZ4_RAW),
        "none" | "uncompressed" => Ok(Compression::UNCOMPRESSED),
        other => Err(invalid(format!("'compression' must be one of 'zstd', 'snappy', 'gzip', 'lz4', 'none'; got '{other}'"))),
    };
    codec.map(Some)
}

/// A prefix is a plain file-name stem: no path separators, no `..`, nothing hidden.
fn check_prefix(prefix: &str) -> Result<()> {
    let ok_chars = prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if prefix.is_empty() || prefix.len() > 200 || !ok_chars || prefix.starts_with('.') || prefix.contains("..") {
        return Err(invalid(format!(
            "'fileNamePrefix' must be 1-200 characters of [A-Za-z0-9._-], not starting with '.' and without '..' or path separators; got {prefix:?}"
        )));
    }
    Ok(())
}

/// A random per-call prefix, e.g. `gc-3f9a0c1d2b4e5f60`.
pub fn random_prefix() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    format!("gc-{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iceberg::partition::Transform;
    use serde_json::json;

    /// `compactGeneration`'s options from JSON, parsed and validated as the N-API layer does.
    fn options(v: serde_json::Value) -> Result<Options> {
        Options::validate(&parse_options(values::js_numbers(v), |e| e.to_string())?)
    }

    #[test]
    fn defaults_and_overrides() {
        let o = options(json!({ "outDir": "/tmp/x" })).unwrap();
        assert_eq!(o.target_file_bytes, DEFAULT_TARGET_FILE_BYTES);
        assert_eq!(o.batch_rows, 10_000);
        assert_eq!(o.compression, None);
        assert!(o.file_name_prefix.starts_with("gc-"));
        let o = options(json!({ "outDir": "/tmp/x", "compression": "snappy", "batchBytes": 1048576, "verify": false })).unwrap();
        assert_eq!(o.compression, Some(Compression::SNAPPY));
        assert_eq!(o.batch_bytes, 1 << 20);
        assert!(!o.verify);
        // null is absent, as undefined is; signal and onProgress are the N-API layer's
        let o = options(json!({ "outDir": "/tmp/x", "tmpDir": null, "signal": {}, "onProgress": null })).unwrap();
        assert_eq!(o.tmp_dir, None);
    }

    #[test]
    fn partition_spec() {
        let o = options(json!({ "outDir": "/tmp/x", "partitionBy": [{ "column": "date" }, { "column": "ts", "transform": "bucket[8]" }] }))
            .unwrap();
        assert_eq!(
            o.partition_by,
            Some(vec![
                PartitionField { column: "date".into(), transform: Transform::Identity, name: "date".into() },
                PartitionField { column: "ts".into(), transform: Transform::Bucket(8), name: "ts_bucket".into() },
            ])
        );
    }

    #[test]
    fn sort_spec() {
        let o = options(json!({
            "outDir": "/tmp/x",
            "sortBy": [{ "column": "ts" }, { "column": "n", "descending": true }, { "column": "m", "nullsFirst": false }],
            "sortOrderId": 7,
            "tmpDir": "/tmp/spill",
        }))
        .unwrap();
        assert_eq!(
            o.sort_by,
            Some(vec![
                SortKey { column: "ts".into(), descending: false, nulls_first: true },
                SortKey { column: "n".into(), descending: true, nulls_first: false },
                SortKey { column: "m".into(), descending: false, nulls_first: false },
            ])
        );
        assert_eq!(o.sort_order_id, 7);
        assert_eq!(o.tmp_dir, Some(PathBuf::from("/tmp/spill")));
    }

    #[test]
    fn rejects_bad_options() {
        // (options, words the message must hold: the option's path, what was given or expected)
        for (bad, mentions) in [
            (json!({ "outDir": 1 }), vec!["'outDir'", "1", "expected a string"]),
            (json!({}), vec!["outDir"]),
            (json!({ "outDir": null }), vec!["'outDir'", "non-empty string"]),
            (json!({ "outDir": "/x", "batchRows": 0 }), vec!["batchRows", "got 0"]),
            (json!({ "outDir": "/x", "batchRows": 1.5 }), vec!["batchRows", "got 1.5"]),
            (json!({ "outDir": "/x", "targetFileBytes": "big" }), vec!["'targetFileBytes'", "\"big\"", "expected a number"]),
            (json!({ "outDir": "/x", "compression": "lzo" }), vec!["compression", "lzo"]),
            (json!({ "outDir": "/x", "compression": "snappy", "compressionLevel": 3 }), vec!["compressionLevel", "snappy"]),
            (json!({ "outDir": "/x", "compressionLevel": 99 }), vec!["compressionLevel"]),
            (json!({ "outDir": "/x", "compressionLevel": 3 }), vec!["compressionLevel", "needs 'compression'"]),
            (json!({ "outDir": "/x", "divert": { "column": "a", "to": "/tmp/d" } }), vec!["'divert'", "equals"]),
            (json!({ "outDir": "/x", "divert": { "column": "a", "equals": null, "to": "/tmp/d" } }), vec!["'divert.equals'", "null"]),
            (
                json!({ "outDir": "/x", "divert": { "column": "a", "equals": [1], "to": "/tmp/d" } }),
                vec!["'divert.equals'", "invalid type: array"],
            ),
            (json!({ "outDir": "/x", "divert": { "column": "a", "path": [1], "equals": 1, "to": "/d" } }), vec!["'divert.path[0]'"]),
            (json!({ "outDir": "/x", "outLocation": 1 }), vec!["'outLocation'"]),
            (json!({ "outDir": "/x", "threads": 0 }), vec!["threads"]),
            (json!({ "outDir": "/x", "threads": 1.5 }), vec!["threads"]),
            (json!({ "outDir": "/x", "partitionBy": [{ "column": "a", "name": "p" }, { "column": "b", "name": "p" }] }), vec!["'p' twice"]),
            (
                json!({ "outDir": "/x", "partitionBy": [{ "column": "a", "name": 1 }] }),
                vec!["'partitionBy[0].name'", "1", "expected a string"],
            ),
            (json!({ "outDir": "/x", "fileNamePrefix": "../evil" }), vec!["fileNamePrefix", "../evil"]),
            (json!({ "outDir": "/x", "fileNamePrefix": "a/b" }), vec!["fileNamePrefix", "a/b"]),
            (json!({ "outDir": "/x", "sortBy": {} }), vec!["'sortBy'", "invalid type: object", "expected an array"]),
            (
                json!({ "outDir": "/x", "sortBy": ["ts"] }),
                vec!["'sortBy[0]'", "\"ts\"", "expected an object (SortKeyOptions in index.d.ts)"],
            ),
            (
                json!({ "outDir": "/x", "sortBy": [{ "column": "ts" }, { "column": "ts", "descending": "yes" }] }),
                vec!["'sortBy[1].descending'", "\"yes\"", "a boolean"],
            ),
            (
                json!({ "outDir": "/x", "sortBy": [{ "column": "ts", "order": "asc" }] }),
                vec!["'sortBy[0].order'", "unknown field `order`", "nullsFirst"],
            ),
            (json!({ "outDir": "/x", "sortOrderId": 3 }), vec!["sortOrderId", "sortBy"]),
            (json!({ "outDir": "/x", "sortOrderId": -1 }), vec!["sortOrderId", "got -1"]),
            (json!({ "outDir": "/x", "tmpDir": 1 }), vec!["'tmpDir'"]),
            (json!({ "outDir": "/x", "dedupeBy": "" }), vec!["dedupeBy", "empty"]),
            (json!({ "outDir": "/x", "dedupeBy": 1 }), vec!["'dedupeBy'"]),
            (json!({ "outDir": "/x", "verify": "yes" }), vec!["'verify'", "\"yes\"", "a boolean"]),
            (json!({ "outDir": "/x", "partitionBy": {} }), vec!["'partitionBy'"]),
            (json!({ "outDir": "/x", "partitionBy": [["date"]] }), vec!["'partitionBy[0]'", "invalid type: array", "expected an object"]),
            (json!({ "outDir": "/x", "sortBy": [["ts", true]] }), vec!["'sortBy[0]'", "invalid type: array", "expected an object"]),
            (json!({ "outDir": "/x", "divert": ["a", null, 1, "/d"] }), vec!["'divert'", "invalid type: array", "expected an object"]),
            (json!({ "outDir": "/x", "plan": [["a"], []] }), vec!["'plan'", "invalid type: array", "expected an object"]),
            (json!(["/x"]), vec!["invalid type: array", "expected an object (CompactOptions in index.d.ts)"]),
            (json!({ "outDir": "/x", "partitionBy": ["date"] }), vec!["'partitionBy[0]'"]),
            (
                json!({ "outDir": "/x", "partitionBy": [{ "column": "ts", "transform": "days" }] }),
                vec!["'partitionBy[0].transform'", "days"],
            ),
            (json!({ "outDir": "/x", "partitionBy": [{ "transform": "day" }] }), vec!["'partitionBy[0]'", "column"]),
            (json!({ "outDir": "/x", "targetFileByte": 1e6 }), vec!["unknown field `targetFileByte`", "targetFileBytes"]),
        ] {
            let err = options(bad.clone()).unwrap_err();
            assert_eq!(err.code(), "ERR_INVALID_OPTIONS", "{bad}");
            let msg = err.to_string();
            for m in mentions {
                assert!(msg.contains(m), "{bad}: {msg:?} does not mention {m:?}");
            }
        }
    }

    #[test]
    fn bigints_only_where_the_contract_takes_them() {
        // serde_json visits 10 as napi visits 10n (a u64): refused by number options...
        let raw = |v: serde_json::Value| parse_options(v, |e| e.to_string()).and_then(|o| Options::validate(&o));
        for (bad, at) in [
            (json!({ "outDir": "/x", "batchRows": 10 }), "'batchRows'"),
            (json!({ "outDir": "/x", "divert": { "column": "a", "equals": 10, "to": "/d" } }), "'divert.equals'"),
        ] {
            let msg = raw(bad).unwrap_err().to_string();
            assert!(msg.contains(at) && msg.contains("invalid type: bigint 10, expected a"), "{msg}");
        }
        // ...and taken by counts and partition values
        let f =
            parse::<Vec<values::FileArg>, _>("files", json!([{ "path": "/a", "fileSizeInBytes": 10, "partition": { "d": 10 } }]), |e| {
                e.to_string()
            })
            .and_then(|f| plan_inputs(&f))
            .unwrap();
        assert_eq!((f[0].bytes, f[0].partition.clone()), (Some(10), Some(vec![("d".into(), Key::Int(10))])));
    }

    #[test]
    fn files_entries() {
        let files = |v: serde_json::Value| {
            parse::<Vec<values::FileArg>, _>("files", values::js_numbers(v), |e| e.to_string()).and_then(|f| plan_inputs(&f))
        };
        let ok = files(json!([
            "/tmp/a.parquet",
            { "path": "/tmp/b.parquet", "location": "s3://t/b.parquet", "fileSizeInBytes": 10, "recordCount": 3,
              "partition": { "day": 19000, "name": "x", "flag": true, "none": null, "f": 1.5 }, "sortOrderId": 1, "rewrite": true,
              "deletes": [{ "kind": "position", "path": "/tmp/p" }, { "kind": "deletion-vector", "path": "/tmp/v", "offset": 4, "length": 40 },
                          { "kind": "equality", "path": "/tmp/e", "fieldIds": [1, 2] }] }
        ]))
        .unwrap();
        assert_eq!(ok[1].file.location, "s3://t/b.parquet");
        assert_eq!(ok[1].file.deletes.len(), 3);
        assert_eq!((ok[1].bytes, ok[1].sort_order_id, ok[1].rewrite), (Some(10), Some(1), true));
        assert_eq!(
            ok[1].partition,
            Some(vec![
                ("day".into(), Key::Int(19000)),
                ("name".into(), Key::Text("x".into())),
                ("flag".into(), Key::Bool(true)),
                ("none".into(), Key::Null),
                ("f".into(), Key::of_number(1.5)),
            ])
        );
        for (bad, mention) in [
            (json!("a"), "'files'"),
            (json!(["/a", 42]), "'files[1]'"),
            (json!([{ "location": "/a" }]), "missing field `path`"),
            (json!([{ "path": "/a", "size": 1 }]), "unknown field `size`"),
            (json!([{ "path": "/a", "deletes": [{ "kind": "bogus", "path": "/d" }] }]), "'files[0].deletes[0].kind'"),
            (
                json!([{ "path": "/a", "deletes": [{ "kind": "deletion-vector", "path": "/d", "length": 10 }] }]),
                "'files[0].deletes[0].offset'",
            ),
            (
                json!([{ "path": "/a", "deletes": [{ "kind": "position", "path": "/d", "offset": 1 }] }]),
                "unexpected 'offset' for kind 'position'",
            ),
            (
                json!([{ "path": "/a", "deletes": [{ "kind": "equality", "path": "/d", "fieldIds": [] }] }]),
                "'files[0].deletes[0].fieldIds'",
            ),
            (json!([{ "path": "/a", "deletes": [["position", "/d"]] }]), "'files[0].deletes[0]': invalid type: array, expected an object"),
            (json!([["/a"]]), "'files[0]': invalid type: array"),
            (
                json!([{ "path": "/a", "deletes": [{ "kind": "equality", "path": "/d", "fieldIds": [1.5] }] }]),
                "'files[0].deletes[0].fieldIds[0]'",
            ),
            (json!([{ "path": "/a", "fileSizeInBytes": -1 }]), "'files[0].fileSizeInBytes'"),
            (json!([{ "path": "/a", "recordCount": 1.5 }]), "'files[0].recordCount'"),
            (json!([{ "path": "/a", "partition": { "d": [1] } }]), "'files[0].partition.d'"),
            (json!([{ "path": "/a", "sortOrderId": -1 }]), "files[0].sortOrderId"),
            (json!(["/a", "/a"]), "files[1]"),
        ] {
            let err = files(bad.clone()).unwrap_err();
            assert_eq!(err.code(), "ERR_INVALID_OPTIONS", "{bad}");
            assert!(err.to_string().contains(mention), "{bad}: {err} does not mention {mention:?}");
        }
    }
}
