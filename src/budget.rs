//! Budget: how big a decoded batch is or will be — the read limits of a call, rows per batch
//! for a row group's estimated row size, the decoded size of a batch — shared by the read
//! stage, the delete files' reader and verify.
//!
//! Memory: one dictionary page at a time, when a byte-array column has no size statistics.

use crate::contain::contain;
use crate::guard::GuardedInput;
use arrow_array::{Array, RecordBatch};
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::{ColumnChunkMetaData, RowGroupMetaData};
use parquet::file::serialized_reader::SerializedPageReader;
use std::collections::HashSet;
use std::sync::Arc;

pub struct ReadLimits {
    pub batch_rows: usize,
    pub batch_bytes: usize,
    /// The largest uncompressed page an input may declare (`guard`).
    pub page_cap: u64,
}

impl ReadLimits {
    /// Batches of `batch_bytes`; pages of up to the call's `batchBytes` + 64 MiB.
    pub fn new(batch_rows: usize, batch_bytes: usize, call_batch_bytes: usize) -> Self {
        ReadLimits { batch_rows, batch_bytes, page_cap: call_batch_bytes as u64 + (64 << 20) }
    }
}

/// Rows per batch for an estimated decoded row size.
pub fn rows_per_batch(per_row_bytes: f64, limits: &ReadLimits) -> usize {
    let by_bytes = if per_row_bytes > 0.0 { (limits.batch_bytes as f64 / per_row_bytes).floor() } else { f64::MAX };
    (by_bytes.min(limits.batch_rows as f64) as usize).max(1)
}

/// Decoded bytes of the rows a batch holds (buffers shared with other batches count in full
/// only for the slice this batch sees).
pub fn decoded_size(batch: &RecordBatch) -> usize {
    batch.columns().iter().map(|c| array_size(c.as_ref())).sum()
}

/// Decoded bytes of one array's rows (a view array: its views and the values it references).
pub fn array_size(array: &dyn Array) -> usize {
    crate::views::view_bytes(array)
        .unwrap_or_else(|| array.to_data().get_slice_memory_size().unwrap_or_else(|_| array.get_array_memory_size()))
}

/// Bytes a batch really holds: its buffers' capacities (a buffer shared with other batches, a
/// dictionary say, counts in full: accounting errs on the side of more).
/// A view column counts its views and the values it references: the pages it points into are
/// accounted by their input while read (`views`).
pub fn held_bytes(batch: &RecordBatch) -> usize {
    batch.columns().iter().map(|c| crate::views::view_bytes(c.as_ref()).unwrap_or_else(|| c.get_array_memory_size())).sum()
}

/// What `batches` hold together, a dictionary several of them share (`gather::share`) counted
/// once: `held_bytes` of each counts it in full, and a sort buffer of thousands of small
/// batches sharing one dictionary would count it thousands of times.
pub fn held_bytes_together(batches: &[RecordBatch]) -> usize {
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let mut total = 0;
    for b in batches {
        for c in b.columns() {
            total += array_held_once(c.as_ref(), &mut seen);
        }
    }
    total
}

fn array_held_once(array: &dyn Array, seen: &mut HashSet<(usize, usize)>) -> usize {
    use arrow_array::cast::AsArray;
    use arrow_schema::DataType;
    match array.data_type() {
        DataType::Dictionary(key, _) if **key == DataType::Int32 => {
            let dictionary = array.as_dictionary::<arrow_array::types::Int32Type>();
            let values = dictionary.values();
            let data = values.to_data();
            let id = data.buffers().first().map_or(0, |b| b.as_ptr() as usize);
            let own = dictionary.keys().get_array_memory_size();
            if id != 0 && !seen.insert((id, values.len())) {
                own
            } else {
                own + values.get_array_memory_size()
            }
        }
        DataType::Struct(_) => {
            let s = array.as_struct();
            let nulls = s.nulls().map_or(0, |n| n.buffer().capacity());
            nulls + s.columns().iter().map(|c| array_held_once(c.as_ref(), seen)).sum::<usize>()
        }
        _ => crate::views::view_bytes(array).unwrap_or_else(|| array.get_array_memory_size()),
    }
}

/// What the column readers of one row group hold for their codecs while it is decoded, by
/// estimate (per leaf column, with `leaves` those marked true); their pages are accounted as
/// their headers are read (`GuardedInput::account_pages`).
pub fn reader_state(rg: &RowGroupMetaData, leaves: Option<&[bool]>) -> usize {
    rg.columns()
        .iter()
        .enumerate()
        .filter(|(leaf, _)| leaves.is_none_or(|l| l.get(*leaf).copied().unwrap_or(false)))
        .map(|(_, c)| crate::plan::codec_state(c.compression()) as usize)
        .sum()
}

/// Estimated decoded bytes per row of one row group, from its metadata (and, for dictionary-
/// encoded byte arrays without size statistics, its dictionary pages).
/// With `leaves`, only the leaf columns marked true count.
pub fn estimate_row_bytes(file: &GuardedInput, rg: &RowGroupMetaData, leaves: Option<&[bool]>, dictionaries: &HashSet<Vec<String>>) -> f64 {
    let rows = rg.num_rows().max(1) as f64;
    let mut total = 0.0;
    for (leaf, col) in rg.columns().iter().enumerate() {
        if leaves.is_some_and(|l| !l.get(leaf).copied().unwrap_or(false)) {
            continue;
        }
        let values = col.num_values().max(0) as f64;
        let descr = col.column_descr();
        let fixed = match descr.physical_type() {
            PhysicalType::BOOLEAN => 1.0,
            PhysicalType::INT32 | PhysicalType::FLOAT => 4.0,
            PhysicalType::INT64 | PhysicalType::DOUBLE => 8.0,
            PhysicalType::INT96 => 16.0,
            PhysicalType::FIXED_LEN_BYTE_ARRAY => descr.type_length().max(0) as f64,
            PhysicalType::BYTE_ARRAY => 8.0,
        };
        let mut bytes = values * (fixed + 0.25);
        if dictionaries.contains(col.column_path().parts()) {
            // Decoded as a dictionary: a key per row, and the dictionary (at most the chunk).
            total += values * 4.25 + col.uncompressed_size().max(0) as f64;
            continue;
        }
        if descr.physical_type() == PhysicalType::BYTE_ARRAY {
            let plain = col.uncompressed_size().max(0) as f64;
            let unencoded = col.unencoded_byte_array_data_bytes().map(|b| b.max(0) as f64);
            let from_dictionary = match unencoded {
                Some(_) => 0.0,
                None if col.dictionary_page_offset().is_some() => {
                    largest_dictionary_entry(file, col, rows as usize).unwrap_or(0) as f64 * values
                }
                None => 0.0,
            };
            bytes += plain.max(unencoded.unwrap_or(0.0)).max(from_dictionary);
        }
        total += bytes;
    }
    total / rows
}

/// Length of the longest value in a byte-array column chunk's dictionary page. Any failure
/// yields `None`: decoding the chunk will then report the problem with its column.
fn largest_dictionary_entry(file: &GuardedInput, col: &ColumnChunkMetaData, rows: usize) -> Option<usize> {
    let handle = Arc::new(file.try_clone().ok()?);
    let mut pages = SerializedPageReader::new(handle, col, rows, None).ok()?;
    match contain(|| pages.get_next_page()).ok()?.ok()?? {
        Page::DictionaryPage { buf, encoding: Encoding::PLAIN | Encoding::PLAIN_DICTIONARY, .. } => {
            let mut longest = 0usize;
            let mut pos = 0usize;
            while pos + 4 <= buf.len() {
                let len = u32::from_le_bytes([buf[pos], buf[pos + 1], buf[pos + 2], buf[pos + 3]]) as usize;
                longest = longest.max(len);
                pos = pos.saturating_add(4).saturating_add(len);
            }
            Some(longest)
        }
        _ => None,
    }
}
