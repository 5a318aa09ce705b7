//! Views: which string and binary columns are decoded as Arrow views (`Utf8View`,
//! `BinaryView`) instead of copied out value by value. A view array points into the page it was
//! decoded from — parquet-rs hands the decompressed page (or dictionary page) over as the
//! array's data buffer — so a fat value unique to every row (a conversation history per
//! message) is held once, in its page, rather than once in the page and once more in the batch
//! (and, for a dictionary-encoded chunk, a third time in the decoded dictionary). The encoder
//! writes the same Parquet values from views as from plain arrays.
//!
//! A column qualifies when it is a top-level string or binary column, no option or equality
//! delete uses it as a key (keys are compared, transformed and hashed as plain arrays), it is
//! not decoded as a dictionary (`dictionary`), and its pages are large: in a sample of the
//! inputs, the first page of one of its chunks declares at least `LARGE_PAGE` bytes. Pages of
//! the usual size (about 1 MiB: parquet-rs, hyparquet-writer, Arrow C++ for small values) are
//! cheaper copied out of a buffer the allocator hands straight back than kept alive, one per
//! page, until the batch that points into them is written.
//!
//! With `sortBy` no column is: a sort buffer keeps batches long after their row group was read,
//! and a view would keep its whole page alive for the few rows it references.
//!
//! What a view batch holds is its views (16 bytes a row) and the pages they point into. It is
//! accounted as its views and the bytes of the values it references (`referenced_bytes`); the
//! pages themselves are accounted by the input while its row group is read
//! (`GuardedInput::account_pages`). A batch passes from the reader to the writer and is dropped
//! when encoded, so the pages it keeps are those of the row group being read, or the one before.
//!
//! Memory: nothing of its own.

use crate::error::Result;
use crate::plan::{sample_row_groups, Plan};
use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::{DataType, FieldRef, Schema};
use std::collections::HashSet;
use std::sync::Arc;

/// The view type a string or binary type is decoded as.
pub fn view_of(data_type: &DataType) -> Option<DataType> {
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

/// Uncompressed bytes from which a page is large (`streamed`'s).
pub const LARGE_PAGE: u64 = crate::streamed::LARGE_PAGE;

/// Chooses the columns decoded as views (see the module doc) and turns them into views in
/// `plan.arrow_schema`. `keep_plain`: top-level columns used as keys.
pub fn choose(plan: &mut Plan, keep_plain: &[usize], page_cap: u64) -> Result<()> {
    let candidates: Vec<String> = plan
        .arrow_schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(i, f)| !keep_plain.contains(i) && view_of(f.data_type()).is_some())
        .map(|(_, f)| f.name().clone())
        .collect();
    let mut columns: HashSet<String> = HashSet::new();
    if candidates.is_empty() {
        return Ok(());
    }
    sample_row_groups(plan, page_cap, |file, rg| {
        for chunk in rg.columns() {
            let name = chunk.column_path().parts().first();
            let Some(name) = name.filter(|n| chunk.column_path().parts().len() == 1 && candidates.contains(n)) else { continue };
            let start = chunk.dictionary_page_offset().unwrap_or(chunk.data_page_offset()).max(0) as u64;
            if file.page_size_at(start).is_some_and(|size| size >= LARGE_PAGE) {
                columns.insert(name.clone());
            }
        }
        columns.len() < candidates.len()
    })?;
    if !columns.is_empty() {
        plan.arrow_schema = Arc::new(schema_with_views(&plan.arrow_schema, &columns));
        plan.view_columns = columns;
    }
    Ok(())
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
    Some(array.len() * 16 + array.nulls().map(|n| n.len().div_ceil(8)).unwrap_or(0) + values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{LargeStringArray, StringViewArray};
    use arrow_schema::Field;

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
    fn a_slice_is_accounted_as_what_it_references() {
        let long = "x".repeat(1000);
        let values: Vec<Option<&str>> = (0..100).map(|i| if i % 10 == 0 { None } else { Some(long.as_str()) }).collect();
        let whole = StringViewArray::from(values);
        let part = whole.slice(0, 10);
        assert_eq!(referenced_bytes(&part), Some(9 * 1000));
        assert_eq!(view_bytes(&part), Some(10 * 16 + 2 + 9 * 1000));
        // Short values live in their views: nothing referenced outside.
        let short = StringViewArray::from(vec![Some("abc"), None]);
        assert_eq!(referenced_bytes(&short), Some(0));
        assert_eq!(referenced_bytes(&LargeStringArray::from(vec!["a"])), None);
    }
}
