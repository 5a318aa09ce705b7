//! Columns whose values repeat are decoded as Arrow dictionaries (`dictionary::choose`): which
//! are chosen, and that the rows written from them — sorted, spilled, partitioned — are the
//! input rows, with row groups still cut on the values' expanded size.

use crate::common;
use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_schema::DataType;
use common::*;
use gencompact::iceberg::partition::{PartitionField, Transform};
use gencompact::options::SortKey;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::metadata::ParquetMetaDataReader;
use std::fs::File;

const FAT: usize = 20_000;

/// (id, ts, fat, body) of every row of `path`, decoded plain by parquet-rs.
type Row = (String, i64, Option<Vec<u8>>, Option<String>);

fn rows_of(path: &str) -> Vec<Row> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    let mut out = Vec::new();
    for b in reader {
        let b = b.unwrap();
        assert!(b.columns().iter().all(|c| !matches!(c.data_type(), DataType::Dictionary(..))));
        let id = b.column(0).as_string::<i32>();
        let ts = b.column(1).as_primitive::<arrow_array::types::TimestampMicrosecondType>();
        let fat = b.column(2).as_binary::<i32>();
        let body = b.column(3).as_string::<i32>();
        for i in 0..b.num_rows() {
            out.push((
                id.value(i).to_string(),
                ts.value(i),
                fat.is_valid(i).then(|| fat.value(i).to_vec()),
                body.is_valid(i).then(|| body.value(i).to_string()),
            ));
        }
    }
    out
}

#[test]
fn repeated_values_are_chosen_and_keys_unique_values_and_numbers_are_not() {
    let s = Scratch::new("dict-choose");
    let files = write_inputs(s.path(), 3, 40, FAT, 100);
    let choose = |plan: &mut gencompact::plan::Plan, keep: &[usize]| gencompact::dictionary::choose(plan, keep, u64::MAX);
    let choices = choices(&files, "fat", choose, |dt| matches!(dt, DataType::Dictionary(..)));
    for ((plan, types), fat_dictionary) in choices.into_iter().zip([true, false]) {
        // fat: one value per file, on 40 rows; id and body: a value per row; ts, n: not strings
        assert_eq!(
            types,
            vec![("id".into(), false), ("ts".into(), false), ("fat".into(), fat_dictionary), ("body".into(), false), ("n".into(), false)],
            "fat kept plain: {}",
            !fat_dictionary
        );
        assert_eq!(plan.dictionary_columns.len(), usize::from(fat_dictionary));
    }
}

#[test]
fn rows_decoded_as_dictionaries_are_written_exactly_and_row_groups_are_cut_on_expanded_bytes() {
    let s = Scratch::new("dict-e2e");
    let files = write_inputs(s.path(), 6, 60, FAT, 200);
    let mut all: Vec<_> = files.iter().flat_map(|f| rows_of(f)).collect();
    // 360 rows of ~20 KB: 7.2 MB expanded, a few KB as dictionaries
    let batch_bytes = 64 << 10;
    for (name, sorted, partitioned) in [("plain", false, false), ("sorted", true, false), ("partitioned-sorted", true, true)] {
        let out = s.path().join(name);
        let mut o = opts(&out);
        o.batch_bytes = batch_bytes;
        if sorted {
            // descending ts: every file's rows reversed, so the sort buffers and spills
            o.sort_by = Some(vec![SortKey { column: "ts".into(), descending: true, nulls_first: false }]);
        }
        if partitioned {
            o.partition_by = Some(vec![PartitionField { column: "n".into(), transform: Transform::Bucket(2), name: "n_bucket".into() }]);
        }
        let r = run(&files, &o).unwrap();
        assert_eq!(r.rows_written, 360, "{name}");
        if sorted && !partitioned {
            assert!(r.files_spilled > 0, "{name}: the sort spilled ({} runs)", r.files_spilled);
        }
        let mut got = Vec::new();
        for f in &r.files {
            let meta = ParquetMetaDataReader::new().parse_and_finish(&File::open(&f.path).unwrap()).unwrap();
            for rg in meta.row_groups() {
                // the fat value alone, expanded, fills a row group's batchBytes
                assert!(rg.num_rows() as usize * FAT <= batch_bytes, "{name}: a row group of {} rows", rg.num_rows());
            }
            let rows = rows_of(&f.path);
            if sorted {
                assert!(rows.windows(2).all(|w| w[0].1 >= w[1].1), "{name}: sorted by ts descending");
            }
            got.extend(rows);
        }
        got.sort();
        all.sort();
        assert_eq!(got, all, "{name}: the input rows, fat values included");
    }
}

#[test]
fn a_spilled_sort_of_dictionary_columns_writes_the_input_rows_and_the_same_bytes_for_any_threads() {
    let s = Scratch::new("dict-spill");
    let fat = 2_000;
    let files = write_inputs(s.path(), 6, 600, fat, 200);
    let mut all: Vec<_> = files.iter().flat_map(|f| rows_of(f)).collect();
    all.sort_by_key(|r| std::cmp::Reverse(r.1));
    let mut outputs: Vec<Vec<Vec<u8>>> = Vec::new();
    for threads in [1, 2, 8] {
        let out = s.path().join(format!("out-{threads}"));
        let mut o = opts(&out);
        o.threads = threads;
        o.file_name_prefix = "t".into();
        o.batch_bytes = 256 << 10;
        o.sort_by = Some(vec![SortKey { column: "ts".into(), descending: true, nulls_first: false }]);
        // (runs spilled on a thread of their own with threads > 1, their chunks sharing the
        // run's dictionaries: the 2 KB values fit batchBytes / 16)
        let r = run(&files, &o).unwrap();
        assert!(r.files_spilled >= 3, "threads {threads}: the sort spilled ({} runs)", r.files_spilled);
        let rows: Vec<_> = r.files.iter().flat_map(|f| rows_of(&f.path)).collect();
        assert_eq!(rows, all, "threads {threads}: sorted by ts descending, the input rows");
        outputs.push(r.files.iter().map(|f| std::fs::read(&f.path).unwrap()).collect());
    }
    assert_eq!(outputs[0], outputs[1], "threads 1 and 2");
    assert_eq!(outputs[0], outputs[2], "threads 1 and 8");
}
