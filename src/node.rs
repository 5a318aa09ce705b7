//! The N-API layer, kept thin: parses the JS arguments into the typed contract
//! (`options::contract`, with napi's serde deserializer), hands the work to a blocking thread
//! of the addon's tokio runtime (not libuv's pool), wires AbortSignal and the progress
//! callback, and turns the outcome into a resolved result or an `Error` with our `code`.
//! Memory: the parsed arguments (the options and the `files` list), copied once out of JS.

use crate::compact::{run_guarded, Progress};
use crate::error::CompactError;
use crate::gate::Gate;
use crate::node_result::{to_js, CompactResult};
use crate::options::contract::CompactOptions;
use crate::options::values::{FileArg, Obj};
use crate::options::{parse, Options};
use crate::report::Phase;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, ValueType};
use napi_derive::napi;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The phases of a call, in order, as `ProgressEvent.phase` reports them.
#[napi(string_enum = "lowercase")]
pub enum ProgressPhase {
    Plan,
    Write,
    Verify,
    Done,
}

/// `err.code` of a rejected call (README: the API section's errors).
#[napi(string_enum)]
pub enum ErrorCode {
    /// An option or `files` entry is invalid; the message names it, what was expected and what was given.
    #[napi(value = "ERR_INVALID_OPTIONS")]
    InvalidOptions,
    #[napi(value = "ERR_INPUT_NOT_FOUND")]
    InputNotFound,
    #[napi(value = "ERR_INPUT_CORRUPT")]
    InputCorrupt,
    #[napi(value = "ERR_SCHEMA_CONFLICT")]
    SchemaConflict,
    /// Including disk full.
    #[napi(value = "ERR_IO")]
    Io,
    #[napi(value = "ERR_ABORTED")]
    Aborted,
    #[napi(value = "ERR_VERIFY_FAILED")]
    VerifyFailed,
    /// A caught panic.
    #[napi(value = "ERR_INTERNAL")]
    Internal,
}

impl ErrorCode {
    /// The code of `e` (the same string as `CompactError::code`).
    fn of(e: &CompactError) -> ErrorCode {
        match e {
            CompactError::InvalidOptions(_) => ErrorCode::InvalidOptions,
            CompactError::InputNotFound { .. } => ErrorCode::InputNotFound,
            CompactError::InputCorrupt { .. } => ErrorCode::InputCorrupt,
            CompactError::SchemaConflict { .. } => ErrorCode::SchemaConflict,
            CompactError::Io { .. } => ErrorCode::Io,
            CompactError::Aborted => ErrorCode::Aborted,
            CompactError::VerifyFailed { .. } => ErrorCode::VerifyFailed,
            CompactError::Internal(_) => ErrorCode::Internal,
        }
    }
}

/// Progress of a running call, delivered to `onProgress` without blocking the pool.
#[napi(object)]
pub struct ProgressEvent {
    pub phase: ProgressPhase,
    pub rows_read: i64,
    pub rows_written: i64,
    pub bytes_written: i64,
    pub files_written: i64,
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
    let paths = crate::options::input_files(&parse_files(files).map_err(Prep::Compact)?).map_err(Prep::Compact)?;
    if opts.get_type()? != ValueType::Object {
        return Err(invalid("'opts' must be an object with at least 'outDir'"));
    }
    let obj: Object = unsafe { opts.cast()? };
    // `signal` and `onProgress` are taken as the JS values they are (parsing only admits the
    // keys: `values::JsOnly`).
    let signal: Unknown = obj.get_named_property("signal")?;
    let on_progress: Unknown = obj.get_named_property("onProgress")?;
    let signal = match signal.get_type()? {
        ValueType::Object => Some(signal),
        ValueType::Undefined | ValueType::Null => None,
        other => return Err(invalid(format!("'signal' must be an AbortSignal, got {}", type_name(other)))),
    };
    let on_progress = match on_progress.get_type()? {
        ValueType::Function => Some(on_progress),
        ValueType::Undefined | ValueType::Null => None,
        other => return Err(invalid(format!("'onProgress' must be a function, got {}", type_name(other)))),
    };
    let parsed: CompactOptions = parse_value::<Obj<CompactOptions>>(&obj, "").map_err(Prep::Compact)?.0;
    let options = Options::validate(&parsed).map_err(Prep::Compact)?;
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

/// The `files` argument, parsed as `Array<string | InputFile>`.
pub(crate) fn parse_files(files: &Unknown) -> std::result::Result<Vec<FileArg>, CompactError> {
    let js = |e: napi::Error| CompactError::InvalidOptions(e.reason.clone());
    if files.get_type().map_err(js)? != ValueType::Object || !files.is_array().map_err(js)? {
        return Err(CompactError::InvalidOptions("'files' must be an array of file paths or { path, location?, deletes? }".into()));
    }
    let list: Object = unsafe { files.cast().map_err(js)? };
    parse_value(&list, "files")
}

/// Parses `T` from a JS object (or array) with napi's serde deserializer; errors name the
/// option (`root` and the path below it).
pub(crate) fn parse_value<T: serde::de::DeserializeOwned>(value: &Object, root: &str) -> std::result::Result<T, CompactError> {
    parse(root, &mut napi::De::new(value), |e: napi::Error| e.reason.clone())
}

fn type_name(t: ValueType) -> String {
    format!("{t:?}").to_lowercase()
}

fn progress_event(p: &Progress) -> ProgressEvent {
    ProgressEvent {
        phase: match p.phase {
            Phase::Plan => ProgressPhase::Plan,
            Phase::Write => ProgressPhase::Write,
            Phase::Verify => ProgressPhase::Verify,
            Phase::Done => ProgressPhase::Done,
        },
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
        obj.set_named_property("code", ErrorCode::of(e))?;
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
