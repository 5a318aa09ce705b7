//! Strings and binaries in large pages are decoded as Arrow views into their pages
//! (`views::choose`), and a sort's fat columns whatever their pages (`views::choose_for_sort`):
//! which columns are chosen, and that the rows written from them — sorted and spilled too —
//! are the input rows.

use crate::common;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int32Array, RecordBatch, StringArray};
use arrow_schema::DataType;
use common::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::sync::Arc;

/// Two inputs of 120 rows: `big` holds a ~60 KB value of its own per row, written as one page
/// per chunk (as DuckDB and pyarrow write fat unique values: ~7 MB here); `small` holds short
/// values of their own, in parquet-rs's usual 1 MiB pages.
fn write_inputs(dir: &std::path::Path) -> Vec<String> {
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        field("n", DataType::Int32, false, 1),
        field("big", DataType::Utf8, true, 2),
        field("small", DataType::Utf8, true, 3),
    ]));
    let mut paths = Vec::new();
    for f in 0..2 {
        let rows = 120;
        let n: ArrayRef = Arc::new(Int32Array::from_iter_values((0..rows).map(|r| f * rows + r)));
        let big: ArrayRef = Arc::new(StringArray::from_iter((0..rows).map(|r| (r % 7 != 3).then(|| noise((f * rows + r) as u64, 60_000)))));
        let small: ArrayRef = Arc::new(StringArray::from_iter_values((0..rows).map(|r| format!("row {} of {f}", r))));
        let batch = RecordBatch::try_new(schema.clone(), vec![n, big, small]).unwrap();
        let props = WriterProperties::builder()
            .set_dictionary_enabled(false)
            .set_column_data_page_size_limit("big".into(), 64 << 20)
            .set_write_batch_size(1024)
            .build();
        let path = dir.join(format!("in-{f}.parquet"));
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        paths.push(path.display().to_string());
    }
    paths
}

type Row = (i32, Option<String>, String);

fn rows_of(paths: &[String]) -> Vec<Row> {
    let mut out = Vec::new();
    for path in paths {
        for b in ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap() {
            let b = b.unwrap();
            let (n, big, small) = (
                b.column(0).as_primitive::<arrow_array::types::Int32Type>(),
                b.column(1).as_string::<i32>(),
                b.column(2).as_string::<i32>(),
            );
            for i in 0..b.num_rows() {
                out.push((n.value(i), big.is_valid(i).then(|| big.value(i).to_string()), small.value(i).to_string()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn columns_in_large_pages_are_chosen_and_keys_and_columns_in_usual_pages_are_not() {
    let s = Scratch::new("views-choose");
    let files = write_inputs(s.path());
    let choose = |plan: &mut gencompact::plan::Plan, keep: &[usize]| gencompact::views::choose(plan, keep, u64::MAX);
    assert_only_big_is_a_view_unless_a_key(&files, choose);
}

/// `choose` makes `big` a view, and neither `n` nor `small`; with `big` a key, no column.
fn assert_only_big_is_a_view_unless_a_key(
    files: &[String],
    choose: impl Fn(&mut gencompact::plan::Plan, &[usize]) -> gencompact::Result<()>,
) {
    let choices = choices(files, "big", choose, |dt| dt == &DataType::Utf8View);
    for ((_, views), big_view) in choices.into_iter().zip([true, false]) {
        assert_eq!(views, vec![("n".into(), false), ("big".into(), big_view), ("small".into(), false)]);
    }
}

#[test]
fn rows_decoded_as_views_are_written_as_they_were_read() {
    let s = Scratch::new("views-rows");
    let files = write_inputs(s.path());
    let out = s.path().join("out");
    for threads in [1, 2] {
        let mut o = opts(&out);
        o.threads = threads;
        o.batch_bytes = 2 << 20; // several batches per page
        let report = run(&files, &o).unwrap();
        let written: Vec<String> = report.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(rows_of(&written), rows_of(&files), "threads {threads}");
        std::fs::remove_dir_all(&out).unwrap();
    }
}

#[test]
fn a_sort_decodes_fat_columns_as_views_whatever_their_pages_and_not_keys() {
    let s = Scratch::new("views-sort-choose");
    let files = write_inputs(s.path());
    let choose = |plan: &mut gencompact::plan::Plan, keep: &[usize]| {
        gencompact::views::choose_for_sort(plan, keep);
        Ok(())
    };
    // (the same inputs, the rule for sorts: `big`'s values are fat; `small`'s are not)
    assert_only_big_is_a_view_unless_a_key(&files, choose);
}

#[test]
fn sorted_rows_decoded_as_views_are_spilled_and_written_in_order_as_they_were_read() {
    let s = Scratch::new("views-sort-rows");
    let files = write_inputs(s.path());
    let out = s.path().join("out");
    let mut want = rows_of(&files);
    want.sort_by_key(|r| std::cmp::Reverse(r.0));
    for threads in [1, 2] {
        let mut o = opts(&out);
        o.threads = threads;
        o.batch_bytes = 2 << 20; // a sort buffer of 1.5 MiB: ~25 rows of 60 KB, many runs
        o.sort_by = Some(vec![gencompact::options::SortKey { column: "n".into(), descending: true, nulls_first: false }]);
        let report = run(&files, &o).unwrap();
        assert!(report.files_spilled > 1, "threads {threads}: {} runs", report.files_spilled);
        let mut got = Vec::new();
        for f in &report.files {
            let mut rows = rows_of(std::slice::from_ref(&f.path));
            rows.sort_by_key(|r| std::cmp::Reverse(r.0));
            got.extend(rows);
        }
        assert_eq!(got, want, "threads {threads}");
        // each file in order, and the files one after the other
        let firsts: Vec<i32> = report.files.iter().map(|f| rows_in_file_order(&f.path)[0]).collect();
        assert!(firsts.windows(2).all(|w| w[0] > w[1]), "{firsts:?}");
        for f in &report.files {
            let n = rows_in_file_order(&f.path);
            assert!(n.windows(2).all(|w| w[0] > w[1]), "threads {threads}: {} out of order", f.path);
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
}

/// The `n` column of a file, in the file's order.
fn rows_in_file_order(path: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for b in ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap() {
        let b = b.unwrap();
        out.extend(b.column(0).as_primitive::<arrow_array::types::Int32Type>().values().iter().copied());
    }
    out
}
