//! Views: which string and binary columns are decoded as Arrow views (`Utf8View`,
//! `BinaryView`) instead of copied out value by value. A view array points into the page it was
//! decoded from — parquet-rs hands the decompressed page (or dictionary page) over as the
//! array's data buffer — so a fat value unique to every row (a conversation history per
//! message) is held once, in its page, rather than once in the page and once more in the batch
//! (and, for a dictionary-encoded chunk, a third time in the decoded dictionary). The encoder
//! writes the same Parquet values from views as from plain arrays.
//!
//! A column qualifies when it is a top-level string or binary column, no option or equality
//! delete uses it as a key (keys are compared, transformed and hashed as plain arrays), and it
//! is not decoded as a dictionary (`dictionary`).
//!
//! What a view batch holds is its views (16 bytes a row) and the pages they point into. It is
//! accounted as its views and the bytes of the values it references (`referenced_bytes`); the
//! pages themselves are accounted by the input while its row group is read
//! (`GuardedInput::account_pages`). A batch kept beyond that — in a sort buffer — or written to
//! a spilled run first has its values copied out of pages it references only in part
//! (`compact`), so that it holds (and the run writes) only what it references.
//!
//! Memory: nothing of its own; `compact` copies the referenced values of a batch once.

use crate::plan::Plan;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, FieldRef, Schema};
use std::collections::HashSet;
use std::sync::Arc;

/// The view type a string or binary type is decoded as.
fn view_of(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 => Some(DataType::Utf8View),
        DataType::Binary | DataType::LargeBinary => Some(DataType::BinaryView),
        _ => None,
    }
}

/// `schema` with its top-level columns named in `columns` decoded as views.
pub fn schema_with_views(schema: &Schema, columns: &HashSet<String>) -> Schema {
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .map(|f| match view_of(f.data_type()).filter(|_| columns.contains(f.name())) {
            Some(dt) => Arc::new(f.as_ref().clone().with_data_type(dt)),
            None => f.clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// Chooses the columns decoded as views (see the module doc) and turns them into views in
/// `plan.arrow_schema`. `keep_plain`: top-level columns used as keys.
pub fn choose(plan: &mut Plan, keep_plain: &[usize]) {
    let columns: HashSet<String> = plan
        .arrow_schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(i, f)| !keep_plain.contains(i) && view_of(f.data_type()).is_some())
        .map(|(_, f)| f.name().clone())
        .collect();
    if columns.is_empty() {
        return;
    }
    plan.arrow_schema = Arc::new(schema_with_views(&plan.arrow_schema, &columns));
    plan.view_columns = columns;
}

/// Bytes of the values of a view array's rows that live outside their views (values longer than
/// 12 bytes), for the rows it has; `None` for other arrays.
pub fn referenced_bytes(array: &dyn Array) -> Option<usize> {
    let long = |len: u32| if len > 12 { len as usize } else { 0 };
    match array.data_type() {
        DataType::Utf8View => Some(array.as_string_view().views().iter().map(|v| long(*v as u32)).sum()),
        DataType::BinaryView => Some(array.as_binary_view().views().iter().map(|v| long(*v as u32)).sum()),
        _ => None,
    }
}

/// Bytes a view array holds by its own count: its views, its validity and the values it
/// references; `None` for other arrays.
pub fn view_bytes(array: &dyn Array) -> Option<usize> {
    let values = referenced_bytes(array)?;
    Some(array.len() * 16 + array.nulls().map(|n| n.buffer().len()).unwrap_or(0) + values)
}

/// Bytes of the data buffers a view array points into; `None` for other arrays.
fn buffer_bytes(array: &dyn Array) -> Option<usize> {
    match array.data_type() {
        DataType::Utf8View => Some(array.as_string_view().data_buffers().iter().map(|b| b.capacity()).sum()),
        DataType::BinaryView => Some(array.as_binary_view().data_buffers().iter().map(|b| b.capacity()).sum()),
        _ => None,
    }
}

/// `batch` with every view column that points into more than it references (by more than
/// `slack` times) holding copies of its values instead; with `slack` 1, any column that does
/// not reference all of its buffers. Other columns are shared, not copied.
pub fn compact(batch: RecordBatch, slack: usize) -> RecordBatch {
    let wasteful = |c: &ArrayRef| match (buffer_bytes(c.as_ref()), referenced_bytes(c.as_ref())) {
        (Some(held), Some(used)) => held > used.saturating_mul(slack.max(1)),
        _ => false,
    };
    if !batch.columns().iter().any(wasteful) {
        return batch;
    }
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|c| -> ArrayRef {
            if !wasteful(c) {
                return c.clone();
            }
            match c.data_type() {
                DataType::Utf8View => Arc::new(c.as_string_view().gc()),
                DataType::BinaryView => Arc::new(c.as_binary_view().gc()),
                _ => c.clone(),
            }
        })
        .collect();
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    // (same schema, same lengths: only the buffers differ)
    RecordBatch::try_new_with_options(batch.schema(), columns, &options).unwrap_or(batch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{LargeStringArray, StringViewArray};
    use arrow_schema::Field;

    fn batch(values: &[Option<&str>]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8View, true)]));
        RecordBatch::try_new(schema, vec![Arc::new(StringViewArray::from(values.to_vec()))]).unwrap()
    }

    #[test]
    fn only_named_top_level_strings_and_binaries_become_views() {
        let schema = Schema::new(vec![
            Field::new("a", DataType::LargeUtf8, true),
            Field::new("b", DataType::LargeBinary, true),
            Field::new("k", DataType::LargeUtf8, true),
            Field::new("n", DataType::Int64, true),
        ]);
        let named: HashSet<String> = ["a", "b", "n"].iter().map(|s| s.to_string()).collect();
        let got = schema_with_views(&schema, &named);
        let types: Vec<&DataType> = got.fields().iter().map(|f| f.data_type()).collect();
        assert_eq!(types, [&DataType::Utf8View, &DataType::BinaryView, &DataType::LargeUtf8, &DataType::Int64]);
    }

    #[test]
    fn a_slice_is_accounted_as_what_it_references_and_compacting_copies_only_that() {
        let long = "x".repeat(1000);
        let values: Vec<Option<&str>> = (0..100).map(|i| if i % 10 == 0 { None } else { Some(long.as_str()) }).collect();
        let whole = batch(&values);
        let part = whole.slice(0, 10);
        let column = part.column(0);
        assert_eq!(referenced_bytes(column.as_ref()), Some(9 * 1000));
        assert!(buffer_bytes(column.as_ref()).unwrap() >= 90 * 1000);
        let compacted = compact(part.clone(), 2);
        let c = compacted.column(0);
        assert!(buffer_bytes(c.as_ref()).unwrap() < 20 * 1000, "a slice referencing a tenth of its buffer is copied out");
        assert_eq!(c.as_string_view().iter().collect::<Vec<_>>(), part.column(0).as_string_view().iter().collect::<Vec<_>>());
        // The whole batch references (nearly) all of its buffer: left as it is.
        let same = compact(whole.clone(), 2);
        assert_eq!(same.column(0).to_data().buffers()[1].as_ptr(), whole.column(0).to_data().buffers()[1].as_ptr());
        // Short values live in their views: nothing referenced outside.
        let short = batch(&[Some("abc"), None]);
        assert_eq!(referenced_bytes(short.column(0).as_ref()), Some(0));
        assert_eq!(referenced_bytes(&LargeStringArray::from(vec!["a"])), None);
    }
}
