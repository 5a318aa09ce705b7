//! The N-API layer, kept thin: converts the JS arguments, hands the work to a blocking thread
//! of the addon's tokio runtime (not libuv's pool), wires AbortSignal and the progress
//! callback, and turns the outcome into a resolved result or an `Error` with our `code`.

use crate::compact::{run_guarded, Progress};
use crate::error::CompactError;
use crate::gate::Gate;
use crate::node_result::{to_js, CompactResult};
use crate::options::{Options, RawValue};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, ValueType};
use napi_derive::napi;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Progress of a running call, delivered to `onProgress` without blocking the pool.
#[napi(object)]
pub struct ProgressEvent {
    /// `plan`, `write`, `verify` or `done`.
    pub phase: String,
    pub rows_read: i64,
    pub rows_written: i64,
    pub bytes_written: i64,
    pub files_written: i64,
}

/// Options of `compactGeneration` (the TypeScript shape; values are validated in Rust).
#[allow(dead_code)]
#[napi(object, object_to_js = false)]
pub struct CompactOptions {
    /// Directory for the new data files; created if missing.
    pub out_dir: String,
    /// File size goal in bytes actually written. Default 128 MiB.
    pub target_file_bytes: Option<f64>,
    /// Most rows in one decoded batch; also caps a row group. Default 10,000.
    pub batch_rows: Option<f64>,
    /// Most decoded (Arrow) bytes in one batch; also caps a row group. Default 32 MiB.
    pub batch_bytes: Option<f64>,
    /// Each output file is sorted end to end by these columns (top-level primitive columns);
    /// `nullsFirst` defaults to true ascending, false descending (Iceberg's default null order).
    #[napi(ts_type = "Array<{ column: string; descending?: boolean; nullsFirst?: boolean }>")]
    pub sort_by: Option<Vec<String>>,
    /// The Iceberg sort order id reported for files sorted by `sortBy` (requires `sortBy`). Default 0.
    pub sort_order_id: Option<f64>,
    /// Directory for temporary sorted runs when a tuple does not fit `batchBytes`; default outDir.
    /// Created if missing (and removed again); run files are removed on success and failure.
    /// Each run file is one zstd stream: runs take about what the tuple's rows take compressed
    /// (`spill.bytes` in the result).
    pub tmp_dir: Option<String>,
    /// Iceberg partition spec: `transform` one of identity (default), year, month, day, hour,
    /// bucket[N], truncate[W]; `name` the partition field name (default Iceberg's: `date_day`
    /// for day(date), the column itself for identity). No output file spans two tuples.
    #[napi(ts_type = "Array<{ column: string; transform?: string; name?: string }>")]
    pub partition_by: Option<Vec<String>>,
    /// Keep the first row of each value of this column (in `files` order, then row order) and
    /// drop later ones; a null key never equals anything (every null-key row is kept).
    pub dedupe_by: Option<String>,
    /// Default: the inputs' own codec (the one holding the most input bytes; zstd at level 3
    /// when that is zstd), so the table keeps a codec its readers already decode.
    #[napi(ts_type = "'zstd' | 'snappy' | 'gzip' | 'lz4' | 'none'")]
    pub compression: Option<String>,
    /// A level for `compression` (zstd 1-22, gzip 0-9); needs `compression`.
    pub compression_level: Option<f64>,
    /// Rows whose `column` — or the value at object `path` inside a VARIANT or JSON-string
    /// column — equals `equals` are written to the side Parquet file `to` (same schema and
    /// codec; created only when a row matches; must not exist) instead of the data files.
    /// Applied after deletes, before dedupe.
    #[napi(ts_type = "{ column: string; path?: string[]; equals: string | number | boolean; to: string }")]
    pub divert: Option<String>,
    /// Location prefix for `dataFile.file_path` (e.g. the table's `file:///…/data/`); default:
    /// the output's absolute path.
    pub out_location: Option<String>,
    /// Threads this call may use (default: the machine's available parallelism); concurrent
    /// calls share the cores through the call gate. With more than one, verification runs
    /// beside writing.
    pub threads: Option<f64>,
    /// Output files are `<prefix>-<n>.parquet`. Default: random per call.
    pub file_name_prefix: Option<String>,
    /// Re-read the outputs before publishing: row counts and a content digest of every row
    /// against the surviving input rows. Default true.
    pub verify: Option<bool>,
    /// A `planCompaction` result for these `files`: only the files of its 'rewrite' groups are
    /// read and written; the files it keeps are carried into `outDir` (`result.kept`).
    #[napi(ts_type = "CompactionPlanResult")]
    pub plan: Option<String>,
    /// With `plan`: 'link' (default: hard links in outDir, a copy across file systems) or
    /// 'in-place' (kept files stay where they are).
    #[napi(ts_type = "'link' | 'in-place'")]
    pub keep: Option<String>,
    /// The planning rules (see `PlanOptions`), accepted so one object serves both calls.
    pub min_file_bytes: Option<f64>,
    pub max_file_bytes: Option<f64>,
    pub min_input_files: Option<f64>,
    /// With `plan` and `dedupeBy`: 'call' (default: no rewritten row repeats a key of any kept
    /// file) or 'tuple' (only of the kept files of its own tuple).
    #[napi(ts_type = "'call' | 'tuple'")]
    pub dedupe_scope: Option<String>,
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<String>,
    #[napi(ts_type = "(progress: ProgressEvent) => void")]
    pub on_progress: Option<String>,
}

/// A data file of the generation with the deletes that apply to it.
#[allow(dead_code)]
#[napi(object, object_to_js = false)]
pub struct InputFile {
    /// Local path to read.
    pub path: String,
    /// The file's location as the table's manifests record it (what position deletes reference
    /// in `file_path`, and deletion vectors in `referenced-data-file`). Default: `path`.
    pub location: Option<String>,
    /// The delete files that apply to this data file (the caller decides, from sequence numbers).
    pub deletes: Option<Vec<DeleteSource>>,
    /// Planning facts the caller's manifests record (read from the file when absent; used by
    /// `planCompaction` and by `compactGeneration` with a `plan`).
    #[napi(ts_type = "number | bigint")]
    pub file_size_in_bytes: Option<f64>,
    #[napi(ts_type = "number | bigint")]
    pub record_count: Option<f64>,
    /// By partition field name, typed as `dataFile.partition` (numbers, BigInts, strings,
    /// Buffers, booleans, null compare by value).
    #[napi(ts_type = "Record<string, unknown>")]
    pub partition: Option<String>,
    /// The sort order the manifest records for this file.
    pub sort_order_id: Option<f64>,
    /// The caller needs this file rewritten: its group is due (reason 'forced').
    pub rewrite: Option<bool>,
}

/// `{ kind: 'position', path }` (a position-delete Parquet file), `{ kind: 'deletion-vector',
/// path, offset, length }` (a Puffin `deletion-vector-v1` blob, located as the manifest records
/// it) or `{ kind: 'equality', path, fieldIds }` (an equality-delete Parquet file).
#[allow(dead_code)]
#[napi(object, object_to_js = false)]
pub struct DeleteSource {
    #[napi(ts_type = "'position' | 'deletion-vector' | 'equality'")]
    pub kind: String,
    pub path: String,
    pub offset: Option<f64>,
    pub length: Option<f64>,
    pub field_ids: Option<Vec<i32>>,
}

type ProgressFn = ThreadsafeFunction<ProgressEvent, (), ProgressEvent, Status, false, true>;

struct Prepared {
    files: Vec<crate::iceberg::input::InputFile>,
    options: Options,
    cancel: Arc<AtomicBool>,
    progress: Option<ProgressFn>,
}

/// The abort listener this call added to the caller's signal, removed again when the call
/// settles so a long-lived signal does not collect one listener per call.
struct AbortHook {
    signal: ObjectRef,
    listener: FunctionRef<Unknown<'static>, ()>,
}

impl AbortHook {
    fn remove(self, env: &Env) {
        let detach = || -> Result<()> {
            let signal = self.signal.get_value(env)?;
            let listener = self.listener.borrow_back(env)?;
            let remove: Function<FnArgs<(String, Unknown)>, Unknown> = signal.get_named_property("removeEventListener")?;
            remove.apply(signal, FnArgs::from(("abort".to_string(), listener.to_unknown())))?;
            Ok(())
        };
        let _ = detach();
        let _ = self.signal.unref(env);
    }
}

/// Compacts `files` (one generation, in manifest order) into new files under `opts.outDir`.
/// Runs on the addon's thread pool; the returned Promise rejects with an `Error` whose `code`
/// is one of `ERR_INVALID_OPTIONS`, `ERR_INPUT_NOT_FOUND`, `ERR_INPUT_CORRUPT`,
/// `ERR_SCHEMA_CONFLICT`, `ERR_IO`, `ERR_ABORTED`, `ERR_VERIFY_FAILED`, `ERR_INTERNAL`.
#[napi(ts_args_type = "files: Array<string | InputFile>, opts: CompactOptions", ts_return_type = "Promise<CompactResult>")]
pub fn compact_generation<'env>(env: &'env Env, files: Unknown<'env>, opts: Unknown<'env>) -> Result<PromiseRaw<'env, CompactResult>> {
    let mut hook = None;
    let prepared = match prepare(env, &files, &opts, &mut hook) {
        Ok(p) => Ok(p),
        Err(Prep::Js(e)) => return Err(e),
        Err(Prep::Compact(e)) => Err(e),
    };
    let work = async move {
        let outcome = match prepared {
            Err(e) => Err(e),
            Ok(Prepared { files, options, cancel, progress }) => {
                match Gate::global().enter(&cancel, options.threads, crate::memory::call_bound(options.batch_bytes)).await {
                    // At most `Gate::limit()` calls run at once; the rest wait above, as futures
                    // holding no thread, off the event loop.
                    Err(e) => Err(e),
                    Ok(permit) => {
                        let job = move || {
                            let report = |p: &Progress| {
                                if let Some(f) = &progress {
                                    f.call(progress_event(p), ThreadsafeFunctionCallMode::NonBlocking);
                                }
                            };
                            run_guarded(&files, &options, &cancel, &report)
                        };
                        let outcome = match tokio::task::spawn_blocking(job).await {
                            Ok(r) => r,
                            Err(e) => Err(CompactError::Internal(format!("worker failed: {e}"))),
                        };
                        drop(permit);
                        outcome
                    }
                }
            }
        };
        Ok(outcome)
    };
    env.spawn_future_with_callback(work, move |env, outcome| {
        if let Some(hook) = hook {
            hook.remove(env);
        }
        match outcome {
            Ok(report) => Ok(to_js(report)),
            Err(e) => Err(js_error(env, &e)),
        }
    })
}

enum Prep {
    Js(napi::Error),
    Compact(CompactError),
}

impl From<napi::Error> for Prep {
    fn from(e: napi::Error) -> Self {
        Prep::Js(e)
    }
}

fn invalid(msg: impl Into<String>) -> Prep {
    Prep::Compact(CompactError::InvalidOptions(msg.into()))
}

fn prepare(env: &Env, files: &Unknown, opts: &Unknown, hook: &mut Option<AbortHook>) -> std::result::Result<Prepared, Prep> {
    if files.get_type()? != ValueType::Object || !files.is_array()? {
        return Err(invalid("'files' must be an array of file paths or { path, location?, deletes? }"));
    }
    let list: Array = unsafe { files.cast()? };
    let mut items = Vec::with_capacity(list.len() as usize);
    for i in 0..list.len() {
        let item: Unknown = list.get(i)?.ok_or_else(|| invalid(format!("files[{i}] is missing")))?;
        // files[i].deletes[j].fieldIds[k]: four levels below the entry.
        items.push(raw_value_at(env, &item, 0, MAX_FILE_DEPTH)?);
    }
    let paths = crate::options::input_files(&items).map_err(Prep::Compact)?;
    if opts.get_type()? != ValueType::Object {
        return Err(invalid("'opts' must be an object with at least 'outDir'"));
    }
    let obj: Object = unsafe { opts.cast()? };
    let keys: Array = unsafe { obj.get_property_names()?.to_unknown().cast()? };
    let mut entries = Vec::new();
    let mut signal = None;
    let mut on_progress = None;
    for i in 0..keys.len() {
        let Some(key) = keys.get::<String>(i)? else { continue };
        let value: Unknown = obj.get_named_property(&key)?;
        let vt = value.get_type()?;
        match key.as_str() {
            "signal" if vt == ValueType::Object => signal = Some(value),
            "signal" if vt != ValueType::Undefined && vt != ValueType::Null => return Err(invalid("'signal' must be an AbortSignal")),
            "onProgress" if vt == ValueType::Function => on_progress = Some(value),
            "onProgress" if vt != ValueType::Undefined && vt != ValueType::Null => return Err(invalid("'onProgress' must be a function")),
            _ => {}
        }
        // The signal and callback are taken as they are above, not converted.
        let converted = if key == "signal" || key == "onProgress" {
            RawValue::Other(format!("{vt:?}").to_lowercase())
        } else {
            raw_value(env, &value)?
        };
        entries.push((key, converted));
    }
    let options = Options::from_raw(&entries).map_err(Prep::Compact)?;
    let cancel = Arc::new(AtomicBool::new(false));
    if let Some(signal) = signal {
        let signal: Object = unsafe { signal.cast()? };
        if signal.get_named_property::<bool>("aborted").unwrap_or(false) {
            return Err(Prep::Compact(CompactError::Aborted));
        }
        let flag = cancel.clone();
        let listener = env.create_function_from_closure::<Unknown, (), _>("gencompactAbort", move |_ctx| {
            flag.store(true, Ordering::SeqCst);
            Ok(())
        })?;
        let add: Function<FnArgs<(String, Unknown)>, Unknown> =
            signal.get_named_property("addEventListener").map_err(|_| invalid("'signal' must be an AbortSignal (no addEventListener)"))?;
        add.apply(signal, FnArgs::from(("abort".to_string(), listener.to_unknown())))?;
        *hook = Some(AbortHook { signal: signal.create_ref()?, listener: listener.create_ref()? });
    }
    let progress = match on_progress {
        None => None,
        Some(f) => {
            let f: Function<ProgressEvent, ()> = unsafe { f.cast()? };
            Some(f.build_threadsafe_function().callee_handled::<false>().weak::<true>().build()?)
        }
    };
    Ok(Prepared { files: paths, options, cancel, progress })
}

/// Nesting depth converted for option values (`divert: { path: [key] }` needs 2;
/// `plan: { groups: [{ partition: { name: value } }] }` needs 4).
pub(crate) const MAX_OPTION_DEPTH: usize = 5;
/// Nesting depth converted for a `files` entry.
pub(crate) const MAX_FILE_DEPTH: usize = 4;

fn raw_value(env: &Env, v: &Unknown) -> Result<RawValue> {
    raw_value_at(env, v, 0, MAX_OPTION_DEPTH)
}

pub(crate) fn raw_value_at(env: &Env, v: &Unknown, depth: usize, max: usize) -> Result<RawValue> {
    let raw = v.raw();
    if v.get_type()? == ValueType::Object && v.is_buffer()? {
        let bytes = unsafe { napi::bindgen_prelude::Buffer::from_napi_value(env.raw(), raw)? };
        return Ok(RawValue::Bytes(bytes.to_vec()));
    }
    if v.get_type()? == ValueType::Object && depth < max {
        if v.is_array()? {
            let list: Array = unsafe { v.cast()? };
            let mut items = Vec::with_capacity(list.len() as usize);
            for i in 0..list.len() {
                let item: Unknown = list.get(i)?.ok_or_else(|| napi::Error::from_reason("array hole"))?;
                items.push(raw_value_at(env, &item, depth + 1, max)?);
            }
            return Ok(RawValue::Array(items));
        }
        let obj: Object = unsafe { v.cast()? };
        let keys: Array = unsafe { obj.get_property_names()?.to_unknown().cast()? };
        let mut entries = Vec::new();
        for i in 0..keys.len() {
            let Some(key) = keys.get::<String>(i)? else { continue };
            let value: Unknown = obj.get_named_property(&key)?;
            entries.push((key, raw_value_at(env, &value, depth + 1, max)?));
        }
        return Ok(RawValue::Object(entries));
    }
    Ok(match v.get_type()? {
        ValueType::Undefined => RawValue::Undefined,
        ValueType::Null => RawValue::Null,
        ValueType::Boolean => RawValue::Bool(unsafe { bool::from_napi_value(env.raw(), raw)? }),
        ValueType::Number => RawValue::Number(unsafe { f64::from_napi_value(env.raw(), raw)? }),
        ValueType::String => RawValue::String(unsafe { String::from_napi_value(env.raw(), raw)? }),
        ValueType::BigInt => match unsafe { napi::bindgen_prelude::BigInt::from_napi_value(env.raw(), raw)? }.get_i128() {
            (n, true) => RawValue::BigInt(n),
            _ => RawValue::Other("bigint beyond 128 bits".into()),
        },
        other => RawValue::Other(format!("{other:?}").to_lowercase()),
    })
}

fn progress_event(p: &Progress) -> ProgressEvent {
    ProgressEvent {
        phase: p.phase.to_string(),
        rows_read: p.rows_read as i64,
        rows_written: p.rows_written as i64,
        bytes_written: p.bytes_written as i64,
        files_written: p.files_written as i64,
    }
}

/// A JS `Error` with our `code`, built on the JS thread and used as the rejection value.
/// The `Error` a call rejects with: `message`, `code`, and where known `path` (the file),
/// `column`, and `cause` (an `Error` with the message of the error it came from: the operating
/// system's, parquet-rs's, arrow-rs's).
pub(crate) fn js_error(env: &Env, e: &CompactError) -> napi::Error {
    let build = || -> Result<napi::Error> {
        let mut obj = env.create_error(napi::Error::new(Status::GenericFailure, e.to_string()))?;
        obj.set_named_property("code", e.code())?;
        if let Some(path) = e.path() {
            obj.set_named_property("path", path)?;
        }
        if let Some(column) = e.column() {
            obj.set_named_property("column", column)?;
        }
        if let Some(source) = std::error::Error::source(e) {
            let cause = env.create_error(napi::Error::new(Status::GenericFailure, source.to_string()))?;
            obj.set_named_property("cause", cause)?;
        }
        Ok(napi::Error::from(obj.to_unknown()))
    };
    build().unwrap_or_else(|err| err)
}
