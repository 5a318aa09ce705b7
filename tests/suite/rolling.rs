//! Files follow `targetFileBytes` from the first file of a call on: rows that compress a
//! hundredfold (one fat JSON value on every row, dictionary-encoded) in a single input, a
//! target of 4 KiB, `batchBytes` 512 KiB — the shape of the host's "rolls to a new data file
//! once target_file_bytes is written" test. Before, the whole first batch went into the first
//! file (its size was judged on the input's bytes, a poor guide here), which came out 13 KB.

use crate::common;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Schema};
use common::{field, Scratch};
use gencompact::{compact, Options};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::ParquetMetaDataReader;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[test]
fn a_small_target_on_highly_compressible_rows_rolls_files_from_the_first_one() {
    let s = Scratch::new("rolling");
    let schema = Arc::new(Schema::new(vec![field("id", DataType::Int64, false, 1), field("doc", DataType::Utf8, false, 2)]));
    let fat = format!("{{\"messages\":[{}]}}", vec!["{\"role\":\"user\",\"content\":\"summarise the quarterly report\"}"; 200].join(","));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..600)),
        Arc::new(StringArray::from_iter_values(std::iter::repeat_n(fat.as_str(), 600))),
    ];
    let input = s.path().join("in.parquet");
    let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let mut w = ArrowWriter::try_new(File::create(&input).unwrap(), schema.clone(), Some(props)).unwrap();
    w.write(&RecordBatch::try_new(schema, cols).unwrap()).unwrap();
    w.close().unwrap();
    let in_bytes = std::fs::metadata(&input).unwrap().len();
    assert!(in_bytes * 100 < (600 * fat.len()) as u64, "the rows compress a hundredfold: {in_bytes} bytes on disk");

    let mut o = Options::new(s.path().join("out"));
    o.batch_bytes = 512 << 10;
    o.target_file_bytes = 4 << 10;
    o.compression = Some(Compression::SNAPPY);
    let r = compact(&[input.display().to_string()], &o, &AtomicBool::new(false), &|_| {}).unwrap();
    assert_eq!(r.rows_written, 600);
    assert!(r.files.len() >= 3, "several files: {:?}", r.files.iter().map(|f| f.file_size_in_bytes).collect::<Vec<_>>());
    let mut several = false;
    for f in &r.files {
        let meta = ParquetMetaDataReader::new().parse_and_finish(&File::open(&f.path).unwrap()).unwrap();
        let largest = meta.row_groups().iter().map(|g| g.compressed_size()).max().unwrap_or(0) as u64;
        several |= meta.num_row_groups() > 1;
        assert!(
            f.file_size_in_bytes <= o.target_file_bytes + largest,
            "{}: {} bytes > target + largest row group ({largest})",
            f.path,
            f.file_size_in_bytes
        );
    }
    assert!(several, "at least one file holds several row groups");
}

/// A target smaller than a file's own footer: every file still gets rows (before, each new
/// file was judged full before its first row and closed empty, forever).
#[test]
fn a_target_smaller_than_a_footer_writes_no_empty_file() {
    let s = Scratch::new("rolling-tiny");
    let schema = Arc::new(Schema::new(vec![field("id", DataType::Int64, false, 1), field("doc", DataType::Utf8, false, 2)]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..40)),
        Arc::new(StringArray::from_iter_values((0..40).map(|i| format!("row {i} {}", "x".repeat(3000))))),
    ];
    let input = s.path().join("in.parquet");
    let mut w = ArrowWriter::try_new(File::create(&input).unwrap(), schema.clone(), None).unwrap();
    w.write(&RecordBatch::try_new(schema, cols).unwrap()).unwrap();
    w.close().unwrap();

    let mut o = Options::new(s.path().join("out"));
    o.target_file_bytes = 1024;
    o.batch_rows = 8;
    let (tx, rx) = std::sync::mpsc::channel();
    let (out, target) = (o.out_dir.clone(), o.target_file_bytes);
    std::thread::spawn(move || {
        let _ = tx.send(compact(&[input.display().to_string()], &o, &AtomicBool::new(false), &|_| {}));
    });
    let r = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the call ends").unwrap();
    assert_eq!(r.rows_written, 40);
    assert!(r.files.iter().all(|f| f.record_count > 0), "no empty file: {:?}", r.files.iter().map(|f| f.record_count).collect::<Vec<_>>());
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), r.files.len());
    let footer_only = r.files.iter().map(|f| f.file_size_in_bytes).min().unwrap_or(0);
    assert!(footer_only > target, "the footer alone passes the target ({footer_only} bytes)");
}
