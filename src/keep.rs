//! Keep: the files a plan (`compactGeneration`'s `plan`, a `planCompaction` result) keeps are
//! not read for their rows. They are carried into `outDir` as hard links (a copy across file
//! systems), or left in place with `keep: 'in-place'`, each reported with its `dataFile`
//! record read from its footer — bounds included, its partition from its statistics (or its
//! partition columns) — so a host that publishes a fresh directory per generation commits kept
//! and new files alike. With `dedupeBy`, their keys are read first (they count as first in
//! `files` order), so no rewritten row repeats a kept row's key.
//!
//! Memory: one footer at a time; for dedupe, one batch of one kept file's key column (the keys
//! themselves are held by the call's `Deduper`, a 128-bit hash each).

use crate::budget::ReadLimits;
use crate::contain::contain;
use crate::dedupe::Deduper;
use crate::error::{check_cancel, CompactError, Result};
use crate::iceberg::input::InputFile;
use crate::options::Options;
use crate::plan::{load_metadata, open_input};
use crate::report::{file_report, FileReport};
use crate::write::Outputs;
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::file::reader::Length;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// What a planned call carries over besides its rewrite.
#[derive(Debug, Clone, Default)]
pub struct Carry {
    /// (index into `files`, the file, the sort order id its manifest records).
    pub kept: Vec<(usize, InputFile, Option<i32>)>,
    pub in_place: bool,
    /// Kept files whose keys the rewrite must not repeat (`dedupeBy`).
    pub seed: Vec<InputFile>,
}

/// With `opts.plan`: the files to rewrite, and the kept ones to carry (`None` without a plan).
pub fn resolve_plan(files: &[InputFile], opts: &Options) -> Result<Option<(Vec<InputFile>, Carry)>> {
    let Some(selection) = &opts.plan else { return Ok(None) };
    let paths: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    let (rewrite, keep, seed) = selection.split(&paths)?;
    let pick = |list: &[usize]| list.iter().filter_map(|&i| files.get(i).cloned()).collect::<Vec<_>>();
    let carry = Carry {
        kept: keep.iter().filter_map(|&i| files.get(i).map(|f| (i, f.clone(), None))).collect(),
        in_place: selection.in_place,
        seed: pick(&seed),
    };
    Ok(Some((pick(&rewrite), carry)))
}

/// Records the `dedupeBy` keys of `files` in `deduper`, as if their rows came first.
pub fn seed_keys(deduper: &mut Deduper, key_type: &DataType, files: &[InputFile], limits: &ReadLimits, cancel: &AtomicBool) -> Result<()> {
    let name = deduper.column_name().to_string();
    for f in files {
        check_cancel(cancel)?;
        let file = open_input(&f.path, limits.page_cap)?;
        let own = load_metadata(&f.path, &file, None)?;
        let wide = std::sync::Arc::new(crate::plan::wide_offsets_schema(own.schema()));
        let meta = load_metadata(&f.path, &file, Some(wide))?;
        let corrupt = |e: String| CompactError::corrupt(&f.path, Some(name.clone()), e);
        let Ok(root) = meta.schema().index_of(&name) else {
            continue; // a file without the key column holds only null keys, which never repeat
        };
        let mask = ProjectionMask::roots(meta.parquet_schema(), [root]);
        // (its pages checked as `read`'s are: `chunks`)
        let reader = crate::chunks::FileBatches::new(&file, meta.clone(), mask, limits.batch_rows).map_err(|e| corrupt(e.to_string()))?;
        for batch in reader {
            check_cancel(cancel)?;
            let batch = contain(|| batch).map_err(corrupt)?.map_err(|e| corrupt(e.to_string()))?;
            let column = crate::unify::widen_array(batch.column(0), key_type)
                .ok_or_else(|| corrupt(format!("key column of type {} where the rewrite's is {key_type}", batch.column(0).data_type())))?;
            let schema = std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(&name, key_type.clone(), true)]));
            let keys = arrow_array::RecordBatch::try_new(schema, vec![column]).map_err(|e| corrupt(e.to_string()))?;
            deduper.first_occurrences(&keys)?;
        }
    }
    Ok(())
}

/// Carries the kept files (linked into `outDir` through `outputs`, so removed again if the
/// call fails, or left in place) and reports each with the index of its input.
pub fn carry(carry: &Carry, opts: &Options, outputs: &mut Outputs, cancel: &AtomicBool) -> Result<Vec<(usize, FileReport)>> {
    let mut taken: HashSet<PathBuf> = HashSet::new();
    let mut out = Vec::with_capacity(carry.kept.len());
    for (index, input, sort_order_id) in &carry.kept {
        check_cancel(cancel)?;
        let file = open_input(&input.path, u64::MAX)?;
        let size = file.len();
        let meta = load_metadata(&input.path, &file, None)?;
        let rows = meta.metadata().file_metadata().num_rows().max(0) as u64;
        let (path, location) = if carry.in_place {
            (input.path.clone(), input.location.clone())
        } else {
            let to = free_name(opts, &input.path, *index, &mut taken);
            link_or_copy(&input.path, &to, outputs)?;
            let location = crate::report::data_file_location(opts.out_location.as_deref(), &to.display().to_string());
            (to, location)
        };
        let mut report = file_report(&path, size, rows, meta.metadata());
        report.location = location;
        if let Some(spec) = &opts.partition_by {
            let found = crate::planning::facts::file_partitions(&input.path, &file, meta.metadata(), meta.schema(), spec)?;
            match found.as_slice() {
                [] => {}
                [(values, _)] => report.partition = values.clone(),
                _ => {
                    return Err(CompactError::InvalidOptions(format!(
                        "'plan' keeps files[{index}] ({}), which holds rows of several partition tuples",
                        input.path.display()
                    )))
                }
            }
        }
        report.sort_order_id = match (sort_order_id, &opts.sort_by) {
            (Some(id), _) => *id,
            (None, Some(keys)) if crate::planning::facts::footer_sorted(meta.metadata(), keys) => opts.sort_order_id,
            _ => 0,
        };
        out.push((*index, report));
    }
    if !carry.in_place && !carry.kept.is_empty() {
        crate::dirs::sync_dir(&opts.out_dir)?;
    }
    Ok(out)
}

/// A plan that rewrites nothing: the kept files carried in a transaction of their own.
pub fn carry_alone(carry: Option<&Carry>, opts: &Options, cancel: &AtomicBool) -> Result<Vec<(usize, FileReport)>> {
    let Some(carry) = carry.filter(|c| !c.kept.is_empty()) else { return Ok(Vec::new()) };
    let mut outputs = Outputs::new(&opts.out_dir, &opts.file_name_prefix)?;
    let kept = self::carry(carry, opts, &mut outputs, cancel)?;
    check_cancel(cancel)?;
    outputs.commit();
    Ok(kept)
}

/// The kept file's own name in `outDir`, unless taken (by an earlier kept file, or a file
/// already there): then `<prefix>-kept-<index>.parquet`.
fn free_name(opts: &Options, from: &Path, index: usize, taken: &mut HashSet<PathBuf>) -> PathBuf {
    let own = from.file_name().map(|n| opts.out_dir.join(n));
    let to = match own {
        Some(p) if !taken.contains(&p) && !p.exists() => p,
        _ => opts.out_dir.join(format!("{}-kept-{index:05}.parquet", opts.file_name_prefix)),
    };
    taken.insert(to.clone());
    to
}

/// A hard link, or a copy where the file systems differ (never replacing a file); `outputs`
/// removes it again unless the call commits.
fn link_or_copy(from: &Path, to: &Path, outputs: &mut Outputs) -> Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => {
            outputs.adopt(to.to_path_buf());
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(CompactError::io(to, &e)),
        Err(_) => {
            let mut src = std::fs::File::open(from).map_err(|e| CompactError::input_open(from, &e))?;
            let mut dst = std::fs::OpenOptions::new().write(true).create_new(true).open(to).map_err(|e| CompactError::io(to, &e))?;
            outputs.adopt(to.to_path_buf());
            std::io::copy(&mut src, &mut dst).map_err(|e| CompactError::io(to, &e))?;
            dst.sync_all().map_err(|e| CompactError::io(to, &e))
        }
    }
}
