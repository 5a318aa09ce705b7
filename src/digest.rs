//! Digest: an order-independent fingerprint of a multiset of rows, for `verify`. Each row gets
//! a 128-bit hash (xxHash3-128 of every cell, chained column by column; a null differs from
//! every value), and the digest is the row count plus the wrapping sum of the row hashes, so
//! the same rows in any order, any batching and any file split give the same digest, while a
//! dropped, added or altered row changes it.
//!
//! Memory: one 128-bit accumulator per row of the batch being hashed; nested columns other
//! than structs are row-encoded (`arrow-row`) a slice of rows at a time.

use crate::error::{CompactError, Result};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType;
use twox_hash::xxhash3_128;

/// Rows per slice when a column is hashed through its row encoding.
const ENCODED_SLICE_ROWS: usize = 1024;
const NULL_SEED: u64 = 0x6e75_6c6c_6e75_6c6c;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    pub rows: u64,
    pub sum: u128,
}

impl Digest {
    /// Adds every row of `batch`.
    pub fn add(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut acc = vec![0u128; batch.num_rows()];
        for column in batch.columns() {
            chain(&mut acc, column)?;
        }
        for h in acc {
            self.sum = self.sum.wrapping_add(finish(h));
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} rows, digest {:032x}", self.rows, self.sum)
    }
}

/// Mixes a row's accumulator so that sums of row hashes do not cancel structurally.
fn finish(h: u128) -> u128 {
    xxhash3_128::Hasher::oneshot_with_seed(0x5eed, &h.to_le_bytes())
}

/// Folds each row's cell of `column` into its accumulator.
fn chain(acc: &mut [u128], column: &ArrayRef) -> Result<()> {
    let cells = cell_hashes(column.as_ref())?;
    for (a, c) in acc.iter_mut().zip(cells) {
        let mut bytes = [0u8; 32];
        bytes[..16].copy_from_slice(&a.to_le_bytes());
        bytes[16..].copy_from_slice(&c.to_le_bytes());
        *a = xxhash3_128::Hasher::oneshot(&bytes);
    }
    Ok(())
}

pub(crate) fn hash_bytes(b: &[u8]) -> u128 {
    xxhash3_128::Hasher::oneshot(b)
}

/// One hash per row of `array`: of the value's bytes, or a null marker.
fn cell_hashes(array: &dyn Array) -> Result<Vec<u128>> {
    let n = array.len();
    let null = xxhash3_128::Hasher::oneshot_with_seed(NULL_SEED, &[]);
    let mut out: Vec<u128> = match array.data_type() {
        DataType::Boolean => {
            let a = array.as_boolean();
            (0..n).map(|i| hash_bytes(&[u8::from(a.value(i))])).collect()
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            let value = byte_values(array).ok_or_else(|| CompactError::Internal(format!("digest: no bytes for {}", array.data_type())))?;
            bytes_hashes(n, value)
        }
        DataType::FixedSizeBinary(_) => {
            let a = array.as_fixed_size_binary();
            bytes_hashes(n, |i| a.value(i))
        }
        DataType::Struct(_) => struct_hashes(array.as_struct())?,
        // (verify decodes dictionary-encoded outputs as dictionaries: each value hashed once)
        DataType::Dictionary(..) => {
            let dictionary = array.as_any_dictionary();
            let values = cell_hashes(dictionary.values().as_ref())?;
            crate::dictionary::dictionary_keys(dictionary).into_iter().map(|k| values.get(k).copied().unwrap_or(null)).collect()
        }
        dt if dt.is_primitive() => {
            let width = dt.primitive_width().ok_or_else(|| CompactError::Internal(format!("digest: no width for {dt}")))?;
            let data = array.to_data();
            let values = data.buffers().first().map(|b| b.as_slice()).unwrap_or(&[]);
            let start = data.offset() * width;
            (0..n).map(|i| values.get(start + i * width..start + (i + 1) * width).map(hash_bytes).unwrap_or(null)).collect()
        }
        _ => encoded_hashes(array)?,
    };
    if array.null_count() > 0 {
        for (i, h) in out.iter_mut().enumerate() {
            if array.is_null(i) {
                *h = null;
            }
        }
    }
    Ok(out)
}

/// The bytes of each value of a byte-array column, by index; `None` for other types.
pub(crate) fn byte_values<'a>(a: &'a dyn Array) -> Option<Box<dyn Fn(usize) -> &'a [u8] + 'a>> {
    Some(match a.data_type() {
        DataType::Utf8 => {
            let a = a.as_string::<i32>();
            Box::new(move |i| a.value(i).as_bytes())
        }
        DataType::LargeUtf8 => {
            let a = a.as_string::<i64>();
            Box::new(move |i| a.value(i).as_bytes())
        }
        DataType::Utf8View => {
            let a = a.as_string_view();
            Box::new(move |i| a.value(i).as_bytes())
        }
        DataType::Binary => {
            let a = a.as_binary::<i32>();
            Box::new(move |i| a.value(i))
        }
        DataType::LargeBinary => {
            let a = a.as_binary::<i64>();
            Box::new(move |i| a.value(i))
        }
        DataType::BinaryView => {
            let a = a.as_binary_view();
            Box::new(move |i| a.value(i))
        }
        _ => return None,
    })
}

fn bytes_hashes<'a>(n: usize, value: impl Fn(usize) -> &'a [u8]) -> Vec<u128> {
    (0..n).map(|i| hash_bytes(value(i))).collect()
}

/// A struct's cell: its children's cells chained in order (a null struct is marked by the caller).
fn struct_hashes(array: &StructArray) -> Result<Vec<u128>> {
    let mut acc = vec![0u128; array.len()];
    for child in array.columns() {
        chain(&mut acc, child)?;
    }
    Ok(acc)
}

/// Lists, maps and other nested cells: the `arrow-row` encoding of each cell, hashed.
fn encoded_hashes(array: &dyn Array) -> Result<Vec<u128>> {
    let converter =
        RowConverter::new(vec![SortField::new(array.data_type().clone())]).map_err(|e| CompactError::Internal(format!("digest: {e}")))?;
    let full = arrow_array::make_array(array.to_data());
    let mut out = Vec::with_capacity(array.len());
    let mut offset = 0;
    while offset < array.len() {
        let len = ENCODED_SLICE_ROWS.min(array.len() - offset);
        let rows = converter.convert_columns(&[full.slice(offset, len)]).map_err(|e| CompactError::Internal(format!("digest: {e}")))?;
        out.extend(rows.iter().map(|r| hash_bytes(r.as_ref())));
        offset += len;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int32Type;
    use arrow_array::{Int64Array, LargeStringArray, ListArray};
    use arrow_schema::{Field, Schema};
    use std::sync::Arc;

    fn batch(ids: &[i64], names: &[Option<&str>], lists: Vec<Option<Vec<Option<i32>>>>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::LargeUtf8, true),
            Field::new("l", DataType::List(Arc::new(Field::new("item", DataType::Int32, true))), true),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(LargeStringArray::from(names.to_vec())),
            Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(lists)),
        ];
        RecordBatch::try_new(schema, cols).unwrap()
    }

    fn digest(batches: &[RecordBatch]) -> Digest {
        let mut d = Digest::default();
        for b in batches {
            d.add(b).unwrap();
        }
        d
    }

    #[test]
    fn order_and_batching_do_not_matter_content_does() {
        let a = batch(&[1, 2, 3], &[Some("x"), None, Some("")], vec![Some(vec![Some(1)]), None, Some(vec![])]);
        let shuffled = batch(&[3, 1, 2], &[Some(""), Some("x"), None], vec![Some(vec![]), Some(vec![Some(1)]), None]);
        let whole = digest(std::slice::from_ref(&a));
        assert_eq!(whole, digest(&[shuffled]));
        assert_eq!(whole, digest(&[a.slice(0, 1), a.slice(1, 2)]));
        assert_eq!(whole.rows, 3);
        // one cell altered, a null for an empty string, a row dropped, a row duplicated
        assert_ne!(whole, digest(&[batch(&[1, 2, 3], &[Some("y"), None, Some("")], vec![Some(vec![Some(1)]), None, Some(vec![])])]));
        assert_ne!(whole, digest(&[batch(&[1, 2, 3], &[Some("x"), None, None], vec![Some(vec![Some(1)]), None, Some(vec![])])]));
        assert_ne!(whole, digest(&[a.slice(0, 2)]));
        assert_ne!(whole, digest(&[a.clone(), a.slice(0, 1)]));
        // a dictionary-encoded column digests as its values do
        let plain = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)]));
        let dict =
            Arc::new(Schema::new(vec![Field::new("s", DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), true)]));
        let values = [Some("fat"), None, Some("fat"), Some("thin"), Some("")];
        let as_plain = RecordBatch::try_new(plain, vec![Arc::new(arrow_array::StringArray::from(values.to_vec()))]).unwrap();
        let as_dict: arrow_array::DictionaryArray<Int32Type> = values.iter().copied().collect();
        let as_dict = RecordBatch::try_new(dict, vec![Arc::new(as_dict)]).unwrap();
        assert_eq!(digest(std::slice::from_ref(&as_plain)), digest(std::slice::from_ref(&as_dict)));
        assert_ne!(digest(&[as_plain.slice(0, 4)]), digest(&[as_dict.slice(1, 4)]));
        // an all-null dictionary column may have no values at all
        let nulls: arrow_array::DictionaryArray<Int32Type> = [None::<&str>, None].into_iter().collect();
        assert_eq!(nulls.values().len(), 0);
        let as_dict = RecordBatch::try_new(as_dict.schema(), vec![Arc::new(nulls)]).unwrap();
        let as_plain =
            RecordBatch::try_new(as_plain.schema(), vec![Arc::new(arrow_array::StringArray::from(vec![None::<&str>, None]))]).unwrap();
        assert_eq!(digest(std::slice::from_ref(&as_plain)), digest(std::slice::from_ref(&as_dict)));
        assert_eq!(crate::dictionary::plain_size(&as_dict), 16);
        // values moving between columns of one row change it too
        assert_ne!(digest(&[batch(&[1], &[Some("1")], vec![None])]), digest(&[batch(&[1], &[None], vec![Some(vec![Some(1)])])]));
    }
}
