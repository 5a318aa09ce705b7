//! Squeeze: a sort buffer that holds its fat values compressed. From the spill at which a
//! sort's runs, projected from its partition's size, would outnumber what its final merge takes
//! (`sort`), each value of a fat byte column (a string or binary column whose values are large,
//! such as a conversation history per message) of the batches it buffers is kept as an LZ4
//! block of its own (its size in front, `u32` little-endian), in a binary column in the
//! column's place. Each chunk of a spilled run is restored (`unsqueeze`) as it is gathered, so
//! runs on disk and everything after them are as without.
//!
//! Why: a buffer then holds several times the rows in the same memory, so the runs that follow
//! are several times longer, and a partition that would have made several times the runs a
//! merge takes still merges in one pass, where it needed intermediate merges that rewrite most
//! rows. LZ4 compresses and restores at several GB/s; the runs keep their zstd frames
//! (`frames`), whose ratio on whole chunks of rows is what keeps the temporary disk near the
//! inputs' size.
//!
//! Which columns: top-level string or binary (not dictionary-encoded), not a sort key, whose
//! values in the buffer spilled at the switch average `FAT_VALUE` bytes or more, and every view
//! column (`views`: a sort's fat columns) — the choice depends on the inputs alone, never on
//! `threads`. A null stays null. A column is restored as the plain type it stands for (a view
//! column as the wide string or binary type, `views::without_views`).
//!
//! Memory: a squeezed batch is built beside the batch it comes from; a restored chunk beside
//! the squeezed rows it comes from.

use crate::digest::byte_values;
use crate::error::{CompactError, Result};
use arrow_array::types::{BinaryViewType, ByteArrayType, GenericBinaryType, GenericStringType, StringViewType};
use arrow_array::{Array, ArrayRef, GenericByteArray, GenericByteViewArray, LargeBinaryArray, RecordBatch};
use arrow_buffer::{ArrowNativeType, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

pub use crate::plan::FAT_VALUE;

/// The field metadata key that marks a squeezed column (in memory only: chunks are restored
/// before they are spilled).
const SQUEEZED: &str = "gencompact:squeezed";

/// The fat columns of a sort's rows, and the schema its squeezed rows have.
pub struct Squeeze {
    columns: Vec<usize>,
    original: SchemaRef,
    squeezed: SchemaRef,
}

impl Squeeze {
    /// Adds the bytes and the number of the values of `batch`'s byte columns to `sizes` (one
    /// entry per column).
    pub fn measure(batch: &RecordBatch, sizes: &mut Vec<(u64, u64)>) {
        sizes.resize(batch.num_columns(), (0, 0));
        for (c, size) in sizes.iter_mut().enumerate() {
            let a = batch.column(c);
            if let Some(value) = byte_values(a.as_ref()) {
                let valid = (0..a.len()).filter(|&i| a.is_valid(i));
                size.0 += valid.clone().map(|i| value(i).len() as u64).sum::<u64>();
                size.1 += valid.count() as u64;
            }
        }
    }

    /// The columns to squeeze of rows of `schema` whose byte columns measured `sizes`
    /// (`measure`), other than `keys`; `None` when there is none.
    pub fn choose(schema: &SchemaRef, sizes: &[(u64, u64)], keys: &[usize]) -> Option<Squeeze> {
        // (a view column is squeezed whatever its values' size: a squeezed batch holds none,
        // nor the pages they point into)
        let view = |c: usize| schema.fields().get(c).is_some_and(|f| crate::views::is_view(f.data_type()));
        let columns: Vec<usize> = sizes
            .iter()
            .enumerate()
            .filter(|(c, (bytes, valid))| !keys.contains(c) && (view(*c) || (*valid > 0 && bytes / valid >= FAT_VALUE as u64)))
            .map(|(c, _)| c)
            .collect();
        if columns.is_empty() {
            return None;
        }
        let original: SchemaRef = Arc::new(crate::views::without_views(schema));
        let fields: Vec<Field> = original
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| match columns.contains(&i) {
                // (marked: a wide binary column is of the same type squeezed or not)
                true => Field::new(f.name(), DataType::LargeBinary, f.is_nullable())
                    .with_metadata(std::collections::HashMap::from([(SQUEEZED.to_string(), "lz4".to_string())])),
                false => f.as_ref().clone(),
            })
            .collect();
        let squeezed = Arc::new(Schema::new_with_metadata(fields, original.metadata().clone()));
        Some(Squeeze { columns, original, squeezed })
    }

    /// `batch` (of the sort's schema) with its fat columns squeezed.
    pub fn squeeze(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let mut columns = batch.columns().to_vec();
        for &c in &self.columns {
            columns[c] = squeeze_column(batch.column(c).as_ref())?;
        }
        RecordBatch::try_new(self.squeezed.clone(), columns).map_err(|e| CompactError::Internal(format!("squeezing a batch: {e}")))
    }

    /// Whether `batch` is squeezed (a buffer may hold batches from before the switch).
    pub fn squeezed(&self, batch: &RecordBatch) -> bool {
        batch.schema_ref() == &self.squeezed
    }

    /// `batch` (squeezed) with its fat columns restored.
    pub fn unsqueeze(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        if !self.squeezed(batch) {
            return Ok(batch.clone());
        }
        let mut columns = batch.columns().to_vec();
        for &c in &self.columns {
            columns[c] = unsqueeze_column(batch.column(c).as_ref(), self.original.field(c).data_type())?;
        }
        RecordBatch::try_new(self.original.clone(), columns).map_err(|e| CompactError::Internal(format!("restoring a batch: {e}")))
    }

    /// The bytes `batch` adds once restored: its fat values' sizes (each block says its own)
    /// less what their blocks take (none for a batch not squeezed).
    pub fn growth(&self, batch: &RecordBatch) -> usize {
        if !self.squeezed(batch) {
            return 0;
        }
        self.columns
            .iter()
            .filter_map(|&c| batch.column(c).as_any().downcast_ref::<LargeBinaryArray>())
            .map(|a| {
                (0..a.len()).filter(|&i| a.is_valid(i)).map(|i| restored_size(a.value(i)).saturating_sub(a.value(i).len())).sum::<usize>()
            })
            .sum()
    }
}

/// The size a block restores to (its prefix).
fn restored_size(block: &[u8]) -> usize {
    match block {
        [a, b, c, d, ..] => u32::from_le_bytes([*a, *b, *c, *d]) as usize,
        _ => 0,
    }
}

fn squeeze_column(a: &dyn Array) -> Result<ArrayRef> {
    let value = byte_values(a).ok_or_else(|| CompactError::Internal(format!("squeezing a {} column", a.data_type())))?;
    let n = a.len();
    let mut offsets: Vec<i64> = Vec::with_capacity(n + 1);
    offsets.push(0);
    let mut values: Vec<u8> = Vec::new();
    // (one hash table and one output block for the column, not an allocation of each per value)
    let mut table = lz4_flex::block::CompressTable::large();
    let mut block: Vec<u8> = Vec::new();
    for i in 0..n {
        if a.is_valid(i) {
            let v = value(i);
            let size = u32::try_from(v.len()).map_err(|_| CompactError::Internal(format!("squeezing a value of {} bytes", v.len())))?;
            let bound = lz4_flex::block::get_maximum_output_size(v.len());
            if block.len() < bound {
                block.resize(bound, 0);
            }
            let len = lz4_flex::block::compress_into_with_table(v, &mut block, &mut table)
                .map_err(|e| CompactError::Internal(format!("squeezing a value: {e}")))?;
            values.extend_from_slice(&size.to_le_bytes());
            values.extend_from_slice(block.get(..len).unwrap_or_default());
        }
        offsets.push(values.len() as i64);
    }
    values.shrink_to_fit();
    let array = LargeBinaryArray::try_new(OffsetBuffer::new(ScalarBuffer::from(offsets)), Buffer::from_vec(values), a.logical_nulls())
        .map_err(|e| CompactError::Internal(format!("squeezing a column: {e}")))?;
    Ok(Arc::new(array))
}

fn unsqueeze_column(a: &dyn Array, to: &DataType) -> Result<ArrayRef> {
    let a =
        a.as_any().downcast_ref::<LargeBinaryArray>().ok_or_else(|| CompactError::Internal("restoring a column not squeezed".into()))?;
    let n = a.len();
    let total: usize = (0..n).filter(|&i| a.is_valid(i)).map(|i| restored_size(a.value(i))).sum();
    let mut values: Vec<u8> = Vec::with_capacity(total);
    let mut ends: Vec<usize> = Vec::with_capacity(n);
    for i in 0..n {
        if a.is_valid(i) {
            let block = a.value(i);
            let (at, size) = (values.len(), restored_size(block));
            values.resize(at + size, 0);
            let body = block.get(4..).unwrap_or_default();
            let got = lz4_flex::block::decompress_into(body, &mut values[at..])
                .map_err(|e| CompactError::Internal(format!("restoring a squeezed value: {e}")))?;
            if got != size {
                return Err(CompactError::Internal(format!("a squeezed value restored to {got} bytes, not {size}")));
            }
        }
        ends.push(values.len());
    }
    let nulls = a.logical_nulls();
    Ok(match to {
        DataType::Utf8 => Arc::new(bytes::<GenericStringType<i32>>(values, &ends, nulls)?),
        DataType::LargeUtf8 => Arc::new(bytes::<GenericStringType<i64>>(values, &ends, nulls)?),
        DataType::Binary => Arc::new(bytes::<GenericBinaryType<i32>>(values, &ends, nulls)?),
        DataType::LargeBinary => Arc::new(bytes::<GenericBinaryType<i64>>(values, &ends, nulls)?),
        DataType::Utf8View => {
            Arc::new(GenericByteViewArray::<StringViewType>::from(&bytes::<GenericStringType<i64>>(values, &ends, nulls)?))
        }
        DataType::BinaryView => {
            Arc::new(GenericByteViewArray::<BinaryViewType>::from(&bytes::<GenericBinaryType<i64>>(values, &ends, nulls)?))
        }
        other => return Err(CompactError::Internal(format!("restoring a squeezed {other} column"))),
    })
}

/// A byte array of `values` cut at `ends`.
fn bytes<T: ByteArrayType>(values: Vec<u8>, ends: &[usize], nulls: Option<NullBuffer>) -> Result<GenericByteArray<T>> {
    let mut offsets: Vec<T::Offset> = Vec::with_capacity(ends.len() + 1);
    offsets.push(T::Offset::usize_as(0));
    for &e in ends {
        offsets.push(T::Offset::from_usize(e).ok_or_else(|| CompactError::Internal("a restored column over its offsets' range".into()))?);
    }
    GenericByteArray::<T>::try_new(OffsetBuffer::new(ScalarBuffer::from(offsets)), Buffer::from_vec(values), nulls)
        .map_err(|e| CompactError::Internal(format!("restoring a squeezed column: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::{BinaryArray, BinaryViewArray, Int64Array, LargeStringArray, StringArray, StringViewArray};

    fn chosen(batch: &RecordBatch, keys: &[usize]) -> Option<Squeeze> {
        let mut sizes = Vec::new();
        Squeeze::measure(batch, &mut sizes);
        Squeeze::choose(&batch.schema(), &sizes, keys)
    }

    /// `n` values of about 6 KB, each its own (its row number inside), every third null.
    fn fat(n: usize) -> Vec<Option<String>> {
        (0..n).map(|i| (i % 3 != 2).then(|| format!("{i:08} {}", "conversation history ".repeat(300)))).collect()
    }

    #[test]
    fn a_batch_of_wide_binaries_is_told_from_its_squeezed_self() {
        let values = fat(12);
        let bins: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref().map(str::as_bytes)).collect();
        let column: ArrayRef = Arc::new(LargeBinaryArray::from(bins));
        let batch =
            RecordBatch::try_new(Arc::new(Schema::new(vec![Field::new("blob", DataType::LargeBinary, true)])), vec![column]).unwrap();
        let s = chosen(&batch, &[]).unwrap();
        let squeezed = s.squeeze(&batch).unwrap();
        assert!(s.squeezed(&squeezed) && !s.squeezed(&batch));
        assert_eq!(s.unsqueeze(&batch).unwrap(), batch);
        assert_eq!(s.unsqueeze(&squeezed).unwrap(), batch);
    }

    #[test]
    fn a_view_column_is_squeezed_whatever_its_values_size() {
        let values = fat(10);
        let strs: Vec<Option<&str>> = values.iter().map(|v| v.as_deref()).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(LargeStringArray::from(strs)),
            Arc::new(StringViewArray::from(vec![Some("a short value, well past twelve bytes"); 10])),
            Arc::new(LargeStringArray::from(vec![Some("short"); 10])),
        ];
        let fields: Vec<Field> =
            columns.iter().enumerate().map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true)).collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let s = chosen(&batch, &[]).unwrap();
        assert_eq!(s.columns, vec![0, 1], "the fat column and the view column, not the short plain one");
        let restored = s.unsqueeze(&s.squeeze(&batch).unwrap()).unwrap();
        assert_eq!(restored.column(1).data_type(), &DataType::LargeUtf8);
        assert_eq!(restored.column(1).as_string::<i64>().value(9), "a short value, well past twelve bytes");
        // not a key, though
        assert_eq!(chosen(&batch, &[1]).unwrap().columns, vec![0]);
    }

    #[test]
    fn every_byte_type_comes_back_as_it_went_in_with_its_nulls() {
        let values = fat(40);
        let strs: Vec<Option<&str>> = values.iter().map(|v| v.as_deref()).collect();
        let bins: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref().map(str::as_bytes)).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..40)),
            Arc::new(StringArray::from(strs.clone())),
            Arc::new(LargeStringArray::from(strs.clone())),
            Arc::new(StringViewArray::from(strs.clone())),
            Arc::new(BinaryArray::from(bins.clone())),
            Arc::new(arrow_array::LargeBinaryArray::from(bins.clone())),
            Arc::new(BinaryViewArray::from(bins.clone())),
        ];
        let fields: Vec<Field> =
            columns.iter().enumerate().map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true)).collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let s = chosen(&batch, &[]).unwrap();
        assert_eq!(s.columns, vec![1, 2, 3, 4, 5, 6], "the fat byte columns, not the integers");
        let squeezed = s.squeeze(&batch).unwrap();
        assert!(s.squeezed(&squeezed) && !s.squeezed(&batch));
        let held = crate::budget::decoded_size(&squeezed);
        assert!(held * 4 < crate::budget::decoded_size(&batch), "{held} against {}", crate::budget::decoded_size(&batch));
        // what a squeezed batch grows by is what restoring it adds; view columns come back as
        // the plain types they stand for
        let restored = s.unsqueeze(&squeezed).unwrap();
        let mut plain = batch.columns().to_vec();
        plain[3] = Arc::new(LargeStringArray::from(strs.clone()));
        plain[6] = Arc::new(arrow_array::LargeBinaryArray::from(bins));
        let fields: Vec<Field> = plain.iter().enumerate().map(|(i, c)| Field::new(format!("c{i}"), c.data_type().clone(), true)).collect();
        assert_eq!(restored, RecordBatch::try_new(Arc::new(Schema::new(fields)), plain).unwrap());
        let values_bytes: usize = values.iter().flatten().map(String::len).sum();
        let squeezed_bytes: usize = squeezed.column(1).as_any().downcast_ref::<LargeBinaryArray>().unwrap().value_data().len();
        assert_eq!(s.growth(&squeezed), 6 * (values_bytes - squeezed_bytes));
        assert_eq!(s.growth(&batch), 0);
        assert_eq!(s.unsqueeze(&batch).unwrap(), batch, "a batch from before the switch passes as it is");
    }

    #[test]
    fn a_sort_key_and_values_of_the_usual_size_stay_as_they_are() {
        let values = fat(10);
        let strs: Vec<Option<&str>> = values.iter().map(|v| v.as_deref()).collect();
        let small: Vec<String> = (0..10).map(|i| format!("row {i}")).collect();
        let schema = Schema::new(vec![Field::new("key", DataType::Utf8, true), Field::new("small", DataType::Utf8, false)]);
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![Arc::new(StringArray::from(strs)), Arc::new(StringArray::from_iter_values(small.iter()))],
        )
        .unwrap();
        assert!(chosen(&batch, &[0]).is_none());
        assert_eq!(chosen(&batch, &[]).map(|s| s.columns), Some(vec![0]));
        // measured over every batch received: a batch whose fat value is null does not decide
        let mut sizes = Vec::new();
        Squeeze::measure(&batch.slice(2, 1), &mut sizes);
        assert_eq!(sizes[0], (0, 0));
        Squeeze::measure(&batch, &mut sizes);
        assert!(Squeeze::choose(&batch.schema(), &sizes, &[]).is_some());
    }

    #[test]
    fn a_damaged_block_is_an_error() {
        let strs = vec![Some("x".repeat(10_000))];
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("v", DataType::Utf8, true)])),
            vec![Arc::new(StringArray::from(strs))],
        )
        .unwrap();
        let s = chosen(&batch, &[]).unwrap();
        let squeezed = s.squeeze(&batch).unwrap();
        let a = squeezed.column(0).as_any().downcast_ref::<LargeBinaryArray>().unwrap();
        let mut block = a.value(0).to_vec();
        block.truncate(block.len() / 2);
        let cut = RecordBatch::try_new(s.squeezed.clone(), vec![Arc::new(LargeBinaryArray::from(vec![block.as_slice()]))]).unwrap();
        assert!(matches!(s.unsqueeze(&cut), Err(CompactError::Internal(_))));
    }
}
