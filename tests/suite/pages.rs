//! Output data pages: a fat column (values of `FAT_VALUE` bytes or more on average in the
//! inputs) gets pages of at least 1.5 MiB, the others parquet-rs's default limit, and so do
//! three fat columns; read back page by page with parquet-rs's own page reader.

use crate::common;

use common::*;
use gencompact::iceberg::input::InputFile;
use gencompact::plan::build_plan;
use parquet::column::page::Page;
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::fs::File;

/// Each data page's uncompressed bytes, per leaf column, over every row group of `path`.
fn data_pages(path: &str) -> Vec<Vec<Vec<usize>>> {
    let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    for rg in 0..reader.num_row_groups() {
        let group = reader.get_row_group(rg).unwrap();
        let mut columns = Vec::new();
        for c in 0..group.num_columns() {
            let mut sizes = Vec::new();
            for page in group.get_column_page_reader(c).unwrap() {
                match page.unwrap() {
                    Page::DataPage { buf, .. } | Page::DataPageV2 { buf, .. } => sizes.push(buf.len()),
                    Page::DictionaryPage { .. } => {}
                }
            }
            columns.push(sizes);
        }
        out.push(columns);
    }
    out
}

#[test]
fn a_fat_column_is_written_in_pages_of_at_least_one_and_a_half_mib_and_the_others_are_not() {
    let s = Scratch::new("pages");
    // `body`: 8 KB of text of its own per row (six rows in seven); `fat`: one value repeated on
    // every row of a file, dictionary-encoded, so its chunks are small.
    let files = write_inputs(s.path(), 3, 300, 20_000, 8192);
    let inputs: Vec<InputFile> = files.iter().map(|f| InputFile::plain(f.as_str())).collect();
    let plan = build_plan(&inputs).unwrap();
    let fat: Vec<String> =
        plan.parquet_schema.columns().iter().zip(&plan.fat_leaves).filter(|(_, fat)| **fat).map(|(c, _)| c.path().string()).collect();
    assert_eq!(fat, vec!["body".to_string()], "only the column of 8 KB values of their own is fat");

    let mut o = opts(&s.path().join("out"));
    o.compression = Some(parquet::basic::Compression::ZSTD(Default::default()));
    let r = run(&files, &o).unwrap();
    assert_eq!(r.rows_written, 900);
    assert_eq!(r.files.len(), 1);
    let pages = data_pages(&r.files[0].path);
    let body = plan.parquet_schema.columns().iter().position(|c| c.path().string() == "body").unwrap();
    let body_pages: Vec<usize> = pages.iter().flat_map(|rg| rg[body].clone()).collect();
    assert!(body_pages.len() >= 3, "the column's ~6.3 MB in several pages: {body_pages:?}");
    for rg in &pages {
        let chunk = &rg[body];
        // (the last page of a chunk holds what is left)
        for &size in &chunk[..chunk.len() - 1] {
            assert!(size >= 3 << 19, "a page of the fat column holds {size} bytes: {chunk:?}");
        }
        for (c, sizes) in rg.iter().enumerate().filter(|(c, _)| *c != body) {
            assert!(sizes.iter().all(|&size| size <= 1 << 20), "column {c}'s pages stay at the default limit: {sizes:?}");
        }
    }
}

#[test]
fn three_fat_columns_keep_the_default_page_limit() {
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use arrow_schema::{DataType, Schema};
    let s = Scratch::new("pages-three");
    let schema =
        std::sync::Arc::new(Schema::new((0..3).map(|c| field(&format!("fat{c}"), DataType::Utf8, false, c + 1)).collect::<Vec<_>>()));
    let mut files = Vec::new();
    for f in 0..2 {
        let cols: Vec<ArrayRef> = (0..3)
            .map(|c| {
                let values = (0..300).map(|r| noise((f * 1000 + c * 100_000 + r) as u64, 8192));
                std::sync::Arc::new(StringArray::from_iter_values(values)) as ArrayRef
            })
            .collect();
        let path = s.path().join(format!("in-{f}.parquet"));
        let mut w = parquet::arrow::ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), None).unwrap();
        w.write(&RecordBatch::try_new(schema.clone(), cols).unwrap()).unwrap();
        w.close().unwrap();
        files.push(path.display().to_string());
    }
    let inputs: Vec<InputFile> = files.iter().map(|f| InputFile::plain(f.as_str())).collect();
    let plan = build_plan(&inputs).unwrap();
    assert_eq!(plan.fat_leaves, vec![true, true, true], "each column of 8 KB values of their own is fat");
    let r = run(&files, &opts(&s.path().join("out"))).unwrap();
    assert_eq!(r.rows_written, 600);
    for rg in data_pages(&r.files[0].path) {
        for (c, chunk) in rg.iter().enumerate() {
            assert!(chunk.len() >= 3, "column {c}'s ~4.9 MB in pages: {chunk:?}");
            assert!(chunk.iter().all(|&size| size < 3 << 19), "column {c} keeps the default limit: {chunk:?}");
        }
    }
}
