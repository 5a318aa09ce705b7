//! Deletes: the Iceberg delete files that apply to the inputs — position-delete files,
//! deletion vectors (Puffin `deletion-vector-v1` blobs, see `puffin`) and equality-delete
//! files — loaded once per call into what the read stage checks each row against, so a
//! compaction never brings back a row the table deleted.
//!
//! Deletion vectors are joined to an input's positions as bitmaps (container by container,
//! never position by position), so a vector's cost is that of its containers, not of the
//! positions it covers. Every loop over a delete file (its batches, a vector's keys) checks the
//! call's cancel flag.
//!
//! Memory: deleted positions in compressed 64-bit Roaring bitmaps, one per input that has any;
//! equality-delete rows as one 128-bit hash each (as dedupe keeps its keys), in a hash set
//! sized once from the file's declared rows. Both are reserved from the call's accountant
//! (bitmaps as `puffin::heap_bytes` models them, hash sets as their table's bytes) before they
//! grow, and stay reserved while the call runs, so `peakMemoryBytes` covers them; a delete set
//! that would not fit the call's bound is `ERR_INVALID_OPTIONS` (`puffin::reserve`). Delete
//! files are decoded in batches bounded like data batches (accounted while held), each file
//! once however many inputs share it.

use crate::budget::{decoded_size, estimate_row_bytes, rows_per_batch, ReadLimits};
use crate::error::check_cancel;
use crate::error::{CompactError, Result};
use crate::iceberg::input::DeleteSource;
use crate::iceberg::puffin::{self, heap_bytes, reserve};
use crate::memory::{Accountant, Reservation};
use crate::plan::{base_reader_options, load_metadata, open_input, wide_offsets_schema, Plan};
use crate::unify::widen_array;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
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

/// The most bytes one position inserted into a bitmap can add by `puffin::heap_bytes`' model
/// (a new key, a new container, its value and header): reserved per position of a batch
/// before the batch is inserted, then trimmed to what the bitmaps hold.
const POSITION_BYTES: usize = 64 + 48 + 2 + 8;

/// The rows of one equality-delete file, as hashes of their key columns encoded like the data's.
struct EqualitySet {
    /// Top-level column names (in the plan's schema) the keys are made of.
    columns: Vec<String>,
    converter: RowConverter,
    hashes: HashSet<u128>,
}

/// The two seeds of the 128-bit row hashes.
type Keys = (RandomState, RandomState);

/// What the read stage checks rows against.
pub struct DeleteIndex {
    /// Per input: deleted row positions (position files and deletion vectors together).
    positions: Vec<Option<RoaringTreemap>>,
    /// Per input: the bytes of `positions` accounted in `memory` (`puffin::heap_bytes`).
    position_bytes: Vec<usize>,
    equality: Vec<EqualitySet>,
    /// Per input: the equality sets that apply to it.
    by_input: Vec<Vec<usize>>,
    keys: Keys,
    /// The bitmaps and hash sets above, reserved from the call's accountant while the index lives.
    memory: Reservation,
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
            position_bytes: vec![0; n],
            equality: Vec::new(),
            by_input: vec![Vec::new(); n],
            keys: (RandomState::new(), RandomState::new()),
            memory: plan.memory.reservation(),
        };
        let (mut rows_read, mut vectors_read) = (0u64, 0u64);
        let loaded = index.load_all(plan, limits, cancel, &mut rows_read, &mut vectors_read);
        crate::testhooks::note(|| match &loaded {
            Ok(()) => format!(
                "deletes loaded: {rows_read} delete-file rows and {vectors_read} deletion vectors, {} bytes held",
                index.memory.bytes()
            ),
            Err(e) => format!("deletes stopped ({}) after {rows_read} delete-file rows and {vectors_read} deletion vectors", e.code()),
        });
        loaded?;
        Ok(Some(index))
    }

    /// `load`'s work: every delete source of every input into the index; `rows_read` counts
    /// the delete-file rows decoded so far, `vectors_read` the deletion vectors joined.
    fn load_all(
        &mut self,
        plan: &Plan,
        limits: &ReadLimits,
        cancel: &AtomicBool,
        rows_read: &mut u64,
        vectors_read: &mut u64,
    ) -> Result<()> {
        let index = self;
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
                        let inputs = entry.entry(input.location().into_owned()).or_default();
                        if !inputs.contains(&i) {
                            inputs.push(i);
                        }
                    }
                    DeleteSource::Vector { path, offset, length } => {
                        check_cancel(cancel)?;
                        let (bitmap, held) = vectors.read(path, *offset, *length, &input.location(), limits, &plan.memory, cancel)?;
                        index.join(i, bitmap, held);
                        *vectors_read += 1;
                    }
                    DeleteSource::Equality { path, field_ids } => {
                        let k = match equality_files.iter().position(|(p, ids)| p == path && ids == field_ids) {
                            Some(k) => k,
                            None => {
                                check_cancel(cancel)?;
                                let memory = &mut index.memory;
                                let set = read_equality(plan, path, field_ids, limits, cancel, &index.keys, memory, rows_read)?;
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
            read_positions(path, targets, index, limits, &plan.memory, cancel, rows_read)?;
        }
        Ok(())
    }

    /// Joins `bitmap` (accounted by `held`) to input `input`'s deleted positions, as bitmaps.
    fn join(&mut self, input: usize, bitmap: RoaringTreemap, held: Reservation) {
        let (Some(slot), Some(bytes)) = (self.positions.get_mut(input), self.position_bytes.get_mut(input)) else { return };
        // (the union holds at most both: roaring joins container by container, a run joined
        // with a bitmap container becoming one bitmap container)
        let before = *bytes + held.bytes();
        self.memory.merge(held);
        match slot {
            Some(b) => *b |= bitmap,
            None => *slot = Some(bitmap),
        }
        let after = slot.as_ref().map(heap_bytes).unwrap_or(0);
        *bytes = after;
        let total = (self.memory.bytes() + after).saturating_sub(before);
        self.memory.resize(total);
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
        hash(&self.keys, bytes)
    }
}

fn hash(keys: &Keys, bytes: &[u8]) -> u128 {
    (u128::from(keys.0.hash_one(bytes)) << 64) | u128::from(keys.1.hash_one(bytes))
}

/// Bytes of a hash table of `u128`s with room for `items` (hashbrown's layout: buckets a power
/// of two at most 7/8 full, 16 bytes and a control byte each, plus a group of control bytes);
/// `capacity()` of a table gives its own size back.
fn table_bytes(items: usize) -> usize {
    if items == 0 {
        return 0;
    }
    let buckets = match items {
        0..4 => Some(4),
        4..8 => Some(8),
        _ => items.checked_mul(8).map(|n| n / 7).and_then(usize::checked_next_power_of_two),
    };
    buckets.and_then(|b| b.checked_mul(std::mem::size_of::<u128>() + 1)).and_then(|b| b.checked_add(16)).unwrap_or(usize::MAX)
}

/// Grows `hashes` so that `more` keys fit without another allocation, the table reserved from
/// `memory` first (the old and the new table while it rehashes) — `path`'s set refused with
/// `ERR_INVALID_OPTIONS` when it would not fit the call's bound. `held`: the table's bytes
/// accounted in `memory` so far.
fn grow_set(hashes: &mut HashSet<u128>, more: usize, held: &mut usize, memory: &mut Reservation, path: &Path) -> Result<()> {
    let needed = hashes.len().saturating_add(more);
    if needed <= hashes.capacity() {
        return Ok(());
    }
    let new = table_bytes(needed.max(hashes.capacity().saturating_add(1)));
    reserve(memory, memory.bytes().saturating_add(new), path, "the equality-delete keys")?;
    hashes.reserve(more);
    let now = table_bytes(hashes.capacity());
    memory.resize((memory.bytes() + now).saturating_sub(*held + new));
    *held = now;
    Ok(())
}

/// Reads an equality-delete file: its columns with `field_ids`, matched to the data's
/// top-level columns by field id (by name where a file carries no field ids). Its hash set is
/// reserved from `memory` (sized from the rows the file declares, grown if it holds more).
#[allow(clippy::too_many_arguments)]
fn read_equality(
    plan: &Plan,
    path: &Path,
    field_ids: &[i32],
    limits: &ReadLimits,
    cancel: &AtomicBool,
    keys: &Keys,
    memory: &mut Reservation,
    rows_read: &mut u64,
) -> Result<EqualitySet> {
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
    let mut table = 0usize;
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
    let accountant = memory.accountant().clone();
    let declared = std::cell::RefCell::new((&mut set.hashes, &mut table, memory));
    let sized = |rows: u64| -> Result<()> {
        let (hashes, table, memory) = &mut *declared.borrow_mut();
        grow_set(hashes, usize::try_from(rows).unwrap_or(usize::MAX), table, memory, path)
    };
    let converter = &set.converter;
    read_delete_file(path, &select, limits, &accountant, cancel, rows_read, &sized, |batch, found| {
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
        let rows = converter.convert_columns(&arrays).map_err(|e| CompactError::corrupt(path, None, e))?;
        let _rows_memory = accountant.hold(rows.size());
        let (hashes, table, memory) = &mut *declared.borrow_mut();
        grow_set(hashes, rows.num_rows(), table, memory, path)?;
        for row in rows.iter() {
            hashes.insert(hash(keys, row.as_ref()));
        }
        Ok(())
    })?;
    Ok(set)
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

/// Reads a position-delete file and adds the positions of every listed input to its bitmap,
/// a batch at a time: room for the batch's positions is reserved before they are inserted,
/// then trimmed to what the bitmaps they went into hold.
fn read_positions(
    path: &Path,
    targets: &HashMap<String, Vec<usize>>,
    index: &mut DeleteIndex,
    limits: &ReadLimits,
    accountant: &Accountant,
    cancel: &AtomicBool,
    rows_read: &mut u64,
) -> Result<()> {
    let mut touched: Vec<usize> = Vec::new();
    let select = |fields: &[Arc<Type>]| -> Vec<Option<usize>> {
        let find = |id: i32, name: &str| fields.iter().position(|f| has_id(f, id)).or_else(|| fields.iter().position(|f| f.name() == name));
        vec![find(FILE_PATH_ID, "file_path"), find(POS_ID, "pos")]
    };
    read_delete_file(path, &select, limits, accountant, cancel, rows_read, &|_| Ok(()), |batch, found| {
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
        let mut inputs_of = |i: usize| -> Result<Option<&Vec<usize>>> {
            if file_path.is_null(i) || pos.is_null(i) {
                return Err(CompactError::corrupt(path, None, format!("row {i} of a batch has a null file_path or pos")));
            }
            let location = file_path.value(i);
            Ok(match last {
                Some((l, inputs)) if l == location => inputs,
                _ => {
                    let found = targets.get(location);
                    last = Some((location, found));
                    found
                }
            })
        };
        // (first the positions this batch may add, reserved; then the positions)
        let mut adding = 0usize;
        touched.clear();
        for i in 0..batch.num_rows() {
            if let Some(inputs) = inputs_of(i)? {
                adding = adding.saturating_add(inputs.len());
                touched.extend(inputs.iter().copied().filter(|k| index.positions.get(*k).is_some()));
            }
        }
        touched.sort_unstable();
        touched.dedup();
        if adding == 0 {
            return Ok(());
        }
        let before = index.memory.bytes();
        reserve(&mut index.memory, before.saturating_add(adding.saturating_mul(POSITION_BYTES)), path, "the deleted positions")?;
        for i in 0..batch.num_rows() {
            let p = pos.value(i);
            if p < 0 {
                return Err(CompactError::corrupt(path, Some("pos".into()), format!("negative position {p}")));
            }
            for input in inputs_of(i)?.into_iter().flatten() {
                if let Some(slot) = index.positions.get_mut(*input) {
                    slot.get_or_insert_with(RoaringTreemap::new).insert(p as u64);
                }
            }
        }
        // (back to what was held before the batch, with the touched bitmaps as they are now)
        let mut held = before;
        for k in &touched {
            let (Some(bitmap), Some(bytes)) = (index.positions.get(*k), index.position_bytes.get_mut(*k)) else { continue };
            let now = bitmap.as_ref().map(heap_bytes).unwrap_or(0);
            held = held.saturating_sub(*bytes).saturating_add(now);
            *bytes = now;
        }
        index.memory.resize(held);
        Ok(())
    })
}

/// Streams the columns `select` picks (top-level fields of the file's schema; all must be
/// found) of a delete file, in bounded batches, to `sink(batch, column indexes in batch)`.
/// Picks, from a delete file's top-level fields, the index of each column it needs.
type ColumnPicker<'a> = dyn Fn(&[Arc<Type>]) -> Vec<Option<usize>> + 'a;

/// `declared(rows)` is told the rows the file's footer declares before any batch is read;
/// `rows_read` counts the rows decoded. Each batch is accounted in `memory` while the sink
/// holds it; the cancel flag is checked before each.
#[allow(clippy::too_many_arguments)]
fn read_delete_file(
    path: &Path,
    select: &ColumnPicker<'_>,
    limits: &ReadLimits,
    memory: &Accountant,
    cancel: &AtomicBool,
    rows_read: &mut u64,
    declared: &dyn Fn(u64) -> Result<()>,
    mut sink: impl FnMut(&RecordBatch, &[usize]) -> Result<()>,
) -> Result<()> {
    // (through the guard as every data file: the footer's checks, then each page header's, and
    // the pages its readers hold accounted)
    let mut file = open_input(path, limits.page_cap)?;
    let own = load_metadata(path, &file, None)?;
    file.account_pages(memory);
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
    let rows = meta.metadata().row_groups().iter().fold(0u64, |n, rg| n.saturating_add(u64::try_from(rg.num_rows()).unwrap_or(0)));
    declared(rows)?;
    for (rg_index, rg) in meta.metadata().row_groups().iter().enumerate() {
        check_cancel(cancel)?;
        let rows = usize::try_from(rg.num_rows()).unwrap_or(0);
        if rows == 0 {
            continue;
        }
        let batch_size = rows_per_batch(estimate_row_bytes(&file, rg, Some(&leaves), &Default::default()), limits).min(rows);
        // The pages of the row group before are gone; this one's are accounted as they are read.
        file.release_pages();
        let handle = file.try_clone().map_err(|e| CompactError::input_open(path, &e))?;
        // (its column chunks as `chunks` hands them over, as the read stage reads data files)
        let mask = ProjectionMask::roots(&descr, sorted.iter().copied());
        let mut reader = crate::chunks::record_reader(handle, &meta, rg_index, mask, batch_size, None)
            .map_err(|e| CompactError::corrupt(path, None, e))?;
        loop {
            check_cancel(cancel)?;
            let batch = match crate::contain::contain(|| reader.next()) {
                Ok(None) => break,
                Ok(Some(Ok(b))) => b,
                Ok(Some(Err(e))) => return Err(CompactError::corrupt(path, None, format!("row group {rg_index}: {e}"))),
                Err(panic) => return Err(CompactError::corrupt(path, None, format!("row group {rg_index}: {panic}"))),
            };
            let _batch_memory = memory.hold(decoded_size(&batch));
            *rows_read += batch.num_rows() as u64;
            sink(&batch, &found)?;
        }
    }
    Ok(())
}
