//! Gather: rows picked from several batches into one (sorting and merging), and one shared
//! dictionary per column for the batches of a sort buffer.
//!
//! Sorting scatters a tuple's rows across the batches they came from, and each batch decoded
//! from a row group has its own dictionaries. Gathered as they are, every output chunk gets a
//! dictionary of the values it references: the 30 KB tool definitions of a session land in
//! every spilled chunk again. So before a sort buffer is ordered, `share` gives each dictionary
//! column of its batches one dictionary (the distinct values referenced, once); `interleave`
//! then gathers only the keys of a column whose sources share one dictionary, and the chunks of
//! a spilled run reference the same dictionary, which the IPC writer writes once per run.
//!
//! View columns (a sort's fat columns, `views`) are gathered into the plain wide types they
//! stand for: a gathered chunk holds its own values, not the pages they were decoded from.
//!
//! Memory: a shared dictionary holds each referenced value once — at most what the buffer's
//! own dictionaries held — and no more than the `cap` the caller gives for all columns
//! together; a column whose dictionary would not fit keeps its batches' own dictionaries.

use crate::dictionary::has_dictionary;
use crate::error::{CompactError, Result};
use arrow_array::builder::{ArrayBuilder, GenericByteBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{ByteArrayType, GenericBinaryType, GenericStringType, Int32Type};
use arrow_array::{make_array, Array, ArrayRef, DictionaryArray, Int32Array, RecordBatch, RecordBatchOptions, StructArray};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, NullBuffer};
use arrow_schema::DataType;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

/// `batches` with each dictionary column (also inside structs) sharing one dictionary across
/// all of them, as far as `cap` bytes of shared values allow; the shared values' bytes.
pub fn share(batches: &[RecordBatch], cap: usize) -> Result<(Vec<RecordBatch>, usize)> {
    let Some(first) = batches.first() else { return Ok((Vec::new(), 0)) };
    let mut room = cap;
    let mut columns: Vec<Vec<ArrayRef>> = vec![Vec::with_capacity(first.num_columns()); batches.len()];
    for c in 0..first.num_columns() {
        let arrays: Vec<ArrayRef> = batches.iter().map(|b| b.column(c).clone()).collect();
        for (i, array) in share_column(arrays, &mut room)?.into_iter().enumerate() {
            columns[i].push(array);
        }
    }
    let shared = batches
        .iter()
        .zip(columns)
        .map(|(b, cols)| RecordBatch::try_new_with_options(b.schema(), cols, &RecordBatchOptions::new().with_row_count(Some(b.num_rows()))))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| CompactError::Internal(format!("sharing dictionaries: {e}")))?;
    Ok((shared, cap - room))
}

fn share_column(arrays: Vec<ArrayRef>, room: &mut usize) -> Result<Vec<ArrayRef>> {
    let Some(first) = arrays.first() else { return Ok(arrays) };
    match first.data_type().clone() {
        DataType::Dictionary(key, value) if *key == DataType::Int32 => {
            let merged = match value.as_ref() {
                DataType::Utf8 => merge_values::<GenericStringType<i32>>(&arrays, room),
                DataType::LargeUtf8 => merge_values::<GenericStringType<i64>>(&arrays, room),
                DataType::Binary => merge_values::<GenericBinaryType<i32>>(&arrays, room),
                DataType::LargeBinary => merge_values::<GenericBinaryType<i64>>(&arrays, room),
                _ => None,
            };
            let Some((values, mappings)) = merged else { return Ok(arrays) };
            arrays.iter().zip(mappings).map(|(array, mapping)| remap_keys(array.as_dictionary::<Int32Type>(), &mapping, &values)).collect()
        }
        DataType::Struct(fields) if fields.iter().any(|f| has_dictionary(f.data_type())) => {
            let structs: Vec<&StructArray> = arrays.iter().map(|a| a.as_struct()).collect();
            let mut children: Vec<Vec<ArrayRef>> = vec![Vec::with_capacity(fields.len()); arrays.len()];
            for f in 0..fields.len() {
                let column: Vec<ArrayRef> = structs.iter().map(|s| s.column(f).clone()).collect();
                for (i, child) in share_column(column, room)?.into_iter().enumerate() {
                    children[i].push(child);
                }
            }
            structs
                .iter()
                .zip(children)
                .map(|(s, cols)| {
                    StructArray::try_new(fields.clone(), cols, s.nulls().cloned())
                        .map(|s| std::sync::Arc::new(s) as ArrayRef)
                        .map_err(|e| CompactError::Internal(format!("sharing dictionaries: {e}")))
                })
                .collect()
        }
        _ => Ok(arrays),
    }
}

/// `dictionary` over `values`, each key k becoming `mapping[k]`.
pub(crate) fn remap_keys(dictionary: &DictionaryArray<Int32Type>, mapping: &[i32], values: &ArrayRef) -> Result<ArrayRef> {
    let keys = dictionary.keys();
    let remapped: Vec<i32> = (0..keys.len())
        .map(|i| if keys.is_valid(i) { usize::try_from(keys.value(i)).ok().and_then(|k| mapping.get(k).copied()).unwrap_or(0) } else { 0 })
        .collect();
    let keys = Int32Array::new(remapped.into(), keys.nulls().cloned());
    DictionaryArray::<Int32Type>::try_new(keys, values.clone())
        .map(|d| std::sync::Arc::new(d) as ArrayRef)
        .map_err(|e| CompactError::Internal(format!("sharing a dictionary: {e}")))
}

/// Distinct byte values gathered into one values array, each with its index there. The values
/// are copied as they are added, so the arrays they came from may go before the set does (the
/// union of a merge's dictionaries is built one run at a time: `union`).
pub(crate) struct ValueSet<T: ByteArrayType> {
    /// A value's hash to its index (a second value with the same hash goes to `collided`).
    index: HashMap<u64, i32>,
    collided: Vec<(u64, i32)>,
    hasher: RandomState,
    builder: GenericByteBuilder<T>,
    /// The values' bytes and offsets so far.
    pub(crate) bytes: usize,
}

impl<T: ByteArrayType> Default for ValueSet<T> {
    fn default() -> Self {
        ValueSet { index: HashMap::new(), collided: Vec::new(), hasher: RandomState::new(), builder: GenericByteBuilder::new(), bytes: 0 }
    }
}

impl<T: ByteArrayType> ValueSet<T> {
    /// The index of `value`, added if new; `None` past i32 indexes.
    pub(crate) fn add(&mut self, value: &T::Native) -> Option<i32> {
        let bytes: &[u8] = value.as_ref();
        let hash = self.hasher.hash_one(bytes);
        let same = |id: i32| self.value(id) == bytes;
        if let Some(&id) = self.index.get(&hash) {
            if same(id) {
                return Some(id);
            }
            if let Some(&(_, id)) = self.collided.iter().find(|&&(h, id)| h == hash && same(id)) {
                return Some(id);
            }
        }
        let id = i32::try_from(self.builder.len()).ok()?;
        self.builder.append_value(value);
        self.bytes += bytes.len() + std::mem::size_of::<T::Offset>();
        match self.index.entry(hash) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(id);
            }
            std::collections::hash_map::Entry::Occupied(_) => self.collided.push((hash, id)),
        }
        Some(id)
    }

    /// How many distinct values.
    pub(crate) fn len(&self) -> usize {
        self.builder.len()
    }

    /// Value `i` of the values added so far.
    fn value(&self, i: i32) -> &[u8] {
        let offsets = self.builder.offsets_slice();
        let i = i as usize;
        match (offsets.get(i), offsets.get(i + 1)) {
            (Some(start), Some(end)) => self.builder.values_slice().get(start.as_usize()..end.as_usize()).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The values array.
    pub(crate) fn finish(mut self) -> ArrayRef {
        std::sync::Arc::new(self.builder.finish())
    }
}

/// One values array holding each value the `arrays`' keys reference once, and per array the
/// new index of each of its dictionary's values — or `None` if it would not pay (more entries
/// than half the rows), would not fit `room`, or a key refers to a null value.
fn merge_values<T: ByteArrayType>(arrays: &[ArrayRef], room: &mut usize) -> Option<(ArrayRef, Vec<Vec<i32>>)> {
    let dictionaries: Vec<&DictionaryArray<Int32Type>> = arrays.iter().map(|a| a.as_dictionary::<Int32Type>()).collect();
    let rows: usize = dictionaries.iter().map(|d| d.len()).sum();
    let mut set = ValueSet::<T>::default();
    let mut mappings = Vec::with_capacity(dictionaries.len());
    for d in &dictionaries {
        let values = d.values().as_bytes::<T>();
        let mut mapping = vec![0i32; values.len()];
        let mut referenced = vec![false; values.len()];
        let keys = d.keys();
        for i in 0..keys.len() {
            if keys.is_valid(i) {
                if let Some(r) = usize::try_from(keys.value(i)).ok().and_then(|k| referenced.get_mut(k)) {
                    *r = true;
                }
            }
        }
        for (k, used) in referenced.into_iter().enumerate() {
            if !used {
                continue;
            }
            if values.is_null(k) {
                // (a key to a null value: parquet-rs never decodes one; left as it is)
                return None;
            }
            let id = set.add(values.value(k))?;
            if set.bytes > *room || set.len() * 2 > rows.max(1) {
                return None;
            }
            mapping[k] = id;
        }
        mappings.push(mapping);
    }
    *room = room.saturating_sub(set.bytes);
    Some((set.finish(), mappings))
}

/// The rows `indices` ((source, row) pairs) of `sources`, in that order. A dictionary column
/// whose sources all share one dictionary keeps it (only the keys are gathered); others are
/// gathered by arrow, which merges the dictionaries of the values picked.
pub fn interleave(sources: &[&RecordBatch], indices: &[(usize, usize)]) -> Result<RecordBatch> {
    let Some(first) = sources.first() else { return Err(CompactError::Internal("gathering rows from no batch".into())) };
    let mut schema = first.schema();
    let columns = (0..schema.fields().len())
        .map(|c| {
            let arrays: Vec<&dyn Array> = sources.iter().map(|b| b.column(c).as_ref()).collect();
            interleave_column(&arrays, indices)
        })
        .collect::<Result<Vec<_>>>()?;
    if schema.fields().iter().any(|f| crate::views::is_view(f.data_type())) {
        schema = std::sync::Arc::new(crate::views::without_views(&schema));
    }
    RecordBatch::try_new_with_options(schema, columns, &RecordBatchOptions::new().with_row_count(Some(indices.len())))
        .map_err(|e| CompactError::Internal(format!("gathering sorted rows: {e}")))
}

/// The values at `indices` of view arrays, copied into one wide plain array of type `T`.
fn gather_views<'a, T: ByteArrayType>(
    arrays: &[&'a dyn Array],
    indices: &[(usize, usize)],
    value: impl Fn(&'a dyn Array, usize) -> Option<&'a T::Native>,
) -> ArrayRef {
    let at = |&(a, r): &(usize, usize)| arrays.get(a).and_then(|x| value(*x, r));
    let bytes: usize = indices.iter().filter_map(at).map(|v| AsRef::<[u8]>::as_ref(v).len()).sum();
    let mut out = GenericByteBuilder::<T>::with_capacity(indices.len(), bytes);
    for i in indices {
        match at(i) {
            Some(v) => out.append_value(v),
            None => out.append_null(),
        }
    }
    std::sync::Arc::new(out.finish())
}

fn interleave_column(arrays: &[&dyn Array], indices: &[(usize, usize)]) -> Result<ArrayRef> {
    let err = |e: arrow_schema::ArrowError| CompactError::Internal(format!("gathering sorted rows: {e}"));
    let data_type = arrays.first().map(|a| a.data_type().clone()).unwrap_or(DataType::Null);
    match &data_type {
        DataType::Dictionary(..) => {
            let dictionaries: Vec<_> = arrays.iter().filter_map(|a| a.as_any_dictionary_opt()).collect();
            // (chunks remapped to a merge's union hold the same values array: compared first by
            // the pointer, without building its data)
            let first = dictionaries.first().map(|d| d.values());
            let values = first.map(|v| v.to_data());
            let shared = dictionaries.len() == arrays.len()
                && first.zip(values.as_ref()).is_some_and(|(first, v)| {
                    dictionaries.iter().all(|d| std::sync::Arc::ptr_eq(d.values(), first) || d.values().to_data().ptr_eq(v))
                });
            match (shared, values) {
                (true, Some(values)) => {
                    let keys: Vec<&dyn Array> = dictionaries.iter().map(|d| d.keys() as &dyn Array).collect();
                    let keys = arrow_select::interleave::interleave(&keys, indices).map_err(err)?;
                    let data = keys.to_data().into_builder().data_type(data_type.clone()).child_data(vec![values]).build().map_err(err)?;
                    Ok(make_array(data))
                }
                _ => arrow_select::interleave::interleave(arrays, indices).map_err(err),
            }
        }
        DataType::Struct(fields) if fields.iter().any(|f| has_dictionary(f.data_type())) => {
            let structs: Vec<&StructArray> = arrays.iter().filter_map(|a| a.as_struct_opt()).collect();
            if structs.len() != arrays.len() {
                return Err(CompactError::Internal("gathering sorted rows: mixed column types".into()));
            }
            let children = (0..fields.len())
                .map(|f| {
                    let column: Vec<&dyn Array> = structs.iter().map(|s| s.column(f).as_ref()).collect();
                    interleave_column(&column, indices)
                })
                .collect::<Result<Vec<_>>>()?;
            let nulls = structs.iter().any(|s| s.null_count() > 0).then(|| {
                NullBuffer::new(BooleanBuffer::collect_bool(indices.len(), |i| {
                    let (a, r) = indices[i];
                    structs.get(a).is_some_and(|s| s.is_valid(r))
                }))
            });
            Ok(std::sync::Arc::new(StructArray::try_new(fields.clone(), children, nulls).map_err(err)?))
        }
        // (views point into the pages they were decoded from: their values are copied out,
        // into the plain types they stand for, `views::without_views`)
        DataType::Utf8View => Ok(gather_views::<GenericStringType<i64>>(arrays, indices, |a, r| {
            a.as_string_view_opt().filter(|v| v.is_valid(r)).map(|v| v.value(r))
        })),
        DataType::BinaryView => Ok(gather_views::<GenericBinaryType<i64>>(arrays, indices, |a, r| {
            a.as_binary_view_opt().filter(|v| v.is_valid(r)).map(|v| v.value(r))
        })),
        _ => arrow_select::interleave::interleave(arrays, indices).map_err(err),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use arrow_array::{BinaryArray, StringArray};
    use arrow_schema::{Field, Fields, Schema};
    use std::sync::Arc;

    /// A batch of a string dictionary column and a struct holding a binary dictionary, with
    /// null rows in both; `values` are the distinct values its dictionaries hold (unreferenced
    /// ones included, as a row group's dictionary holds values of rows filtered out).
    pub(crate) fn batch(values: &[&str], keys: &[Option<i32>]) -> RecordBatch {
        let dict = |binary: bool| -> ArrayRef {
            let values: ArrayRef = if binary {
                Arc::new(BinaryArray::from_iter_values(values.iter().map(|v| v.as_bytes())))
            } else {
                Arc::new(StringArray::from_iter_values(values.iter()))
            };
            Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys.to_vec()), values).unwrap())
        };
        let inner = Fields::from(vec![Field::new("v", DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Binary)), true)]);
        let nulls = NullBuffer::from((0..keys.len()).map(|i| i % 3 != 1).collect::<Vec<_>>());
        let s = StructArray::try_new(inner.clone(), vec![dict(true)], Some(nulls)).unwrap();
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), true),
            Field::new("g", DataType::Struct(inner), true),
        ]));
        RecordBatch::try_new(schema, vec![dict(false), Arc::new(s)]).unwrap()
    }

    /// Each row's values as plain strings (independent of how the dictionaries are laid out).
    pub(crate) fn rows(b: &RecordBatch) -> Vec<(Option<String>, Option<Option<String>>)> {
        let s = b.column(0).as_dictionary::<Int32Type>();
        let sv = s.values().as_string::<i32>();
        let g = b.column(1).as_struct();
        let gd = g.column(0).as_dictionary::<Int32Type>();
        let gv = gd.values().as_binary::<i32>();
        (0..b.num_rows())
            .map(|i| {
                let a = s.is_valid(i).then(|| sv.value(s.keys().value(i) as usize).to_string());
                let c = g
                    .is_valid(i)
                    .then(|| gd.is_valid(i).then(|| String::from_utf8(gv.value(gd.keys().value(i) as usize).to_vec()).unwrap()));
                (a, c)
            })
            .collect()
    }

    fn inputs() -> Vec<RecordBatch> {
        vec![
            batch(&["fat-a", "fat-b", "unused"], &[Some(0), Some(1), None, Some(0), Some(1), Some(0)]),
            batch(&["fat-b", "fat-c"], &[Some(1), Some(0), Some(0), None, Some(1), Some(1)]),
            batch(&["fat-a"], &[Some(0), Some(0), Some(0), Some(0), None, Some(0)]),
        ]
    }

    #[test]
    fn shared_batches_hold_the_same_rows_over_one_dictionary_of_the_referenced_values() {
        let before = inputs();
        let (after, bytes) = share(&before, 1 << 20).unwrap();
        for (b, a) in before.iter().zip(&after) {
            assert_eq!(rows(b), rows(a));
        }
        let values = after[0].column(0).as_dictionary::<Int32Type>().values().clone();
        assert!(after.iter().all(|b| b.column(0).as_dictionary::<Int32Type>().values().to_data().ptr_eq(&values.to_data())));
        let distinct: Vec<&str> = values.as_string::<i32>().iter().flatten().collect();
        assert_eq!(distinct, vec!["fat-a", "fat-b", "fat-c"], "each referenced value once, 'unused' dropped");
        assert_eq!(bytes, 2 * (15 + 3 * 4), "both columns' values and offsets");
        // no room: the batches keep their own dictionaries
        let (kept, bytes) = share(&before, 10).unwrap();
        assert_eq!(bytes, 0);
        assert!(kept.iter().zip(&before).all(|(k, b)| k.column(0).to_data().ptr_eq(&b.column(0).to_data())));
    }

    #[test]
    fn a_dictionary_with_a_referenced_null_value_is_left_as_it_is() {
        let values: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
        let column: ArrayRef = Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(vec![0, 1, 1, 0]), values).unwrap());
        let schema = Arc::new(Schema::new(vec![Field::new("s", column.data_type().clone(), true)]));
        let batches =
            vec![RecordBatch::try_new(schema.clone(), vec![column.clone()]).unwrap(), RecordBatch::try_new(schema, vec![column]).unwrap()];
        let (after, bytes) = share(&batches, 1 << 20).unwrap();
        assert_eq!(bytes, 0);
        assert!(after.iter().zip(&batches).all(|(a, b)| a.column(0).to_data().ptr_eq(&b.column(0).to_data())));
    }

    #[test]
    fn view_columns_are_gathered_into_plain_wide_arrays() {
        use arrow_array::{BinaryViewArray, LargeBinaryArray, LargeStringArray, StringViewArray};
        use arrow_schema::{Field, Schema};
        let long = |i: usize| format!("{i:04} a value longer than a view holds inline");
        let batch = |from: usize| {
            let strs: Vec<Option<String>> = (from..from + 3).map(|i| (i % 3 != 1).then(|| long(i))).collect();
            let schema = Schema::new(vec![Field::new("s", DataType::Utf8View, true), Field::new("b", DataType::BinaryView, true)]);
            let bins: Vec<Option<Vec<u8>>> = strs.iter().map(|s| s.as_ref().map(|s| s.as_bytes().to_vec())).collect();
            RecordBatch::try_new(
                std::sync::Arc::new(schema),
                vec![std::sync::Arc::new(StringViewArray::from_iter(strs.clone())), std::sync::Arc::new(BinaryViewArray::from_iter(bins))],
            )
            .unwrap()
        };
        let (a, b) = (batch(0), batch(3));
        let got = interleave(&[&a, &b], &[(1, 2), (0, 1), (0, 0), (1, 0)]).unwrap();
        assert_eq!(got.schema().field(0).data_type(), &DataType::LargeUtf8);
        assert_eq!(got.schema().field(1).data_type(), &DataType::LargeBinary);
        let want: Vec<Option<String>> = vec![Some(long(5)), None, Some(long(0)), Some(long(3))];
        let s = got.column(0).as_any().downcast_ref::<LargeStringArray>().unwrap();
        assert_eq!(s.iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>(), want);
        let bytes = got.column(1).as_any().downcast_ref::<LargeBinaryArray>().unwrap();
        assert_eq!(bytes.iter().map(|v| v.map(|b| String::from_utf8(b.to_vec()).unwrap())).collect::<Vec<_>>(), want);
    }

    #[test]
    fn gathering_keys_over_shared_dictionaries_gives_the_rows_arrow_gathers() {
        let before = inputs();
        let indices: Vec<(usize, usize)> = vec![(2, 5), (0, 1), (1, 3), (0, 2), (1, 0), (2, 4), (0, 4), (1, 5)];
        let refs: Vec<&RecordBatch> = before.iter().collect();
        let expected = rows(&arrow_select::interleave::interleave_record_batch(&refs, &indices).unwrap());
        let (shared, _) = share(&before, 1 << 20).unwrap();
        let refs: Vec<&RecordBatch> = shared.iter().collect();
        let got = interleave(&refs, &indices).unwrap();
        assert_eq!(rows(&got), expected);
        // the shared dictionary is kept, not merged or concatenated
        let values = shared[0].column(0).as_dictionary::<Int32Type>().values().to_data();
        assert!(got.column(0).as_dictionary::<Int32Type>().values().to_data().ptr_eq(&values));
        // sources with their own dictionaries are gathered by arrow
        let refs: Vec<&RecordBatch> = before.iter().collect();
        assert_eq!(rows(&interleave(&refs, &indices).unwrap()), expected);
    }
}
