//! Order: the sort keys of `sortBy` — their columns, the `arrow-row` converter that orders rows
//! by them, the `sorting_columns` a sorted output declares — and the check of whether rows
//! already arrive in that order (`OrderCheck`), which decides a tuple's route (`route`).
//!
//! Memory: the key columns of one batch; one key per tuple and two per row group and tuple.

use crate::error::{CompactError, Result};
use crate::options::SortKey;
use crate::plan::Plan;
use arrow_array::RecordBatch;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType, SchemaRef, SortOptions};
use parquet::file::metadata::SortingColumn;

/// The sort keys' columns: top-level, non-nested columns of the unified schema.
pub fn key_columns(schema: &SchemaRef, keys: &[SortKey]) -> Result<Vec<(usize, SortOptions)>> {
    keys.iter()
        .map(|k| {
            let index = crate::unify::option_column(schema, "sortBy", &k.column)?;
            let data_type = schema.field(index).data_type();
            if data_type.is_nested() || matches!(data_type, DataType::Dictionary(..)) {
                return Err(CompactError::InvalidOptions(format!(
                    "'sortBy' column '{}' is of nested type {data_type}; sort keys must be primitive columns",
                    k.column
                )));
            }
            Ok((index, SortOptions { descending: k.descending, nulls_first: k.nulls_first }))
        })
        .collect()
}

/// The sort keys' columns and the `arrow-row` converter that orders rows by them.
pub(crate) fn key_converter(schema: &SchemaRef, keys: &[SortKey]) -> Result<(Vec<(usize, SortOptions)>, RowConverter)> {
    let columns = key_columns(schema, keys)?;
    let fields = columns.iter().map(|(i, o)| SortField::new_with_options(schema.field(*i).data_type().clone(), *o)).collect();
    let converter = RowConverter::new(fields).map_err(|e| CompactError::InvalidOptions(format!("'sortBy': {e}")))?;
    Ok((columns, converter))
}

/// The `sorting_columns` every row group of a sorted output declares: the leaf index of each
/// sort key (each a top-level primitive column, see `key_columns`).
pub fn sorting_columns(plan: &Plan, keys: &[SortKey]) -> Result<Vec<SortingColumn>> {
    let descr = &plan.parquet_schema;
    let columns = key_columns(&plan.arrow_schema, keys)?;
    columns
        .into_iter()
        .zip(keys)
        .map(|((root, options), key)| {
            let leaves: Vec<usize> = (0..descr.num_columns()).filter(|l| descr.get_column_root_idx(*l) == root).collect();
            match leaves.as_slice() {
                [leaf] => Ok(SortingColumn { column_idx: *leaf as i32, descending: options.descending, nulls_first: options.nulls_first }),
                _ => Err(CompactError::InvalidOptions(format!("'sortBy' column '{}' is not a primitive column", key.column))),
            }
        })
        .collect()
}

/// Whether rows already arrive in `sortBy` order: checked on the key columns alone, in read
/// order, before any row is written. A tuple whose surviving rows are already in order (as a
/// writer that flushes in time order leaves them when sorted by time) is streamed to the writer
/// without buffering, spilling or merging: the stable sort of rows already in order is the
/// identity, so the output is the same either way. Per row group it also records whether its
/// rows are in order and its first and last key, so that row groups already sorted on their own
/// can be merged straight from the inputs (`merge`).
///
/// Memory: the key columns of one batch; one key per tuple and two per row group and tuple.
pub struct OrderCheck {
    names: Vec<String>,
    roots: Vec<usize>,
    converter: RowConverter,
    /// Per tuple (one without `partitionBy`): the last key seen, whether all were in order,
    /// and its row groups' keys in read order.
    last: Vec<Option<arrow_row::OwnedRow>>,
    sorted: Vec<bool>,
    segments: Vec<Vec<SegmentKeys>>,
}

/// The sort keys of one tuple's rows in one row group.
#[derive(Debug, Clone)]
pub struct SegmentKeys {
    pub input: usize,
    pub row_group: usize,
    pub first: arrow_row::OwnedRow,
    pub last: arrow_row::OwnedRow,
    /// Its rows are in order.
    pub sorted: bool,
}

impl OrderCheck {
    pub fn new(schema: &SchemaRef, keys: &[SortKey]) -> Result<Self> {
        let (columns, converter) = key_converter(schema, keys)?;
        Ok(OrderCheck {
            names: columns.iter().map(|(i, _)| schema.field(*i).name().clone()).collect(),
            roots: columns.iter().map(|(i, _)| *i).collect(),
            converter,
            last: Vec::new(),
            sorted: Vec::new(),
            segments: Vec::new(),
        })
    }

    /// The top-level columns the check decodes.
    pub fn roots(&self) -> &[usize] {
        &self.roots
    }

    /// Takes the next rows in read order, all from row group `row_group` of input `input`;
    /// `tuples` gives each row's tuple (all 0 when `None`).
    pub fn observe(&mut self, batch: &RecordBatch, tuples: Option<&[usize]>, input: usize, row_group: usize) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let rows = self.keys(batch)?;
        // Per tuple, the previous row of this batch (compared in place; owned once per batch).
        let mut previous: Vec<Option<usize>> = Vec::new();
        for i in 0..n {
            let t = tuples.and_then(|ids| ids.get(i).copied()).unwrap_or(0);
            if self.sorted.len() <= t {
                self.sorted.resize(t + 1, true);
                self.last.resize(t + 1, None);
                self.segments.resize(t + 1, Vec::new());
            }
            if previous.len() <= t {
                previous.resize(t + 1, None);
            }
            let row = rows.row(i);
            let segs = &mut self.segments[t];
            let same_segment = segs.last().is_some_and(|s| s.input == input && s.row_group == row_group);
            let in_order = match previous[t] {
                Some(p) => rows.row(p) <= row,
                None => self.last[t].as_ref().is_none_or(|last| last.row() <= row),
            };
            if !in_order {
                self.sorted[t] = false;
            }
            match (same_segment, segs.last_mut()) {
                // (within a row group, the previous row of the tuple is the one compared)
                (true, Some(seg)) => seg.sorted &= in_order,
                _ => segs.push(SegmentKeys { input, row_group, first: row.owned(), last: row.owned(), sorted: true }),
            }
            previous[t] = Some(i);
        }
        for (t, p) in previous.into_iter().enumerate() {
            if let Some(p) = p {
                let row = rows.row(p).owned();
                if let Some(seg) = self.segments.get_mut(t).and_then(|s| s.last_mut()) {
                    seg.last = row.clone();
                }
                self.last[t] = Some(row);
            }
        }
        Ok(())
    }

    /// The sort keys of `batch`'s rows (comparable with the recorded `SegmentKeys`).
    pub fn keys(&self, batch: &RecordBatch) -> Result<Rows> {
        let columns = self
            .names
            .iter()
            .map(|name| {
                batch.column_by_name(name).cloned().ok_or_else(|| CompactError::Internal(format!("sort key column '{name}' not decoded")))
            })
            .collect::<Result<Vec<_>>>()?;
        self.converter.convert_columns(&columns).map_err(|e| CompactError::Internal(format!("sort keys: {e}")))
    }

    /// Whether every row of tuple `t` seen arrived in order (true for a tuple with no rows).
    pub fn in_order(&self, t: usize) -> bool {
        self.sorted.get(t).copied().unwrap_or(true)
    }

    /// Tuple `t`'s row groups with their keys, in read order (only those with rows).
    pub fn segments(&self, t: usize) -> &[SegmentKeys] {
        self.segments.get(t).map(Vec::as_slice).unwrap_or_default()
    }
}
