//! What `guard` refuses in a footer parquet-rs parses: a column without repetition whose chunk
//! declares other than one value per row (read short, or sized by its claim), and a chunk
//! declaring more values than its bytes could hold. The footers are written by parquet-rs's own
//! `ParquetMetaDataWriter` from the file's metadata with one count changed.

use crate::common::{entries, opts, run, Scratch};
use arrow_array::builder::{Int32Builder, ListBuilder};
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use gencompact::CompactError;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader, ParquetMetaDataWriter, RowGroupMetaData};
use std::path::Path;
use std::sync::Arc;

/// A file of an INT64 column and a list<int32> column, 30 rows.
fn file() -> Vec<u8> {
    let mut lists = ListBuilder::new(Int32Builder::new());
    for i in 0..30 {
        lists.values().append_value(i);
        lists.append(true);
    }
    let batch = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from_iter_values(0..30)) as ArrayRef),
        ("list", Arc::new(lists.finish()) as ArrayRef),
    ])
    .unwrap();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    out
}

/// `bytes` with its footer written again, column `leaf` declaring `values` values.
fn with_values(bytes: &[u8], leaf: usize, values: i64) -> Vec<u8> {
    let meta = ParquetMetaDataReader::new().parse_and_finish(&bytes::Bytes::from(bytes.to_vec())).unwrap();
    let rg = meta.row_group(0);
    let columns = rg
        .columns()
        .iter()
        .enumerate()
        .map(|(i, c)| if i == leaf { c.clone().into_builder().set_num_values(values).build().unwrap() } else { c.clone() })
        .collect();
    let rg = RowGroupMetaData::builder(rg.schema_descr_ptr())
        .set_num_rows(rg.num_rows())
        .set_total_byte_size(rg.total_byte_size())
        .set_column_metadata(columns)
        .build()
        .unwrap();
    let meta = ParquetMetaData::new(meta.file_metadata().clone(), vec![rg]);
    let footer_len = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap()) as usize;
    let mut out = bytes[..bytes.len() - 8 - footer_len].to_vec();
    ParquetMetaDataWriter::new(&mut out, &meta).finish().unwrap();
    out
}

fn compact_one(dir: &Path, bytes: &[u8]) -> Result<gencompact::CompactReport, CompactError> {
    let input = dir.join("in.parquet");
    std::fs::write(&input, bytes).unwrap();
    run(&[input.to_string_lossy().into_owned()], &opts(&dir.join("out")))
}

fn refused(bytes: &[u8], column: &str, what: &str) {
    let s = Scratch::new("footers");
    match compact_one(s.path(), bytes) {
        Err(CompactError::InputCorrupt { column: Some(c), msg, .. }) => {
            assert!(c.contains(column), "{c}");
            assert!(msg.contains(what), "{msg}");
        }
        other => panic!("expected ERR_INPUT_CORRUPT naming {column}, got {other:?}"),
    }
    assert!(entries(&s.path().join("out")).is_empty(), "a refused call leaves nothing");
}

#[test]
fn a_rewritten_footer_with_the_true_counts_is_read() {
    // the footer writer round trip itself: the same counts read as before
    let s = Scratch::new("footers");
    let bytes = file();
    let report = compact_one(s.path(), &with_values(&bytes, 0, 30)).unwrap();
    assert_eq!(report.rows_written, 30);
}

#[test]
fn a_flat_column_declaring_other_than_one_value_per_row_is_refused() {
    let bytes = file();
    refused(&with_values(&bytes, 0, 1 << 40), "id", "values for 30 rows");
    refused(&with_values(&bytes, 0, 29), "id", "values for 30 rows");
}

#[test]
fn a_repeated_column_declaring_more_values_than_its_bytes_hold_is_refused() {
    refused(&with_values(&file(), 1, 1 << 40), "list", "values in");
}
