//! Facts: what planning needs to know about each file, taken from the caller where it passed
//! them (its manifests already record size, partition and sort order) and read otherwise: the
//! size from the file system, partition tuples from the footer's statistics (exact bounds whose
//! transformed values agree, no nulls) or else from the partition source columns, sortedness
//! (only with `sortBy`) from the footer's `sorting_columns`. A file is opened only for a fact a
//! rule needs that the caller did not pass.
//!
//! Memory: one footer at a time; when statistics do not settle a file's tuples, one batch of
//! its partition source columns.

use super::{decide, FileFacts, Reason, Rules};
use crate::contain::contain;
use crate::error::{CompactError, Result};
use crate::iceberg::partition::{PartitionField, PartitionValue, Partitioner, Transform};
use crate::options::SortKey;
pub use crate::options::{Key, PlanInput};
use crate::plan::{load_metadata, open_input, wide_offsets_schema};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaData;
use std::collections::HashMap;
use std::sync::Arc;

/// A tuple: per partition field (in spec order), its name and value.
pub type Tuple = Vec<(String, Key)>;

impl PlanOptions {
    /// The options `planCompaction` was given (validated by `options::plan::plan_options`).
    pub fn from_config(c: crate::options::plan::PlanConfig) -> Result<PlanOptions> {
        let rules = Rules::new(c.target, Some(c.min), Some(c.max), Some(c.min_input_files), c.sort_by.is_some())?;
        Ok(PlanOptions { rules, partition_by: c.partition_by, sort_by: c.sort_by, sort_order_id: c.sort_order_id })
    }
}

/// The layout a plan is for, and its rules.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub rules: Rules,
    pub partition_by: Option<Vec<PartitionField>>,
    pub sort_by: Option<Vec<SortKey>>,
    pub sort_order_id: i32,
}

/// One tuple's decision, as `planCompaction` returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedGroup {
    pub partition: Tuple,
    pub rewrite: bool,
    pub reasons: Vec<Reason>,
    pub rewrite_files: Vec<usize>,
    pub keep_files: Vec<usize>,
    pub expected_files: u64,
}

/// The plan of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPlan {
    pub paths: Vec<String>,
    pub due: bool,
    pub groups: Vec<PlannedGroup>,
    pub rewrite_files: usize,
    pub rewrite_bytes: u64,
    pub keep_files: usize,
    pub keep_bytes: u64,
}

/// Gathers the facts of `inputs` and decides.
pub fn plan_compaction(inputs: &[PlanInput], opts: &PlanOptions) -> Result<CompactionPlan> {
    let mut tuples: Vec<Tuple> = Vec::new();
    let mut ids: HashMap<Tuple, usize> = HashMap::new();
    let mut facts = Vec::with_capacity(inputs.len());
    for input in inputs {
        let path = &input.file.path;
        let bytes = match input.bytes {
            Some(b) => b,
            None => std::fs::metadata(path).map_err(|e| CompactError::input_open(path, &e))?.len(),
        };
        let known_sorted = opts.sort_order_id > 0 && input.sort_order_id == Some(opts.sort_order_id);
        let given = match (&opts.partition_by, &input.partition) {
            (None, _) => Some(vec![(Vec::new(), 1.0)]),
            (Some(spec), Some(values)) => given_tuple(spec, values).map(|t| vec![(t, 1.0)]),
            (Some(_), None) => None,
        };
        let need_sort = opts.sort_by.is_some() && !known_sorted;
        let (found, sorted) = if given.is_none() || need_sort {
            let file = open_input(path, u64::MAX)?;
            let meta = load_metadata(path, &file, None)?;
            let sorted = known_sorted || opts.sort_by.as_ref().is_some_and(|keys| footer_sorted(meta.metadata(), keys));
            let found = match (given, &opts.partition_by) {
                (Some(t), _) => t,
                (None, Some(spec)) => {
                    let found = file_partitions(path, &file, meta.metadata(), meta.schema(), spec)?;
                    let total = found.iter().map(|(_, n)| *n).sum::<u64>() as f64;
                    let n = found.len().max(1) as f64;
                    found.into_iter().map(|(t, rows)| (keys(&t), if total > 0.0 { rows as f64 / total } else { 1.0 / n })).collect()
                }
                (None, None) => vec![(Vec::new(), 1.0)],
            };
            (found, sorted)
        } else {
            (given.unwrap_or_default(), known_sorted)
        };
        let mut shares = Vec::with_capacity(found.len());
        for (tuple, share) in found {
            let id = *ids.entry(tuple.clone()).or_insert_with(|| {
                tuples.push(tuple);
                tuples.len() - 1
            });
            shares.push((id, share));
        }
        facts.push(FileFacts { bytes, tuples: shares, deletes: !input.file.deletes.is_empty(), sorted, forced: input.rewrite });
    }
    let d = decide(&facts, &opts.rules);
    Ok(CompactionPlan {
        paths: inputs.iter().map(|i| i.file.path.display().to_string()).collect(),
        due: d.due,
        groups: d
            .groups
            .into_iter()
            .map(|g| PlannedGroup {
                partition: tuples.get(g.tuple).cloned().unwrap_or_default(),
                rewrite: g.rewrite,
                reasons: g.reasons,
                rewrite_files: g.rewrite_files,
                keep_files: g.keep_files,
                expected_files: g.expected_files,
            })
            .collect(),
        rewrite_files: d.rewrite_files,
        rewrite_bytes: d.rewrite_bytes,
        keep_files: d.keep_files,
        keep_bytes: d.keep_bytes,
    })
}

/// The caller's tuple, when it names every field of the spec.
fn given_tuple(spec: &[PartitionField], values: &[(String, Key)]) -> Option<Tuple> {
    spec.iter().map(|f| values.iter().find(|(name, _)| *name == f.name).map(|(n, v)| (n.clone(), v.clone()))).collect()
}

/// Every row group's `sorting_columns` begin with `keys` (same columns, directions and null
/// order); a file without row groups is sorted.
pub fn footer_sorted(meta: &ParquetMetaData, keys: &[SortKey]) -> bool {
    let descr = meta.file_metadata().schema_descr();
    let leaf = |name: &str| (0..descr.num_columns()).find(|&l| descr.column(l).path().parts() == [name.to_string()]);
    let want: Option<Vec<(usize, bool, bool)>> = keys.iter().map(|k| leaf(&k.column).map(|l| (l, k.descending, k.nulls_first))).collect();
    let Some(want) = want else { return false };
    meta.row_groups().iter().all(|rg| {
        let have = rg.sorting_columns().map(|s| s.as_slice()).unwrap_or(&[]);
        have.len() >= want.len()
            && have
                .iter()
                .zip(&want)
                .all(|(h, (l, d, n))| h.column_idx >= 0 && h.column_idx as usize == *l && h.descending == *d && h.nulls_first == *n)
    })
}

/// Transforms whose result of a range's bounds bounds the results of the values between them.
fn monotonic(t: Transform) -> bool {
    !matches!(t, Transform::Bucket(_))
}

/// A typed partition tuple, as `dataFile.partition` reports it.
pub type Values = Vec<(String, PartitionValue)>;

fn keys(values: &Values) -> Tuple {
    values.iter().map(|(name, v)| (name.clone(), Key::of(v))).collect()
}

/// A file's tuples with the rows of it in each: from its footer's statistics when they settle
/// every row group, else by decoding the partition source columns.
pub fn file_partitions(
    path: &std::path::Path,
    file: &crate::guard::GuardedInput,
    meta: &ParquetMetaData,
    schema: &SchemaRef,
    spec: &[PartitionField],
) -> Result<Vec<(Values, u64)>> {
    let schema = Arc::new(wide_offsets_schema(schema));
    if let Some(found) = tuples_from_statistics(meta, &schema, spec)? {
        return Ok(found);
    }
    let mut partitioner = Partitioner::new(&schema, spec)?;
    let roots = partitioner.source_roots();
    let options = crate::plan::base_reader_options().with_schema(schema.clone());
    let reader_meta = ArrowReaderMetadata::load(file, options).map_err(|e| CompactError::corrupt(path, None, e))?;
    let mask = ProjectionMask::roots(reader_meta.parquet_schema(), roots);
    // (its pages checked as `read`'s are: `chunks`)
    let reader = crate::chunks::FileBatches::new(file, reader_meta, mask, 8192).map_err(|e| CompactError::io(path, &e))?;
    let mut counts: Vec<(usize, u64)> = Vec::new();
    for batch in reader {
        let batch =
            contain(|| batch).map_err(|p| CompactError::corrupt(path, None, p))?.map_err(|e| CompactError::corrupt(path, None, e))?;
        for id in partitioner.tuple_ids(&batch)? {
            match counts.iter_mut().find(|(t, _)| *t == id) {
                Some((_, n)) => *n += 1,
                None => counts.push((id, 1)),
            }
        }
    }
    Ok(counts.into_iter().map(|(id, n)| (tuple_of(&partitioner, id), n)).collect())
}

fn tuple_of(partitioner: &Partitioner, id: usize) -> Values {
    partitioner.tuples.get(id).cloned().unwrap_or_default()
}

/// Per tuple, the rows the statistics place in it; `None` unless they settle every row group:
/// each source column's bounds exact and free of nulls (or the chunk all null), and the
/// transformed lower and upper bounds the same tuple (equal bounds for a bucket transform).
fn tuples_from_statistics(meta: &ParquetMetaData, schema: &SchemaRef, spec: &[PartitionField]) -> Result<Option<Vec<(Values, u64)>>> {
    let groups = meta.row_groups();
    if groups.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let parquet_schema = meta.file_metadata().schema_descr();
    let mut sources: Vec<String> = Vec::new();
    for f in spec {
        if !sources.contains(&f.column) {
            sources.push(f.column.clone());
        }
    }
    let mut lows = Vec::new();
    let mut highs = Vec::new();
    let mut fields = Vec::new();
    for column in &sources {
        let Ok(converter) = StatisticsConverter::try_new(column, schema, parquet_schema) else { return Ok(None) };
        let (Ok(low), Ok(high)) = (converter.row_group_mins(groups), converter.row_group_maxes(groups)) else { return Ok(None) };
        let Some(leaf) = converter.parquet_column_index() else { return Ok(None) };
        for (i, rg) in groups.iter().enumerate() {
            let Some(stats) = rg.column(leaf).statistics() else { return Ok(None) };
            let rows = rg.num_rows().max(0) as u64;
            let all_null = stats.null_count_opt() == Some(rows) && low.is_null(i) && high.is_null(i);
            let exact =
                stats.null_count_opt() == Some(0) && stats.min_is_exact() && stats.max_is_exact() && low.is_valid(i) && high.is_valid(i);
            if !(all_null || exact) {
                return Ok(None);
            }
        }
        let Ok(index) = schema.index_of(column) else { return Ok(None) };
        fields.push(schema.field(index).clone());
        lows.push(low);
        highs.push(high);
    }
    let batch = |columns: Vec<ArrayRef>| RecordBatch::try_new(Arc::new(Schema::new(fields.clone())), columns).ok();
    let (Some(low), Some(high)) = (batch(lows.clone()), batch(highs.clone())) else { return Ok(None) };
    let mut partitioner = Partitioner::new(low.schema_ref(), spec)?;
    let low_ids = partitioner.tuple_ids(&low)?;
    let high_ids = partitioner.tuple_ids(&high)?;
    let equal_bounds = |i: usize| lows.iter().zip(&highs).all(|(l, h)| l.slice(i, 1).to_data() == h.slice(i, 1).to_data());
    let mut found: Vec<(Values, u64)> = Vec::new();
    for (i, rg) in groups.iter().enumerate() {
        if low_ids[i] != high_ids[i] || !(spec.iter().all(|f| monotonic(f.transform)) || equal_bounds(i)) {
            return Ok(None);
        }
        let tuple = tuple_of(&partitioner, low_ids[i]);
        let rows = rg.num_rows().max(0) as u64;
        match found.iter_mut().find(|(t, _)| *t == tuple) {
            Some((_, n)) => *n += rows,
            None => found.push((tuple, rows)),
        }
    }
    Ok(Some(found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_normalise_numbers_and_bytes() {
        assert_eq!(Key::of(&PartitionValue::Date(19000)), Key::of_number(19000.0));
        assert_eq!(Key::of(&PartitionValue::Long(-3)), Key::Int(-3));
        assert_eq!(Key::of(&PartitionValue::Bytes(vec![0xab, 1])), Key::Text("ab01".into()));
        assert_ne!(Key::of_number(1.5), Key::of_number(1.0));
    }

    #[test]
    fn the_callers_tuple_must_name_every_field() {
        let spec = vec![PartitionField { column: "d".into(), transform: Transform::Identity, name: "d".into() }];
        assert_eq!(given_tuple(&spec, &[("d".into(), Key::Int(1))]), Some(vec![("d".into(), Key::Int(1))]));
        assert_eq!(given_tuple(&spec, &[("x".into(), Key::Int(1))]), None);
    }
}
