//! Deletes: the Iceberg delete files that apply to the inputs — position-delete files,
//! deletion vectors (Puffin `deletion-vector-v1` blobs, see `puffin`) and equality-delete
//! files — loaded once per call into what the read stage checks each row against, so a
//! compaction never brings back a row the table deleted.
//!
//! Memory: deleted positions in compressed 64-bit Roaring bitmaps, one per input that has any;
//! equality-delete rows as one 128-bit hash each (as dedupe keeps its keys). Delete files are
//! decoded in batches bounded like data batches, each file once however many inputs share it.

use crate::budget::{estimate_row_bytes, rows_per_batch, ReadLimits};
use crate::error::check_cancel;
use crate::error::{CompactError, Result};
use crate::iceberg::input::DeleteSource;
use crate::iceberg::puffin;
use crate::plan::{base_reader_options, load_metadata, open_input, wide_offsets_schema, Plan};
use crate::unify::widen_array;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use parquet::schema::types::Type;
use roaring::RoaringTreemap;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Field ids of a position-delete file's columns (Iceberg reserved ids).
const FILE_PATH_ID: i32 = 2147483546;
const POS_ID: i32 = 2147483545;

/// The rows of one equality-delete file, as hashes of their key columns encoded like the data's.
struct EqualitySet {
    /// Top-level column names (in the plan's schema) the keys are made of.
    columns: Vec<String>,
    converter: RowConverter,
    hashes: HashSet<u128>,
}

/// What the read stage checks rows against.
pub struct DeleteIndex {
    /// Per input: deleted row positions (position files and deletion vectors together).
    positions: Vec<Option<RoaringTreemap>>,
    equality: Vec<EqualitySet>,
    /// Per input: the equality sets that apply to it.
    by_input: Vec<Vec<usize>>,
    keys: (RandomState, RandomState),
}

impl DeleteIndex {
    /// Reads every delete file the inputs name, once each. `None` when no input has deletes.
    pub fn load(plan: &Plan, limits: &ReadLimits, cancel: &AtomicBool) -> Result<Option<DeleteIndex>> {
        if plan.inputs.iter().all(|i| i.deletes.is_empty()) {
            return Ok(None);
        }
        let n = plan.inputs.len();
        let mut index = DeleteIndex {
            positions: vec![None; n],
            equality: Vec::new(),
            by_input: vec![Vec::new(); n],
            keys: (RandomState::new(), RandomState::new()),
        };
        // Each position file: the inputs that list it, by location.
        let mut position_files: Vec<(PathBuf, HashMap<String, Vec<usize>>)> = Vec::new();
        let mut vectors = puffin::VectorFiles::default();
        let mut equality_files: Vec<(PathBuf, Vec<i32>)> = Vec::new();
        for (i, input) in plan.inputs.iter().enumerate() {
            for source in &input.deletes {
                match source {
                    DeleteSource::Position { path } => {
                        let entry = match position_files.iter_mut().position(|(p, _)| p == path) {
                            Some(k) => &mut position_files[k].1,
                            None => {
                                position_files.push((path.clone(), HashMap::new()));
                                &mut position_files.last_mut().ok_or_else(|| CompactError::Internal("position files".into()))?.1
                            }
                        };
                        let inputs = entry.entry(input.location.clone()).or_default();
                        if !inputs.contains(&i) {
                            inputs.push(i);
                        }
                    }
                    DeleteSource::Vector { path, offset, length } => {
                        check_cancel(cancel)?;
                        let bitmap = vectors.read(path, *offset, *length, &input.location, limits)?;
                        index.positions[i].get_or_insert_with(RoaringTreemap::new).extend(bitmap.iter());
                    }
                    DeleteSource::Equality { path, field_ids } => {
                        let k = match equality_files.iter().position(|(p, ids)| p == path && ids == field_ids) {
                            Some(k) => k,
                            None => {
                                check_cancel(cancel)?;
                                let set = index.read_equality(plan, path, field_ids, limits, cancel)?;
                                index.equality.push(set);
                                equality_files.push((path.clone(), field_ids.clone()));
                                index.equality.len() - 1
                            }
                        };
                        if !index.by_input[i].contains(&k) {
                            index.by_input[i].push(k);
                        }
                    }
                }
            }
        }
        for (path, targets) in &position_files {
            read_positions(path, targets, &mut index.positions, limits, cancel)?;
        }
        Ok(Some(index))
    }

    /// Top-level columns (names in the plan's schema) that must be decoded to check `input`'s
    /// equality deletes.
    pub fn key_columns(&self, input: usize) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for k in self.by_input.get(input).into_iter().flatten() {
            for c in self.equality.get(*k).map(|s| s.columns.as_slice()).unwrap_or_default() {
                if !out.contains(&c.as_str()) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// Deleted positions of `input` below `rows` (what position deletes alone remove).
    pub fn positions_deleted(&self, input: usize, rows: u64) -> u64 {
        match self.positions.get(input) {
            Some(Some(b)) if rows > 0 => b.range_cardinality(0..rows),
            _ => 0,
        }
    }

    /// The positions of `input` deleted by position deletes and deletion vectors.
    pub fn positions(&self, input: usize) -> Option<&RoaringTreemap> {
        self.positions.get(input).and_then(|p| p.as_ref())
    }

    /// Which rows of `batch` (rows of input `input`) equality deletes remove; `None` when none.
    pub fn equality_deleted(&self, input: usize, batch: &RecordBatch) -> Result<Option<Vec<bool>>> {
        let n = batch.num_rows();
        let mut mask: Option<Vec<bool>> = None;
        for k in self.by_input.get(input).into_iter().flatten() {
            let Some(set) = self.equality.get(*k) else { continue };
            if set.hashes.is_empty() || n == 0 {
                continue;
            }
            let columns = set
                .columns
                .iter()
                .map(|c| {
                    batch
                        .column_by_name(c)
                        .cloned()
                        .ok_or_else(|| CompactError::Internal(format!("equality-delete column '{c}' not decoded")))
                })
                .collect::<Result<Vec<ArrayRef>>>()?;
            let rows = set.converter.convert_columns(&columns).map_err(|e| CompactError::Internal(format!("equality-delete keys: {e}")))?;
            for (i, row) in rows.iter().enumerate() {
                if set.hashes.contains(&self.hash(row.as_ref())) {
                    mask.get_or_insert_with(|| vec![false; n])[i] = true;
                }
            }
        }
        Ok(mask)
    }

    fn hash(&self, bytes: &[u8]) -> u128 {
        (u128::from(self.keys.0.hash_one(bytes)) << 64) | u128::from(self.keys.1.hash_one(bytes))
    }

    /// Reads an equality-delete file: its columns with `field_ids`, matched to the data's
    /// top-level columns by field id (by name where a file carries no field ids).
    fn read_equality(&self, plan: &Plan, path: &Path, field_ids: &[i32], limits: &ReadLimits, cancel: &AtomicBool) -> Result<EqualitySet> {
        let data_fields = plan.parquet_schema.root_schema().get_fields();
        let mut columns = Vec::with_capacity(field_ids.len());
        let mut targets: Vec<DataType> = Vec::with_capacity(field_ids.len());
        for id in field_ids {
            let root = data_fields.iter().position(|f| has_id(f, *id)).ok_or_else(|| {
                CompactError::InvalidOptions(format!(
                    "equality deletes {}: field id {id} is not a top-level column of the inputs",
                    path.display()
                ))
            })?;
            let field = plan.arrow_schema.field(root);
            if !data_fields[root].is_primitive() {
                return Err(CompactError::InvalidOptions(format!(
                    "equality deletes {}: field id {id} ('{}') is not a primitive column",
                    path.display(),
                    field.name()
                )));
            }
            columns.push(field.name().clone());
            targets.push(field.data_type().clone());
        }
        let converter = RowConverter::new(targets.iter().cloned().map(SortField::new).collect())
            .map_err(|e| CompactError::InvalidOptions(format!("equality deletes {}: {e}", path.display())))?;
        let mut set = EqualitySet { columns, converter, hashes: HashSet::new() };
        let names: Vec<String> = set.columns.clone();
        let select = |fields: &[Arc<Type>]| -> Vec<Option<usize>> {
            field_ids
                .iter()
                .zip(&names)
                .map(|(id, name)| {
                    let any_ids = fields.iter().any(|f| f.get_basic_info().has_id());
                    fields.iter().position(|f| if any_ids { has_id(f, *id) } else { f.name() == name })
                })
                .collect()
        };
        read_delete_file(path, &select, limits, cancel, |batch, found| {
            let mut arrays = Vec::with_capacity(found.len());
            for ((col, target), name) in found.iter().zip(&targets).zip(&names) {
                let a = batch.column(*col);
                arrays.push(cast_to(a, target).ok_or_else(|| {
                    CompactError::corrupt(
                        path,
                        Some(name.clone()),
                        format!("equality-delete column of type {} cannot compare with the data's {target}", a.data_type()),
                    )
                })?);
            }
            let rows = set.converter.convert_columns(&arrays).map_err(|e| CompactError::corrupt(path, None, e))?;
            for row in rows.iter() {
                set.hashes.insert(self.hash(row.as_ref()));
            }
            Ok(())
        })?;
        Ok(set)
    }
}

fn has_id(t: &Type, id: i32) -> bool {
    t.get_basic_info().has_id() && t.get_basic_info().id() == id
}

/// An equality-delete column in the data's type: the same, widened as schema evolution
/// allows, or all null.
fn cast_to(a: &ArrayRef, target: &DataType) -> Option<ArrayRef> {
    match a.data_type() {
        DataType::Null => Some(arrow_array::new_null_array(target, a.len())),
        _ => widen_array(a, target),
    }
}

/// Reads a position-delete file and adds the positions of every listed input to its bitmap.
fn read_positions(
    path: &Path,
    targets: &HashMap<String, Vec<usize>>,
    positions: &mut [Option<RoaringTreemap>],
    limits: &ReadLimits,
    cancel: &AtomicBool,
) -> Result<()> {
    let select = |fields: &[Arc<Type>]| -> Vec<Option<usize>> {
        let find = |id: i32, name: &str| fields.iter().position(|f| has_id(f, id)).or_else(|| fields.iter().position(|f| f.name() == name));
        vec![find(FILE_PATH_ID, "file_path"), find(POS_ID, "pos")]
    };
    read_delete_file(path, &select, limits, cancel, |batch, found| {
        let (file_path, pos) = (batch.column(found[0]), batch.column(found[1]));
        let file_path = match file_path.data_type() {
            DataType::LargeUtf8 => file_path.as_string::<i64>(),
            other => return Err(CompactError::corrupt(path, Some("file_path".into()), format!("expected a string column, found {other}"))),
        };
        let pos = match pos.data_type() {
            DataType::Int64 => pos.as_primitive::<Int64Type>(),
            other => return Err(CompactError::corrupt(path, Some("pos".into()), format!("expected a long column, found {other}"))),
        };
        // Rows are sorted by file_path: remember the last lookup.
        let mut last: Option<(&str, Option<&Vec<usize>>)> = None;
        for i in 0..batch.num_rows() {
            if file_path.is_null(i) || pos.is_null(i) {
                return Err(CompactError::corrupt(path, None, format!("row {i} of a batch has a null file_path or pos")));
            }
            let location = file_path.value(i);
            let inputs = match last {
                Some((l, inputs)) if l == location => inputs,
                _ => {
                    let found = targets.get(location);
                    last = Some((location, found));
                    found
                }
            };
            let p = pos.value(i);
            if p < 0 {
                return Err(CompactError::corrupt(path, Some("pos".into()), format!("negative position {p}")));
            }
            for input in inputs.into_iter().flatten() {
                if let Some(slot) = positions.get_mut(*input) {
                    slot.get_or_insert_with(RoaringTreemap::new).insert(p as u64);
                }
            }
        }
        Ok(())
    })
}

/// Streams the columns `select` picks (top-level fields of the file's schema; all must be
/// found) of a delete file, in bounded batches, to `sink(batch, column indexes in batch)`.
/// Picks, from a delete file's top-level fields, the index of each column it needs.
type ColumnPicker<'a> = dyn Fn(&[Arc<Type>]) -> Vec<Option<usize>> + 'a;

fn read_delete_file(
    path: &Path,
    select: &ColumnPicker<'_>,
    limits: &ReadLimits,
    cancel: &AtomicBool,
    mut sink: impl FnMut(&RecordBatch, &[usize]) -> Result<()>,
) -> Result<()> {
    let file = open_input(path, limits.page_cap)?;
    let own = load_metadata(path, &file, None)?;
    let descr = own.metadata().file_metadata().schema_descr_ptr();
    let fields = descr.root_schema().get_fields();
    let picked = select(fields);
    let mut roots = Vec::with_capacity(picked.len());
    for p in &picked {
        match p {
            Some(r) if fields[*r].is_primitive() => roots.push(*r),
            _ => {
                return Err(CompactError::corrupt(
                    path,
                    None,
                    "a delete file lacks a column its kind needs (by field id, else by name), or it is not primitive",
                ))
            }
        }
    }
    let wide = Arc::new(wide_offsets_schema(own.schema()));
    let meta = ArrowReaderMetadata::try_new(own.metadata().clone(), base_reader_options().with_schema(wide))
        .map_err(|e| CompactError::corrupt(path, None, e))?;
    let mut sorted = roots.clone();
    sorted.sort_unstable();
    sorted.dedup();
    // Projected batches hold the picked roots in schema order.
    let found: Vec<usize> = roots.iter().filter_map(|r| sorted.iter().position(|s| s == r)).collect();
    let leaves: Vec<bool> = (0..descr.num_columns()).map(|l| sorted.contains(&descr.get_column_root_idx(l))).collect();
    for (rg_index, rg) in meta.metadata().row_groups().iter().enumerate() {
        check_cancel(cancel)?;
        let rows = usize::try_from(rg.num_rows()).unwrap_or(0);
        if rows == 0 {
            continue;
        }
        let batch_size = rows_per_batch(estimate_row_bytes(&file, rg, Some(&leaves), &Default::default()), limits).min(rows);
        let handle = file.try_clone().map_err(|e| CompactError::input_open(path, &e))?;
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(handle, meta.clone())
            .with_row_groups(vec![rg_index])
            .with_projection(ProjectionMask::roots(&descr, sorted.iter().copied()))
            .with_batch_size(batch_size)
            .build()
            .map_err(|e| CompactError::corrupt(path, None, e))?;
        let mut reader = reader;
        loop {
            check_cancel(cancel)?;
            let batch = match crate::contain::contain(|| reader.next()) {
                Ok(None) => break,
                Ok(Some(Ok(b))) => b,
                Ok(Some(Err(e))) => return Err(CompactError::corrupt(path, None, format!("row group {rg_index}: {e}"))),
                Err(panic) => return Err(CompactError::corrupt(path, None, format!("row group {rg_index}: {panic}"))),
            };
            sink(&batch, &found)?;
        }
    }
    Ok(())
}
