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
//! What a view batch holds is its views (16 bytes a row) and the pages they point into. It is
//! accounted as its views and the bytes of the values it references (`referenced_bytes`); the
//! pages themselves are accounted by the input while its row group is read
//! (`GuardedInput::account_pages`). A batch passes from the reader to the writer and is dropped
//! when encoded, so the pages it keeps are those of the row group being read, or the one before.
//!
//! With `sortBy` the rule differs (`choose_for_sort`): the fat columns (`Plan::fat_leaves`: a
//! conversation history per message) are decoded as views whatever their pages' size, and
//! no other. Sorting copies every value once anyway, when it gathers a sorted chunk
//! (`gather`, which makes plain arrays of views: runs, merges and outputs are as without);
//! a copy out of the page into the batch before that would be a second one. A sort buffer
//! keeps its batches until it is spilled, and so the pages they point into: `Pinned` accounts
//! each page once per buffer, at its whole size, and a batch that points into pages mostly
//! for values it does not hold (rows dropped by dedupe or deletes, the end of a row group)
//! has those columns copied out instead (`Pinned::settle`).
//!
//! Memory: `Pinned` holds the addresses of the pages one sort buffer points into.

use crate::error::{CompactError, Result};
use crate::plan::{sample_row_groups, Plan};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
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

/// `schema` with its view columns as the wide string and binary types they stand for.
pub fn without_views(schema: &Schema) -> Schema {
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8View => Arc::new(f.as_ref().clone().with_data_type(DataType::LargeUtf8)),
            DataType::BinaryView => Arc::new(f.as_ref().clone().with_data_type(DataType::LargeBinary)),
            _ => f.clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// With `sortBy`: the fat top-level string and binary columns that are not keys
/// (`keep_plain`) nor decoded as dictionaries become views in `plan.arrow_schema`.
pub fn choose_for_sort(plan: &mut Plan, keep_plain: &[usize]) {
    let fat: HashSet<&str> = plan
        .parquet_schema
        .columns()
        .iter()
        .zip(&plan.fat_leaves)
        .filter_map(|(c, fat)| match c.path().parts() {
            [name] if *fat => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let columns: HashSet<String> = plan
        .arrow_schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(i, f)| !keep_plain.contains(i) && view_of(f.data_type()).is_some() && fat.contains(f.name().as_str()))
        .map(|(_, f)| f.name().clone())
        .collect();
    if !columns.is_empty() {
        plan.arrow_schema = Arc::new(schema_with_views(&plan.arrow_schema, &columns));
        plan.view_columns = columns;
    }
}

/// Whether `data_type` is a view type (`Utf8View`, `BinaryView`).
pub fn is_view(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Utf8View | DataType::BinaryView)
}

/// Whether `batch` has a view column.
pub fn has_views(batch: &RecordBatch) -> bool {
    batch.columns().iter().any(|a| is_view(a.data_type()))
}

/// The pages the batches of one sort buffer point into (see the module doc).
#[derive(Default)]
pub struct Pinned {
    pages: HashSet<usize>,
}

impl Pinned {
    /// `batch` with each view column that references less than half of the bytes of the
    /// pages it points into copied out (compacted into one buffer of its own).
    pub fn settle(batch: RecordBatch) -> Result<RecordBatch> {
        let sparse: Vec<bool> = batch
            .columns()
            .iter()
            .map(|a| {
                let pages: usize = data_buffers(a.as_ref()).iter().map(|b| b.len()).sum();
                referenced_bytes(a.as_ref()).is_some_and(|r| r.saturating_mul(2) < pages)
            })
            .collect();
        if !sparse.contains(&true) {
            return Ok(batch);
        }
        let columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .zip(sparse)
            .map(|(a, sparse)| match (sparse, a.data_type()) {
                (true, DataType::Utf8View) => Arc::new(a.as_string_view().gc()) as ArrayRef,
                (true, DataType::BinaryView) => Arc::new(a.as_binary_view().gc()) as ArrayRef,
                _ => a.clone(),
            })
            .collect();
        RecordBatch::try_new(batch.schema(), columns).map_err(|e| CompactError::Internal(format!("copying out sparse views: {e}")))
    }

    /// How much more `batch` keeps than its own count says (`view_bytes`: views, validity and
    /// the values referenced): the pages its view columns point into that no batch of the
    /// buffer did before, at their whole size, less the values it references (those in pages
    /// an earlier batch brought are counted there). May be less than nothing.
    pub fn beyond_own(&self, batch: &RecordBatch) -> isize {
        let mut seen: HashSet<usize> = HashSet::new();
        let mut delta = 0isize;
        for a in batch.columns() {
            let Some(referenced) = referenced_bytes(a.as_ref()) else { continue };
            let pages: usize = data_buffers(a.as_ref())
                .iter()
                .filter(|b| !self.pages.contains(&(b.as_ptr() as usize)) && seen.insert(b.as_ptr() as usize))
                .map(|b| b.len())
                .sum();
            delta += pages as isize - referenced as isize;
        }
        delta
    }

    /// `batch` joins the buffer: its pages are held from now on.
    pub fn admit(&mut self, batch: &RecordBatch) {
        for a in batch.columns() {
            self.pages.extend(data_buffers(a.as_ref()).iter().map(|b| b.as_ptr() as usize));
        }
    }

    /// The buffer was spilled: none of its pages is held by the next.
    pub fn clear(&mut self) {
        self.pages.clear();
    }
}

/// The data buffers of a view array (none for other arrays).
fn data_buffers(array: &dyn Array) -> &[arrow_buffer::Buffer] {
    match array.data_type() {
        DataType::Utf8View => array.as_string_view().data_buffers(),
        DataType::BinaryView => array.as_binary_view().data_buffers(),
        _ => &[],
    }
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
    fn only_named_top_level_strings_and_binaries_become_views_and_back() {
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
        // and back: a view column as the wide plain type it stands for
        assert_eq!(without_views(&got), schema);
    }

    /// A view column of `n` values of `len` bytes each, all in one page (data buffer).
    fn one_page(n: usize, len: usize) -> RecordBatch {
        let values: Vec<String> = (0..n).map(|i| format!("{i:08}{}", "v".repeat(len - 8))).collect();
        let column = StringViewArray::from_iter_values(values.iter());
        assert_eq!(column.data_buffers().len(), 1);
        RecordBatch::try_new(Arc::new(Schema::new(vec![Field::new("h", DataType::Utf8View, true)])), vec![Arc::new(column)]).unwrap()
    }

    #[test]
    fn a_sort_buffer_counts_each_page_once_and_whole() {
        let page = one_page(10, 1000);
        let bytes = page.column(0).as_string_view().data_buffers()[0].len();
        let (first, second) = (page.slice(0, 6), page.slice(6, 4));
        let mut pinned = Pinned::default();
        // the first batch on a page keeps all of it: beyond its own 6 values, the other 4
        assert_eq!(pinned.beyond_own(&first), (bytes - 6 * 1000) as isize);
        pinned.admit(&first);
        // the next one on the same page keeps nothing more: its values were counted
        assert_eq!(pinned.beyond_own(&second), -4000);
        // the next buffer counts the page again
        pinned.clear();
        assert_eq!(pinned.beyond_own(&second), (bytes - 4 * 1000) as isize);
    }

    #[test]
    fn a_batch_that_points_mostly_past_its_values_is_copied_out() {
        let page = one_page(10, 1000);
        // 4 of 10: copied into a buffer of its own, the same values
        let sparse = page.slice(0, 4);
        let settled = Pinned::settle(sparse.clone()).unwrap();
        let (before, after) = (sparse.column(0).as_string_view(), settled.column(0).as_string_view());
        assert_ne!(before.data_buffers()[0].as_ptr(), after.data_buffers()[0].as_ptr());
        assert_eq!(after.data_buffers().iter().map(|b| b.len()).sum::<usize>(), 4000);
        assert!((0..4).all(|i| before.value(i) == after.value(i)));
        // 6 of 10: left pointing into its page
        let dense = page.slice(0, 6);
        let kept = Pinned::settle(dense.clone()).unwrap();
        assert_eq!(kept.column(0).as_string_view().data_buffers()[0].as_ptr(), dense.column(0).as_string_view().data_buffers()[0].as_ptr());
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
