//! Option validation, in one place. The N-API layer hands over the JS options object as
//! loosely typed `RawValue`s; everything is checked here and turned into `Options`.
//! Memory: nothing beyond the options themselves.

mod columns;
mod files;
pub mod plan;
use columns::{divert, partition_by, sort_by};
pub use files::{input_files, plan_inputs, Key, PlanInput};

use crate::error::{CompactError, Result};
use crate::iceberg::partition::PartitionField;
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use std::path::PathBuf;

/// A JS value as the N-API layer saw it, before validation.
#[derive(Debug, Clone, PartialEq)]
pub enum RawValue {
    Undefined,
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<RawValue>),
    /// A plain object's own enumerable properties.
    Object(Vec<(String, RawValue)>),
    /// A BigInt that fits 128 bits.
    BigInt(i128),
    /// A Buffer's (or Uint8Array's) bytes.
    Bytes(Vec<u8>),
    /// Any other JS type, named (`"function"`, `"bigint"`, …).
    Other(String),
}

impl RawValue {
    fn type_name(&self) -> String {
        match self {
            RawValue::Undefined => "undefined".into(),
            RawValue::Null => "null".into(),
            RawValue::Bool(_) => "boolean".into(),
            RawValue::Number(_) => "number".into(),
            RawValue::String(_) => "string".into(),
            RawValue::Array(_) => "array".into(),
            RawValue::Object(_) => "object".into(),
            RawValue::BigInt(_) => "bigint".into(),
            RawValue::Bytes(_) => "Buffer".into(),
            RawValue::Other(t) => t.clone(),
        }
    }
}

/// Option keys of the README's API table (and `CompactOptions` in index.d.ts). `signal` and `onProgress` are consumed by the N-API layer.
pub const KNOWN_KEYS: &[&str] = &[
    "outDir",
    "targetFileBytes",
    "batchRows",
    "batchBytes",
    "sortBy",
    "sortOrderId",
    "partitionBy",
    "dedupeBy",
    "compression",
    "compressionLevel",
    "fileNamePrefix",
    "verify",
    "tmpDir",
    "divert",
    "outLocation",
    "threads",
    "signal",
    "onProgress",
    "plan",
    "keep",
    "minFileBytes",
    "maxFileBytes",
    "minInputFiles",
    "dedupeScope",
];

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

    /// Validates the raw options object: `entries` are all own enumerable keys of the JS object.
    pub fn from_raw(entries: &[(String, RawValue)]) -> Result<Self> {
        let get = |key: &str| -> RawValue { entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or(RawValue::Undefined) };
        for (key, _) in entries {
            if !KNOWN_KEYS.contains(&key.as_str()) {
                return Err(invalid(format!("unknown option '{key}'")));
            }
        }
        let out_dir = match get("outDir") {
            RawValue::String(s) if !s.is_empty() => PathBuf::from(s),
            v => return Err(invalid(format!("'outDir' must be a non-empty string, got {}", v.type_name()))),
        };
        let mut opts = Options::new(out_dir);
        if let Some(n) = integer(&get("targetFileBytes"), "targetFileBytes", 1024.0, MAX_SAFE_INTEGER)? {
            opts.target_file_bytes = n as u64;
        }
        if let Some(n) = integer(&get("batchRows"), "batchRows", 1.0, 1.0e9)? {
            opts.batch_rows = n as usize;
        }
        if let Some(n) = integer(&get("batchBytes"), "batchBytes", 1024.0, 16.0 * 1024.0 * 1024.0 * 1024.0)? {
            opts.batch_bytes = n as usize;
        }
        let level = integer(&get("compressionLevel"), "compressionLevel", -1e9, 1e9)?;
        opts.compression = compression(&get("compression"), level)?;
        opts.divert = divert(&get("divert"))?;
        if let Some(n) = integer(&get("threads"), "threads", 1.0, 1024.0)? {
            opts.threads = n as usize;
        }
        match get("outLocation") {
            RawValue::Undefined | RawValue::Null => {}
            RawValue::String(s) if !s.is_empty() => opts.out_location = Some(s),
            v => return Err(invalid(format!("'outLocation' must be a non-empty string, got {}", v.type_name()))),
        }
        match get("fileNamePrefix") {
            RawValue::Undefined | RawValue::Null => {}
            RawValue::String(s) => {
                check_prefix(&s)?;
                opts.file_name_prefix = s;
            }
            v => return Err(invalid(format!("'fileNamePrefix' must be a string, got {}", v.type_name()))),
        }
        opts.partition_by = partition_by(&get("partitionBy"))?;
        match get("dedupeBy") {
            RawValue::Undefined | RawValue::Null => {}
            RawValue::String(s) if !s.is_empty() => opts.dedupe_by = Some(s),
            v => return Err(invalid(format!("'dedupeBy' must be a column name, got {}", v.type_name()))),
        }
        opts.sort_by = sort_by(&get("sortBy"))?;
        if let Some(n) = integer(&get("sortOrderId"), "sortOrderId", 0.0, i32::MAX as f64)? {
            if n > 0.0 && opts.sort_by.is_none() {
                return Err(invalid("'sortOrderId' claims a sort order, but no 'sortBy' was given".into()));
            }
            opts.sort_order_id = n as i32;
        }
        match get("tmpDir") {
            RawValue::Undefined | RawValue::Null => {}
            RawValue::String(s) if !s.is_empty() => opts.tmp_dir = Some(PathBuf::from(s)),
            v => return Err(invalid(format!("'tmpDir' must be a non-empty string, got {}", v.type_name()))),
        }
        // The planning rules are validated as planCompaction does (they are the plan's, not
        // the rewrite's); the plan itself is checked against `files` by the call.
        plan::plan_options(entries)?;
        opts.plan = plan::plan_selection(&get("plan"), &get("keep"), &get("dedupeScope"))?;
        match get("verify") {
            RawValue::Undefined | RawValue::Null => {}
            RawValue::Bool(b) => opts.verify = b,
            v => return Err(invalid(format!("'verify' must be a boolean, got {}", v.type_name()))),
        }
        Ok(opts)
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

fn integer(value: &RawValue, name: &str, min: f64, max: f64) -> Result<Option<f64>> {
    match value {
        RawValue::Undefined | RawValue::Null => Ok(None),
        RawValue::Number(n) if n.fract() == 0.0 && *n >= min && *n <= max => Ok(Some(*n)),
        RawValue::Number(n) => Err(invalid(format!("'{name}' must be an integer in [{min}, {max}], got {n}"))),
        v => Err(invalid(format!("'{name}' must be a number, got {}", v.type_name()))),
    }
}

fn compression(value: &RawValue, level: Option<f64>) -> Result<Option<Compression>> {
    let name = match value {
        RawValue::Undefined | RawValue::Null if level.is_some() => {
            return Err(invalid("'compressionLevel' needs 'compression': without it the outputs keep the inputs' codec".into()))
        }
        RawValue::Undefined | RawValue::Null => return Ok(None),
        RawValue::String(s) => s.to_ascii_lowercase(),
        v => return Err(invalid(format!("'compression' must be a string, got {}", v.type_name()))),
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

    fn raw(pairs: &[(&str, RawValue)]) -> Vec<(String, RawValue)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn defaults_and_overrides() {
        let o = Options::from_raw(&raw(&[("outDir", RawValue::String("/tmp/x".into()))])).unwrap();
        assert_eq!(o.target_file_bytes, DEFAULT_TARGET_FILE_BYTES);
        assert_eq!(o.batch_rows, 10_000);
        assert_eq!(o.compression, None);
        assert!(o.file_name_prefix.starts_with("gc-"));
        let o = Options::from_raw(&raw(&[
            ("outDir", RawValue::String("/tmp/x".into())),
            ("compression", RawValue::String("snappy".into())),
            ("batchBytes", RawValue::Number(1048576.0)),
            ("verify", RawValue::Bool(false)),
        ]))
        .unwrap();
        assert_eq!(o.compression, Some(Compression::SNAPPY));
        assert_eq!(o.batch_bytes, 1 << 20);
        assert!(!o.verify);
    }

    #[test]
    fn partition_spec() {
        let o = Options::from_raw(&raw(&[
            ("outDir", RawValue::String("/tmp/x".into())),
            (
                "partitionBy",
                RawValue::Array(vec![
                    RawValue::Object(vec![("column".into(), RawValue::String("date".into()))]),
                    RawValue::Object(vec![
                        ("column".into(), RawValue::String("ts".into())),
                        ("transform".into(), RawValue::String("bucket[8]".into())),
                    ]),
                ]),
            ),
        ]))
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
        let key = |c: &str, extra: Vec<(String, RawValue)>| {
            let mut e = vec![("column".to_string(), RawValue::String(c.into()))];
            e.extend(extra);
            RawValue::Object(e)
        };
        let o = Options::from_raw(&raw(&[
            ("outDir", RawValue::String("/tmp/x".into())),
            (
                "sortBy",
                RawValue::Array(vec![
                    key("ts", vec![]),
                    key("n", vec![("descending".into(), RawValue::Bool(true))]),
                    key("m", vec![("nullsFirst".into(), RawValue::Bool(false))]),
                ]),
            ),
            ("sortOrderId", RawValue::Number(7.0)),
            ("tmpDir", RawValue::String("/tmp/spill".into())),
        ]))
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
        let base = ("outDir", RawValue::String("/tmp/x".into()));
        for bad in [
            vec![("outDir", RawValue::Number(1.0))],
            vec![base.clone(), ("batchRows", RawValue::Number(0.0))],
            vec![base.clone(), ("batchRows", RawValue::Number(1.5))],
            vec![base.clone(), ("targetFileBytes", RawValue::String("big".into()))],
            vec![base.clone(), ("compression", RawValue::String("lzo".into()))],
            vec![base.clone(), ("compression", RawValue::String("snappy".into())), ("compressionLevel", RawValue::Number(3.0))],
            vec![base.clone(), ("compressionLevel", RawValue::Number(99.0))],
            vec![base.clone(), ("compressionLevel", RawValue::Number(3.0))],
            vec![
                base.clone(),
                (
                    "divert",
                    RawValue::Object(vec![
                        ("column".into(), RawValue::String("a".into())),
                        ("to".into(), RawValue::String("/tmp/d".into())),
                    ]),
                ),
            ],
            vec![
                base.clone(),
                (
                    "divert",
                    RawValue::Object(vec![
                        ("column".into(), RawValue::String("a".into())),
                        ("equals".into(), RawValue::Null),
                        ("to".into(), RawValue::String("/tmp/d".into())),
                    ]),
                ),
            ],
            vec![base.clone(), ("outLocation", RawValue::Number(1.0))],
            vec![base.clone(), ("threads", RawValue::Number(0.0))],
            vec![base.clone(), ("threads", RawValue::Number(1.5))],
            vec![
                base.clone(),
                (
                    "partitionBy",
                    RawValue::Array(vec![
                        RawValue::Object(vec![
                            ("column".into(), RawValue::String("a".into())),
                            ("name".into(), RawValue::String("p".into())),
                        ]),
                        RawValue::Object(vec![
                            ("column".into(), RawValue::String("b".into())),
                            ("name".into(), RawValue::String("p".into())),
                        ]),
                    ]),
                ),
            ],
            vec![
                base.clone(),
                (
                    "partitionBy",
                    RawValue::Array(vec![RawValue::Object(vec![
                        ("column".into(), RawValue::String("a".into())),
                        ("name".into(), RawValue::Number(1.0)),
                    ])]),
                ),
            ],
            vec![base.clone(), ("fileNamePrefix", RawValue::String("../evil".into()))],
            vec![base.clone(), ("fileNamePrefix", RawValue::String("a/b".into()))],
            vec![base.clone(), ("sortBy", RawValue::Other("object".into()))],
            vec![base.clone(), ("sortBy", RawValue::Array(vec![RawValue::String("ts".into())]))],
            vec![
                base.clone(),
                (
                    "sortBy",
                    RawValue::Array(vec![RawValue::Object(vec![
                        ("column".into(), RawValue::String("ts".into())),
                        ("descending".into(), RawValue::String("yes".into())),
                    ])]),
                ),
            ],
            vec![base.clone(), ("sortOrderId", RawValue::Number(3.0))],
            vec![base.clone(), ("sortOrderId", RawValue::Number(-1.0))],
            vec![base.clone(), ("tmpDir", RawValue::Number(1.0))],
            vec![base.clone(), ("dedupeBy", RawValue::String("".into()))],
            vec![base.clone(), ("dedupeBy", RawValue::Number(1.0))],
            vec![base.clone(), ("partitionBy", RawValue::Object(vec![]))],
            vec![base.clone(), ("partitionBy", RawValue::Array(vec![RawValue::String("date".into())]))],
            vec![
                base.clone(),
                (
                    "partitionBy",
                    RawValue::Array(vec![RawValue::Object(vec![
                        ("column".into(), RawValue::String("ts".into())),
                        ("transform".into(), RawValue::String("days".into())),
                    ])]),
                ),
            ],
            vec![
                base.clone(),
                ("partitionBy", RawValue::Array(vec![RawValue::Object(vec![("transform".into(), RawValue::String("day".into()))])])),
            ],
            vec![base.clone(), ("targetFileByte", RawValue::Number(1e6))],
        ] {
            let err = Options::from_raw(&raw(&bad)).unwrap_err();
            assert_eq!(err.code(), "ERR_INVALID_OPTIONS", "{bad:?}");
        }
    }
}
