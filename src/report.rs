//! Report: the call's result, derived from the footers the writer produced (no second pass
//! over the data). Memory: one entry per output file and top-level column.

use crate::iceberg::metrics::{column_bounds, BoundValue};
use crate::iceberg::partition::PartitionValue;
use crate::plan::Plan;
use crate::spill::SpillFigures;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;

/// The phases `onProgress` reports, in order (`ProgressPhase` in index.d.ts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Plan,
    Write,
    Verify,
    Done,
}

/// Progress of a running call (`onProgress`).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub phase: Phase,
    pub rows_read: u64,
    pub rows_written: u64,
    pub bytes_written: u64,
    pub files_written: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnReport {
    pub name: String,
    pub field_id: Option<i32>,
    pub column_size_bytes: u64,
    pub value_count: u64,
    pub null_value_count: u64,
    /// Floats only, when the writer recorded NaN counts.
    pub nan_value_count: Option<u64>,
    /// Primitive columns only: typed bound and its Iceberg single-value bytes.
    pub lower_bound: Option<(BoundValue, Vec<u8>)>,
    pub upper_bound: Option<(BoundValue, Vec<u8>)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FileReport {
    pub path: String,
    /// The file's location for its Iceberg DataFile (`outLocation` + name, else the absolute path).
    pub location: String,
    /// The file's partition tuple: (partition field name, transformed value).
    pub partition: Vec<(String, PartitionValue)>,
    pub record_count: u64,
    pub file_size_in_bytes: u64,
    pub row_groups: u32,
    pub split_offsets: Vec<u64>,
    pub sort_order_id: i32,
    pub columns: Vec<ColumnReport>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompactReport {
    pub files: Vec<FileReport>,
    pub input_files: u32,
    pub rows_read: u64,
    /// Rows removed by the table's deletes.
    pub rows_deleted: u64,
    pub rows_written: u64,
    pub duplicates_dropped: u64,
    /// The divert side file and its rows, when `divert` was given.
    pub diverted: Option<(String, u64)>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub elapsed_ms: f64,
    /// Sorted runs spilled to disk, and their bytes (Rust callers and benchmarks).
    pub files_spilled: u64,
    pub bytes_spilled: u64,
    pub intermediate_merges: u64,
    /// Intermediate merges that ran beside another (`threads` > 1).
    pub concurrent_merges: u64,
    /// The most merge passes one tuple's spilled runs took (0: nothing spilled).
    pub merge_passes: u64,
    /// Runs spilled from sort buffers that held fat values squeezed (`squeeze`).
    pub squeezed_runs: u64,
    /// The most bytes of run files on disk at once.
    pub spill_peak_bytes: u64,
    /// The call's accounted peak memory (`memory::Accountant::peak`).
    pub peak_memory_bytes: u64,
    /// Files a plan kept (carried into outDir or left in place), with their index in `files`.
    pub kept: Vec<(usize, FileReport)>,
}

/// A closed file's report, from the footer its writer produced (the footer itself is then
/// dropped: a call with many output files keeps one report each, not their footers).
pub fn file_report(final_path: &std::path::Path, size: u64, rows: u64, meta: &ParquetMetaData) -> FileReport {
    let split_offsets = meta
        .row_groups()
        .iter()
        .filter_map(|rg| rg.file_offset().or_else(|| rg.columns().first().map(|c| c.byte_range().0 as i64)))
        .map(|o| o.max(0) as u64)
        .collect();
    FileReport {
        path: final_path.display().to_string(),
        location: final_path.display().to_string(),
        partition: Vec::new(),
        record_count: rows,
        file_size_in_bytes: size,
        row_groups: meta.num_row_groups() as u32,
        split_offsets,
        sort_order_id: 0,
        columns: column_reports(meta),
    }
}

/// Per top-level field: summed over its leaf columns and row groups. `valueCount` and
/// `nullValueCount` are those of the field's first leaf (for a primitive field, the field
/// itself; for a group, the leaf's levels reflect the group's rows and nulls).
fn column_reports(meta: &ParquetMetaData) -> Vec<ColumnReport> {
    let descr = meta.file_metadata().schema_descr();
    let fields = descr.root_schema().get_fields();
    let mut out: Vec<ColumnReport> = fields
        .iter()
        .map(|f| ColumnReport {
            name: f.name().to_string(),
            field_id: f.get_basic_info().has_id().then(|| f.get_basic_info().id()),
            column_size_bytes: 0,
            value_count: 0,
            null_value_count: 0,
            nan_value_count: None,
            lower_bound: None,
            upper_bound: None,
        })
        .collect();
    let mut first_leaf = vec![usize::MAX; fields.len()];
    for leaf in 0..descr.num_columns() {
        let root = descr.get_column_root_idx(leaf);
        if first_leaf.get(root) == Some(&usize::MAX) {
            first_leaf[root] = leaf;
        }
    }
    for (root, field) in fields.iter().enumerate() {
        let leaf = first_leaf[root];
        if field.is_primitive() && leaf != usize::MAX {
            let (bounds, nan) = column_bounds(meta, leaf);
            if let Some(report) = out.get_mut(root) {
                report.nan_value_count = nan;
                if let Some(b) = bounds {
                    report.lower_bound = b.lower;
                    report.upper_bound = b.upper;
                }
            }
        }
    }
    for rg in meta.row_groups() {
        for (leaf, col) in rg.columns().iter().enumerate() {
            let root = descr.get_column_root_idx(leaf);
            let Some(report) = out.get_mut(root) else { continue };
            report.column_size_bytes += col.compressed_size().max(0) as u64;
            if first_leaf[root] == leaf {
                report.value_count += col.num_values().max(0) as u64;
                report.null_value_count += col.statistics().and_then(Statistics::null_count_opt).unwrap_or(0);
            }
        }
    }
    out
}

/// What a call did besides writing its files, for its report.
#[derive(Default)]
pub struct Outcome {
    pub rows_read: u64,
    pub rows_deleted: u64,
    pub rows_written: u64,
    pub duplicates_dropped: u64,
    pub diverted: Option<(String, u64)>,
    pub spill: SpillFigures,
    pub peak_memory_bytes: u64,
    pub kept: Vec<(usize, FileReport)>,
    pub elapsed_ms: f64,
}

/// The call's report, built once: its inputs (`plan`; none for a call that read nothing), its
/// output files (described: `describe_files`) and what it did.
pub fn build_report(plan: Option<&Plan>, files: Vec<FileReport>, outcome: Outcome) -> CompactReport {
    let bytes_written = files.iter().map(|f| f.file_size_in_bytes).sum();
    let Outcome { rows_read, rows_deleted, rows_written, duplicates_dropped, diverted, spill, peak_memory_bytes, kept, elapsed_ms } =
        outcome;
    CompactReport {
        files,
        input_files: plan.map(|p| p.inputs.len() as u32).unwrap_or(0),
        rows_read,
        rows_deleted,
        rows_written,
        duplicates_dropped,
        diverted,
        bytes_read: plan.map(|p| p.total_file_bytes).unwrap_or(0),
        bytes_written,
        elapsed_ms,
        files_spilled: spill.runs,
        bytes_spilled: spill.bytes,
        intermediate_merges: spill.intermediate_merges,
        concurrent_merges: spill.concurrent_merges,
        merge_passes: spill.merge_passes,
        squeezed_runs: spill.squeezed_runs,
        spill_peak_bytes: spill.peak_bytes,
        peak_memory_bytes,
        kept,
    }
}

/// `dataFile.file_path`: `outLocation` + the file name, else the absolute path.
pub fn data_file_location(prefix: Option<&str>, path: &str) -> String {
    let path = std::path::Path::new(path);
    match prefix {
        Some(prefix) => {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if prefix.ends_with('/') {
                format!("{prefix}{name}")
            } else {
                format!("{prefix}/{name}")
            }
        }
        None => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string(),
    }
}
