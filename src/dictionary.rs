//! Dictionary decoding: which string and binary columns are decoded as Arrow dictionaries and
//! stay so through the pipeline, instead of being copied out value by value. A fat value
//! repeated on many rows (the session's tool definitions on every row of a conversation) is
//! then decoded, hashed for `verify`, gathered when sorting and spilled once per batch rather
//! than once per row, and a batch of `batchBytes` holds as many more rows. The Parquet output
//! is written from the same values either way.
//!
//! A column qualifies when every data page of it in every input is dictionary-encoded (the
//! footers' page encoding statistics say so), it is not under a list or map, no option or
//! equality delete uses it as a key, and its values repeat: over a sample of the inputs'
//! dictionary pages, at least `MIN_REUSE` rows per dictionary entry.
//!
//! Memory: one dictionary page at a time while sampling.

use crate::error::Result;
use crate::plan::{sample_row_groups, Plan};
use arrow_array::cast::AsArray;
use arrow_array::{AnyDictionaryArray, Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, FieldRef, Schema};
use parquet::basic::Type as PhysicalType;
use parquet::column::page::{Page, PageReader};
use parquet::file::serialized_reader::SerializedPageReader;
use std::collections::HashSet;
use std::sync::Arc;

/// Rows per dictionary entry from which a column is decoded as a dictionary.
const MIN_REUSE: f64 = 4.0;

/// `field` with its string and binary leaves whose paths are in `leaves` (through structs)
/// as dictionaries; the paths converted are added to `converted`.
pub fn with_dictionaries(
    field: &FieldRef,
    path: &mut Vec<String>,
    leaves: &HashSet<Vec<String>>,
    converted: &mut Vec<Vec<String>>,
) -> FieldRef {
    path.push(field.name().clone());
    let data_type = match field.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary if leaves.contains(path.as_slice()) => {
            converted.push(path.clone());
            Some(DataType::Dictionary(Box::new(DataType::Int32), Box::new(field.data_type().clone())))
        }
        DataType::Struct(children) => {
            let children: Vec<FieldRef> = children.iter().map(|c| with_dictionaries(c, path, leaves, converted)).collect();
            Some(DataType::Struct(children.into()))
        }
        _ => None,
    };
    path.pop();
    match data_type {
        Some(dt) => Arc::new(field.as_ref().clone().with_data_type(dt)),
        None => field.clone(),
    }
}

/// `schema` with the leaves in `leaves` as dictionaries; the paths converted.
pub fn schema_with_dictionaries(schema: &Schema, leaves: &HashSet<Vec<String>>) -> (Schema, Vec<Vec<String>>) {
    let mut converted = Vec::new();
    let fields: Vec<FieldRef> = schema.fields().iter().map(|f| with_dictionaries(f, &mut Vec::new(), leaves, &mut converted)).collect();
    (Schema::new_with_metadata(fields, schema.metadata().clone()), converted)
}

/// `field` with every dictionary replaced by its value type.
pub fn without_dictionaries(field: &FieldRef) -> FieldRef {
    let data_type = match field.data_type() {
        DataType::Dictionary(_, value) => Some(value.as_ref().clone()),
        DataType::Struct(children) => Some(DataType::Struct(children.iter().map(without_dictionaries).collect())),
        _ => None,
    };
    match data_type {
        Some(dt) => Arc::new(field.as_ref().clone().with_data_type(dt)),
        None => field.clone(),
    }
}

/// Chooses the columns decoded as dictionaries (see the module doc) and turns them into
/// dictionaries in `plan.arrow_schema`. `keep_plain`: top-level columns used as keys.
pub fn choose(plan: &mut Plan, keep_plain: &[usize], page_cap: u64) -> Result<()> {
    let descr = plan.parquet_schema.clone();
    let mut candidates: Vec<(usize, u64, u64)> = (0..descr.num_columns())
        .filter(|&leaf| {
            let c = descr.column(leaf);
            c.physical_type() == PhysicalType::BYTE_ARRAY
                && c.max_rep_level() == 0
                && plan.fully_dictionary_leaves.get(leaf).copied().unwrap_or(false)
                && !keep_plain.contains(&descr.get_column_root_idx(leaf))
        })
        .map(|leaf| (leaf, 0, 0))
        .collect();
    if candidates.is_empty() {
        return Ok(());
    }
    // Rows and dictionary entries of each candidate over the sample.
    sample_row_groups(plan, page_cap, |handle, rg| {
        for (leaf, rows, entries) in candidates.iter_mut() {
            let path = descr.column(*leaf).path().clone();
            let Some(col) = rg.columns().iter().find(|c| *c.column_path() == path) else { continue };
            let Ok(mut pages) = SerializedPageReader::new(handle.clone(), col, usize::try_from(rg.num_rows()).unwrap_or(0), None) else {
                continue;
            };
            if let Ok(Ok(Some(Page::DictionaryPage { num_values, .. }))) = crate::contain::contain(|| pages.get_next_page()) {
                *rows += u64::try_from(col.num_values()).unwrap_or(0);
                *entries += u64::from(num_values);
            }
        }
        true
    })?;
    let leaves: HashSet<Vec<String>> = candidates
        .into_iter()
        .filter(|(_, rows, entries)| *entries > 0 && *rows as f64 >= MIN_REUSE * *entries as f64)
        .map(|(leaf, ..)| descr.column(leaf).path().parts().to_vec())
        .collect();
    if leaves.is_empty() {
        return Ok(());
    }
    let (schema, converted) = schema_with_dictionaries(&plan.arrow_schema, &leaves);
    plan.arrow_schema = Arc::new(schema);
    plan.dictionary_columns = converted.into_iter().collect();
    Ok(())
}

/// Bytes of `batch` with its dictionaries expanded: what a reader that decodes values (not
/// dictionaries) holds for it. Row groups are cut on this, so that decoding one of an output's
/// row groups costs a reader what it did before dictionaries were kept.
pub fn plain_size(batch: &RecordBatch) -> usize {
    batch.columns().iter().map(plain_array_size).sum()
}

fn plain_array_size(array: &ArrayRef) -> usize {
    if !has_dictionary(array.data_type()) {
        return crate::budget::array_size(array.as_ref());
    }
    match array.data_type() {
        DataType::Dictionary(..) => {
            let dictionary = array.as_any_dictionary();
            let values = dictionary.values();
            let length = |k: usize| -> usize {
                match values.data_type() {
                    DataType::Utf8 => values.as_string::<i32>().value_length(k).max(0) as usize,
                    DataType::LargeUtf8 => values.as_string::<i64>().value_length(k).max(0) as usize,
                    DataType::Binary => values.as_binary::<i32>().value_length(k).max(0) as usize,
                    DataType::LargeBinary => values.as_binary::<i64>().value_length(k).max(0) as usize,
                    _ => 0,
                }
            };
            let n = values.len();
            let keys = dictionary_keys(dictionary);
            // 8 bytes of offset per row, and the value unless the row is null
            keys.iter().enumerate().map(|(i, &k)| 8 + if k < n && !array.is_null(i) { length(k) } else { 0 }).sum()
        }
        DataType::Struct(_) => {
            let s = array.as_struct();
            s.columns().iter().map(plain_array_size).sum::<usize>() + s.len().div_ceil(8)
        }
        _ => crate::budget::array_size(array.as_ref()),
    }
}

/// Decoded bytes of `batch` without its dictionaries' values: its keys and other columns.
pub fn size_without_dictionary_values(batch: &RecordBatch) -> usize {
    batch.columns().iter().map(|c| without_values(c.as_ref())).sum()
}

fn without_values(array: &dyn Array) -> usize {
    match array.data_type() {
        DataType::Dictionary(..) => array.as_any_dictionary_opt().map(|d| without_values(d.keys())).unwrap_or(0),
        DataType::Struct(_) => {
            let s = array.as_struct();
            s.columns().iter().map(|c| without_values(c.as_ref())).sum::<usize>() + s.nulls().map(|n| n.buffer().len()).unwrap_or(0)
        }
        _ => array.to_data().get_slice_memory_size().unwrap_or_else(|_| array.get_array_memory_size()),
    }
}

/// Decoded bytes of `batch`, the values of a dictionary it shares with `source` (the same
/// column of a batch it was gathered from) not counted: they are held, and accounted, once.
pub fn size_beside(batch: &RecordBatch, source: &RecordBatch) -> usize {
    batch.columns().iter().zip(source.columns()).map(|(a, s)| beside(a.as_ref(), s.as_ref())).sum()
}

fn beside(array: &dyn Array, source: &dyn Array) -> usize {
    let whole = || array.to_data().get_slice_memory_size().unwrap_or_else(|_| array.get_array_memory_size());
    match (array.data_type(), array.as_any_dictionary_opt(), source.as_any_dictionary_opt(), array.as_struct_opt(), source.as_struct_opt())
    {
        (DataType::Dictionary(..), Some(d), Some(s), ..) if d.values().to_data().ptr_eq(&s.values().to_data()) => without_values(d.keys()),
        (DataType::Struct(_), _, _, Some(a), Some(s)) => {
            a.columns().iter().zip(s.columns()).map(|(a, s)| beside(a.as_ref(), s.as_ref())).sum::<usize>()
                + a.nulls().map(|n| n.buffer().len()).unwrap_or(0)
        }
        _ => whole(),
    }
}

/// Each row's index into its dictionary's values (0 for a null row). An all-null column may
/// come with no values at all, where arrow's `normalized_keys` asserts. (The crate's one call
/// of it, guarded: clippy.toml disallows it elsewhere.)
#[allow(clippy::disallowed_methods)]
pub fn dictionary_keys(dictionary: &dyn AnyDictionaryArray) -> Vec<usize> {
    if dictionary.values().is_empty() {
        return vec![0; dictionary.len()];
    }
    dictionary.normalized_keys()
}

pub(crate) fn has_dictionary(data_type: &DataType) -> bool {
    match data_type {
        DataType::Dictionary(..) => true,
        DataType::Struct(children) => children.iter().any(|c| has_dictionary(c.data_type())),
        _ => false,
    }
}

/// The top-level columns some stage reads as keys (sort, partition, dedupe, divert, equality
/// deletes): they are always decoded plain.
pub fn key_roots(plan: &Plan, opts: &crate::options::Options, deletes: Option<&crate::iceberg::deletes::DeleteIndex>) -> Vec<usize> {
    let mut names: Vec<&str> = Vec::new();
    names.extend(opts.sort_by.iter().flatten().map(|k| k.column.as_str()));
    names.extend(opts.partition_by.iter().flatten().map(|p| p.column.as_str()));
    names.extend(opts.dedupe_by.as_deref());
    names.extend(opts.divert.as_ref().map(|d| d.column.as_str()));
    if let Some(d) = deletes {
        for i in 0..plan.inputs.len() {
            names.extend(d.key_columns(i));
        }
    }
    let mut roots: Vec<usize> = names.into_iter().filter_map(|n| plan.arrow_schema.index_of(n).ok()).collect();
    roots.sort_unstable();
    roots.dedup();
    roots
}
