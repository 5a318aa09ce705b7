//! Verify (`verify: true`): before any output gets its final name, every output is re-read from
//! disk — its footer's row count against the rows written to it, then all of its rows decoded
//! and digested (`digest`) — and the outputs together must hold exactly the rows that survived
//! reading and dedupe: the same count and the same order-independent content digest. A
//! mismatch is `ERR_VERIFY_FAILED`, and nothing is published.
//!
//! With more than one thread, each output is verified on a thread of its own as soon as it
//! closes, while later files are written (`verify_file`), and the digests are compared at the
//! end (`compare`).
//!
//! Memory: one decoded batch of one output at a time (sized as the read stage sizes batches;
//! a quarter of `batchBytes` when it runs beside writing).

use crate::budget::{estimate_row_bytes, rows_per_batch, ReadLimits};
use crate::dictionary::{schema_with_dictionaries, without_dictionaries};
use crate::digest::Digest;
use crate::error::check_cancel;
use crate::error::{CompactError, Result};
use crate::guard::GuardedInput;
use crate::plan::all_dictionary_encoded;
use crate::plan::{base_reader_options, Plan};
use crate::views::{schema_with_views, view_of};
use crate::write::{Written, WrittenFile};
use arrow_schema::{FieldRef, Schema};
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaData;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

/// How long verifying a row group waits for room before it decodes anyway.
const VERIFY_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

pub fn verify(files: &[WrittenFile], plan: &Plan, limits: &ReadLimits, expected: &Digest, cancel: &AtomicBool) -> Result<()> {
    crate::testhooks::pause("verify");
    let mut found = Digest::default();
    for f in files {
        verify_file(&f.tmp_path, f.rows, plan, limits, cancel, &mut found)?;
    }
    compare(&found, expected, files.first().map(|f| f.tmp_path.as_path()))
}

/// Verifies what a writer hands over as it goes (`Written`: each flushed row group, then
/// each closed file's footer) until the writer is done; returns the outputs' digest.
pub fn verify_as_written(written: Receiver<Written>, plan: &Plan, limits: &ReadLimits, cancel: &AtomicBool) -> Result<Digest> {
    let mut found = Digest::default();
    let mut verified: HashMap<PathBuf, usize> = HashMap::new();
    for w in written {
        match w {
            Written::RowGroup { path, meta } => {
                verify_row_group(&path, meta, plan, limits, cancel, &mut found)?;
                *verified.entry(path).or_default() += 1;
            }
            Written::Closed { path, rows, row_groups } => {
                let done = verified.remove(&path).unwrap_or(0);
                if done != row_groups {
                    return Err(fail(&path, format!("{done} of its {row_groups} row groups were verified")));
                }
                check_footer(&path, rows, Some(row_groups), plan, limits)?;
            }
        }
    }
    Ok(found)
}

/// Re-reads one closed output: its footer's row count against `rows`, then every row into
/// `found`.
pub fn verify_file(path: &Path, rows: u64, plan: &Plan, limits: &ReadLimits, cancel: &AtomicBool, found: &mut Digest) -> Result<()> {
    let meta = check_footer(path, rows, None, plan, limits)?;
    for i in 0..meta.metadata().num_row_groups() {
        digest_row_group(path, &meta, i, limits, &plan.memory, cancel, found)?;
    }
    Ok(())
}

/// Re-reads one flushed row group of an output (`meta`: the file's schema and that row group)
/// into `found`, while the file may still be written.
pub fn verify_row_group(
    path: &Path,
    meta: Arc<ParquetMetaData>,
    plan: &Plan,
    limits: &ReadLimits,
    cancel: &AtomicBool,
    found: &mut Digest,
) -> Result<()> {
    let meta = reader_metadata(meta, plan).map_err(|e| fail(path, format!("row group metadata: {e}")))?;
    digest_row_group(path, &meta, 0, limits, &plan.memory, cancel, found)
}

/// How an output is decoded for verifying: as the plan's schema, except that a string or
/// binary column is decoded as an Arrow dictionary exactly when every data page of it in the
/// output is dictionary-encoded (a fat value repeated on every row is then copied and hashed
/// once per batch, not per row; the digest of a cell is that of its value either way). Falls
/// back to the plain schema when parquet-rs does not take the dictionary types.
fn reader_metadata(meta: Arc<ParquetMetaData>, plan: &Plan) -> std::result::Result<ArrowReaderMetadata, parquet::errors::ParquetError> {
    let plain: Vec<FieldRef> = plan.arrow_schema.fields().iter().map(without_dictionaries).collect();
    let plain = Schema::new_with_metadata(plain, plan.arrow_schema.metadata().clone());
    let dictionary_leaves: HashSet<Vec<String>> = (0..meta.file_metadata().schema_descr().num_columns())
        .filter(|&leaf| {
            !meta.row_groups().is_empty() && meta.row_groups().iter().all(|rg| rg.columns().get(leaf).is_some_and(all_dictionary_encoded))
        })
        .map(|leaf| meta.file_metadata().schema_descr().column(leaf).path().parts().to_vec())
        .collect();
    // The other top-level strings and binaries as views: their values stay in the pages they
    // were decoded from, hashed there, instead of being copied into a buffer grown page by page.
    let views: HashSet<String> = plain
        .fields()
        .iter()
        .filter(|f| view_of(f.data_type()).is_some() && !dictionary_leaves.contains(std::slice::from_ref(f.name())))
        .map(|f| f.name().clone())
        .collect();
    let plain = Arc::new(schema_with_views(&plain, &views));
    if !dictionary_leaves.is_empty() {
        let (schema, _) = schema_with_dictionaries(&plain, &dictionary_leaves);
        if let Ok(m) = ArrowReaderMetadata::try_new(meta.clone(), base_reader_options().with_schema(Arc::new(schema))) {
            return Ok(m);
        }
    }
    ArrowReaderMetadata::try_new(meta, base_reader_options().with_schema(plain))
}

/// Reads a closed output's footer: its row count must be `rows` (and its row groups
/// `row_groups`, when given).
pub fn check_footer(path: &Path, rows: u64, row_groups: Option<usize>, plan: &Plan, limits: &ReadLimits) -> Result<ArrowReaderMetadata> {
    let file = File::open(path).and_then(|f| GuardedInput::new(f, limits.page_cap)).map_err(|e| CompactError::io(path, &e))?;
    let footer = ArrowReaderMetadata::load(&file, base_reader_options()).map_err(|e| fail(path, format!("unreadable: {e}")))?;
    let meta = reader_metadata(footer.metadata().clone(), plan).map_err(|e| fail(path, format!("unreadable: {e}")))?;
    let in_footer = meta.metadata().file_metadata().num_rows().max(0) as u64;
    if in_footer != rows {
        return Err(fail(path, format!("footer says {in_footer} rows, {rows} were written")));
    }
    if let Some(n) = row_groups.filter(|n| *n != meta.metadata().num_row_groups()) {
        return Err(fail(path, format!("footer lists {} row groups, {n} were verified", meta.metadata().num_row_groups())));
    }
    Ok(meta)
}

fn fail(path: &Path, msg: String) -> CompactError {
    CompactError::VerifyFailed { path: path.display().to_string(), msg }
}

/// Decodes row group `i` of `meta` from the file at `path` into `found`.
fn digest_row_group(
    path: &Path,
    meta: &ArrowReaderMetadata,
    i: usize,
    limits: &ReadLimits,
    memory: &crate::memory::Accountant,
    cancel: &AtomicBool,
    found: &mut Digest,
) -> Result<()> {
    check_cancel(cancel)?;
    let mut file = File::open(path).and_then(|f| GuardedInput::new(f, limits.page_cap)).map_err(|e| CompactError::io(path, &e))?;
    let Some(rg) = meta.metadata().row_groups().get(i) else { return Err(fail(path, format!("row group {i} missing"))) };
    // (the chunks' byte ranges, so that each page read is accounted to its chunk)
    file.check_metadata(path, meta.metadata())?;
    file.account_pages(memory);
    let per_row = estimate_row_bytes(&file, rg, None, &HashSet::new());
    let batch_size = rows_per_batch(per_row, limits);
    // Accounted: the column readers' codecs and pages, and each decoded batch while digested.
    // Beside the writer, a row group waits (a little) while the call's other stages hold too
    // much: verifying it later costs nothing but the wait.
    let codecs = crate::budget::reader_state(rg, None);
    let since = std::time::Instant::now();
    memory.wait_for(codecs + (per_row * batch_size as f64) as usize, || {
        since.elapsed() >= VERIFY_WAIT || cancel.load(std::sync::atomic::Ordering::Relaxed)
    });
    let _codecs = memory.hold(codecs);
    let mut held = memory.hold((per_row * batch_size as f64) as usize);
    // (read as the read stage reads inputs, `chunks`: ZSTD pages decompressed with the
    // thread's one context, not a codec made per column chunk)
    let reader = crate::chunks::record_reader(file, meta, i, ProjectionMask::all(), batch_size, None)
        .map_err(|e| fail(path, format!("row group {i}: {e}")))?;
    for batch in reader {
        check_cancel(cancel)?;
        let batch = batch.map_err(|e| fail(path, format!("row group {i}: {e}")))?;
        held.resize(crate::budget::held_bytes(&batch));
        found.add(&batch)?;
    }
    Ok(())
}

/// The outputs' digest (`found`) against the surviving input rows' (`expected`).
pub fn compare(found: &Digest, expected: &Digest, first: Option<&Path>) -> Result<()> {
    if found != expected {
        let path = first.map(|p| p.display().to_string()).unwrap_or_default();
        let msg = if found.rows != expected.rows {
            format!("outputs hold {} rows, {} expected", found.rows, expected.rows)
        } else {
            format!(
                "outputs hold the expected {} rows, but their content digest differs from the input rows' ({found} vs {expected})",
                found.rows
            )
        };
        return Err(CompactError::VerifyFailed { path, msg });
    }
    Ok(())
}

/// Test-only fault injection (`GENCOMPACT_TEST_FAULT`): `drop-row` drops one row and
/// `alter-row` overwrites one row with a copy of another after they were digested, as a bug in
/// the pipeline would; `verify` must catch both. `panic` panics there, as a bug would (the call
/// must reject with `ERR_INTERNAL`). Only with the `test-hooks` feature (`testhooks::fault`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    DropRow,
    AlterRow,
    Panic,
}

impl Fault {
    pub fn from_env() -> Option<Fault> {
        match crate::testhooks::fault()?.as_str() {
            "drop-row" => Some(Fault::DropRow),
            "alter-row" => Some(Fault::AlterRow),
            "panic" => Some(Fault::Panic),
            _ => None,
        }
    }

    /// Applies the fault to `batch` if it can (an alteration needs two rows); returns whether it did.
    pub fn apply(self, batch: &mut arrow_array::RecordBatch) -> Result<bool> {
        let n = batch.num_rows();
        match self {
            Fault::DropRow if n >= 1 => *batch = batch.slice(1, n - 1),
            Fault::AlterRow if n >= 2 => {
                let indices = arrow_array::UInt32Array::from_iter_values((0..n as u32 - 1).chain([0]));
                *batch =
                    arrow_select::take::take_record_batch(batch, &indices).map_err(|e| CompactError::Internal(format!("fault: {e}")))?;
            }
            Fault::Panic => panic!("gencompact-test: injected panic"),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Verify: the outputs' digest against the input rows' — from the verifier that ran beside
/// the writer, or (one thread) by re-reading every output now.
pub fn verify_outputs(
    verifier: Option<(std::sync::mpsc::Sender<Written>, std::thread::ScopedJoinHandle<'_, Result<Digest>>)>,
    files: &[WrittenFile],
    plan: &Plan,
    opts: &crate::options::Options,
    limits: &ReadLimits,
    expected: &Digest,
    cancel: &AtomicBool,
) -> Result<()> {
    if let Some((tx, handle)) = verifier {
        crate::testhooks::pause("verify");
        drop(tx);
        let found = handle
            .join()
            .map_err(|p| CompactError::Internal(format!("panic while verifying: {}", crate::contain::panic_message(&*p))))??;
        compare(&found, expected, files.first().map(|f| f.tmp_path.as_path()))
    } else if opts.verify {
        verify(files, plan, limits, expected, cancel)
    } else {
        Ok(())
    }
}
