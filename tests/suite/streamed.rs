//! Large plain pages of flat string and binary columns are decompressed as a stream and handed
//! to the column reader in slices (`streamed`): the rows read are parquet-rs's own, for every
//! codec streamed, V1 and V2 pages, optional and required columns, with and without a row
//! selection, and the slicing path ran; small ZSTD chunks of every column are read here too,
//! their pages decompressed whole.

use crate::common;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::*;
use gencompact::chunks::RowGroup;
use gencompact::guard::GuardedInput;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::arrow::{parquet_to_arrow_field_levels, ArrowWriter, ProjectionMask};
use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterVersion};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const ROWS: usize = 700;

/// A conversation history of its own per row: compressible text, ~9 KB (6 MB a page).
fn history(row: usize) -> String {
    let mut s = String::new();
    let mut turn = 0;
    while s.len() < 9_000 {
        s.push_str(&format!("{{\"row\":{row},\"turn\":{turn},\"role\":\"user\",\"text\":\"{}\"}},", noise((row * 31 + turn) as u64, 40)));
        turn += 1;
    }
    s
}

/// `n`, `text` (optional), `blob` (required binary).
fn three_columns() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("n", DataType::Int64, false),
        Field::new("text", DataType::Utf8, true),
        Field::new("blob", DataType::Binary, false),
    ]))
}

/// One row group: `n`, `text` (optional, every 9th row null, one page for the chunk), `blob`
/// (required binary, one page), written with `codec` in `version`'s data pages.
fn write(dir: &Path, codec: Compression, version: WriterVersion) -> PathBuf {
    write_paged(dir, codec, version, 64 << 20)
}

/// As `write`, with data pages of at most `page` bytes.
fn write_paged(dir: &Path, codec: Compression, version: WriterVersion, page: usize) -> PathBuf {
    let batch = batch_of(ROWS, |r| (r % 9 != 4).then(|| history(r)));
    let props = WriterProperties::builder()
        .set_compression(codec)
        .set_writer_version(version)
        .set_dictionary_enabled(false)
        .set_encoding(parquet::basic::Encoding::PLAIN)
        .set_data_page_size_limit(page)
        .set_write_batch_size(if page >= 64 << 20 { ROWS } else { 16 })
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
        .build();
    write_with(dir, &format!("{codec:?}-{version:?}-{page}"), &batch, props)
}

/// `rows` rows of `three_columns`: `n` counts, `text` is `text(row)`, every `blob` its own.
fn batch_of(rows: usize, text: impl Fn(usize) -> Option<String>) -> RecordBatch {
    let n: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows as i64));
    let text: ArrayRef = Arc::new(StringArray::from_iter((0..rows).map(text)));
    let blobs: Vec<Vec<u8>> = (0..rows).map(|r| history(r + rows).into_bytes()).collect();
    let blob: ArrayRef = Arc::new(BinaryArray::from_iter_values(blobs.iter()));
    RecordBatch::try_new(three_columns(), vec![n, text, blob]).unwrap()
}

/// `batch` written with `props` as `dir/<name>.parquet` (name made a file name).
fn write_with(dir: &Path, name: &str, batch: &RecordBatch, props: WriterProperties) -> PathBuf {
    let path = dir.join(format!("{}.parquet", name.replace(['(', ')', ' ', '{', '}', ':'], "_")));
    let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    path
}

type Row = (i64, Option<String>, Vec<u8>);

fn rows(batches: impl Iterator<Item = RecordBatch>) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let n = b.column(0).as_primitive::<arrow_array::types::Int64Type>();
        let t = b.column(1).as_string::<i32>();
        let blob = b.column(2).as_binary::<i32>();
        for i in 0..b.num_rows() {
            out.push((n.value(i), t.is_valid(i).then(|| t.value(i).to_string()), blob.value(i).to_vec()));
        }
    }
    out
}

#[test]
fn large_plain_pages_stream_in_slices_and_decode_the_rows_parquet_rs_decodes() {
    let dir = Scratch::new("streamed");
    let codecs = [
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::GZIP(GzipLevel::default()),
        Compression::ZSTD(ZstdLevel::default()),
        Compression::BROTLI(BrotliLevel::default()),
        // (LZ4_RAW: `lz4`'s own decoder, its bytes checked against parquet-rs's whole-page
        // reading with `lz4_flex`)
        Compression::LZ4_RAW,
        // (level 19: a frame whose window, the page's 6 MB, is over the 4 MiB a ZSTD page is
        // streamed with: decompressed whole, at the page's declared size, and handed on)
        Compression::ZSTD(ZstdLevel::try_new(19).unwrap()),
    ];
    let selections = [
        None,
        Some(RowSelection::from(vec![RowSelector::select(3), RowSelector::skip(400), RowSelector::select(250), RowSelector::skip(47)])),
    ];
    for codec in codecs {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let path = write(dir.path(), codec, version);
            let meta = ArrowReaderMetadata::load(&File::open(&path).unwrap(), ArrowReaderOptions::new()).unwrap();
            let chunk = meta.metadata().row_group(0).column(1);
            assert!(chunk.uncompressed_size() > 4 << 20, "{codec:?}: the text chunk is one large page");
            for selection in &selections {
                let (got, expected, streamed) = both(&path, selection.clone());
                assert_eq!(got.len(), if selection.is_some() { 253 } else { ROWS }, "{codec:?} {version:?}");
                assert!(got == expected, "{codec:?} {version:?}: rows differ from parquet-rs's own reader");
                assert_eq!(streamed, (2, 0), "{codec:?} {version:?}: both large pages were streamed");
            }
        }
    }
}

#[test]
fn a_corrupt_streamed_page_is_an_error_not_a_panic() {
    let dir = Scratch::new("streamed-corrupt");
    let path = write(dir.path(), Compression::SNAPPY, WriterVersion::PARQUET_1_0);
    let meta = ArrowReaderMetadata::load(&File::open(&path).unwrap(), ArrowReaderOptions::new()).unwrap();
    // Flip bytes in the middle of the text chunk's compressed values.
    let chunk = meta.metadata().row_group(0).column(1);
    let (start, len) = chunk.byte_range();
    let mut bytes = std::fs::read(&path).unwrap();
    for b in &mut bytes[(start + len / 2) as usize..(start + len / 2 + 64) as usize] {
        *b = 0xff;
    }
    let bad = dir.path().join("bad.parquet");
    std::fs::write(&bad, &bytes).unwrap();
    let (read, streamed, _) = read_streamed(&bad, None);
    assert!(read.is_err(), "corrupt snappy data is reported");
    assert!(streamed.0 >= 1, "the corrupt page was read by the streaming path");
}

/// `text` of `distinct` values, each ~9 KB, dictionary-encoded until the dictionary outgrows
/// 5 MB, then plain (as pyarrow falls back): the dictionary page is large either way.
fn write_fallback(dir: &Path, codec: Compression, distinct: usize) -> PathBuf {
    let batch = batch_of(1500, |r| (r % 9 != 4).then(|| history(r % distinct)));
    let props = WriterProperties::builder()
        .set_compression(codec)
        .set_dictionary_page_size_limit(5 << 20)
        .set_column_dictionary_enabled("blob".into(), false)
        .set_column_dictionary_enabled("n".into(), false)
        .set_data_page_size_limit(64 << 20)
        .set_write_batch_size(600)
        .build();
    write_with(dir, &format!("fallback-{distinct}-{codec:?}"), &batch, props)
}

/// Reads `path` with the streamed readers and with parquet-rs's own; returns the rows of both
/// and what was streamed.
fn both(path: &Path, selection: Option<RowSelection>) -> (Vec<Row>, Vec<Row>, (usize, usize)) {
    let (got, expected, streamed, _) = both_counted(path, selection);
    (got, expected, streamed)
}

/// `both`, and how many pages the streamed readers decompressed whole.
fn both_counted(path: &Path, selection: Option<RowSelection>) -> (Vec<Row>, Vec<Row>, (usize, usize), usize) {
    let meta = ArrowReaderMetadata::load(&File::open(path).unwrap(), ArrowReaderOptions::new()).unwrap();
    let mut expected = ParquetRecordBatchReaderBuilder::new_with_metadata(File::open(path).unwrap(), meta).with_batch_size(64);
    if let Some(s) = selection.clone() {
        expected = expected.with_row_selection(s);
    }
    let expected = rows(expected.build().unwrap().map(|b| b.unwrap()));
    let (got, streamed, whole) = read_streamed(path, selection);
    (got.unwrap(), expected, streamed, whole)
}

/// Reads `path` through the streamed readers (`chunks::RowGroup`, 64-row batches): its rows or
/// the first error, what was streamed (`RowGroup::streamed`) and how many pages were
/// decompressed whole.
fn read_streamed(path: &Path, selection: Option<RowSelection>) -> (Result<Vec<Row>, String>, (usize, usize), usize) {
    let text = |e: &dyn std::fmt::Display| e.to_string();
    let opened = (|| {
        let meta = ArrowReaderMetadata::load(&File::open(path).unwrap(), ArrowReaderOptions::new()).map_err(|e| text(&e))?;
        let file = GuardedInput::new(File::open(path).unwrap(), 96 << 20).map_err(|e| text(&e))?;
        file.check_metadata(path, meta.metadata()).map_err(|e| text(&e))?;
        let descr = meta.metadata().file_metadata().schema_descr_ptr();
        let levels = parquet_to_arrow_field_levels(&descr, ProjectionMask::all(), Some(meta.schema().fields())).map_err(|e| text(&e))?;
        Ok::<_, String>((RowGroup::new(file, meta.metadata().clone(), 0), levels))
    })();
    let (row_group, levels) = match opened {
        Ok(opened) => opened,
        Err(e) => return (Err(e), (0, 0), 0),
    };
    let read = ParquetRecordBatchReader::try_new_with_row_groups(&levels, &row_group, 64, selection)
        .map_err(|e| text(&e))
        .and_then(|reader| reader.collect::<Result<Vec<RecordBatch>, _>>().map_err(|e| text(&e)))
        .map(|batches| rows(batches.into_iter()));
    (read, row_group.streamed(), row_group.decompressed_whole())
}

#[test]
fn a_large_dictionary_used_in_order_is_read_as_plain_values_and_one_used_out_of_order_whole() {
    let dir = Scratch::new("streamed-dictionary");
    let selection = RowSelection::from(vec![RowSelector::skip(10), RowSelector::select(700), RowSelector::skip(790)]);
    for codec in [Compression::SNAPPY, Compression::ZSTD(ZstdLevel::default())] {
        // Every row's own value: indices 0, 1, 2, … in order.
        let path = write_fallback(dir.path(), codec, usize::MAX);
        let meta = ArrowReaderMetadata::load(&File::open(&path).unwrap(), ArrowReaderOptions::new()).unwrap();
        assert!(meta.metadata().row_group(0).column(1).dictionary_page_offset().is_some(), "text starts dictionary-encoded");
        for s in [None, Some(selection.clone())] {
            let (got, expected, streamed) = both(&path, s.clone());
            assert_eq!(got.len(), if s.is_some() { 700 } else { 1500 });
            assert!(got == expected, "{codec:?}: rows differ from parquet-rs's own reader");
            assert_eq!(streamed, (3, 1), "{codec:?}: the dictionary, the plain page after it and the blob page were streamed");
        }
        // 500 values, repeated: indices go back to 0 after 499, so the dictionary (4.5 MB, no
        // fallback) is read whole.
        let path = write_fallback(dir.path(), codec, 500);
        let (got, expected, streamed) = both(&path, None);
        assert!(got == expected, "{codec:?}: rows differ from parquet-rs's own reader");
        assert_eq!(streamed, (1, 0), "{codec:?}: the dictionary was read whole; the blob page streamed");
    }
}

#[test]
fn small_pages_of_a_streamed_chunk_are_decompressed_whole_levels_and_all() {
    let dir = Scratch::new("streamed-small");
    let selection = RowSelection::from(vec![RowSelector::select(100), RowSelector::skip(500), RowSelector::select(100)]);
    for codec in [Compression::UNCOMPRESSED, Compression::SNAPPY, Compression::ZSTD(ZstdLevel::default())] {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            // 256 KiB pages: the chunks are large (so read by the streamed reader), the pages not.
            let path = write_paged(dir.path(), codec, version, 256 << 10);
            for s in [None, Some(selection.clone())] {
                let (got, expected, streamed, whole) = both_counted(&path, s.clone());
                assert_eq!(got.len(), if s.is_some() { 200 } else { ROWS }, "{codec:?} {version:?}");
                assert!(got == expected, "{codec:?} {version:?}: rows differ from parquet-rs's own reader");
                assert_eq!(streamed, (0, 0), "{codec:?} {version:?}: no page is large");
                assert!(whole >= 20, "{codec:?} {version:?}: the small pages were decompressed whole by the streamed reader ({whole})");
            }
        }
    }
}

#[test]
fn small_zstd_chunks_of_every_column_are_read_here_and_other_codecs_by_parquet_rs() {
    // Small values, small pages, dictionary pages for `text`: no chunk is large. ZSTD's chunks
    // are read by the streamed reader whatever their column (parquet-rs would make two zstd
    // contexts per chunk), their pages decompressed whole; SNAPPY's by parquet-rs's own reader.
    let dir = Scratch::new("streamed-zstd-small");
    let n: ArrayRef = Arc::new(Int64Array::from_iter_values(0..ROWS as i64));
    let text: ArrayRef = Arc::new(StringArray::from_iter((0..ROWS).map(|r| (r % 7 != 3).then(|| format!("tenant {}", r % 5)))));
    let blob: ArrayRef = Arc::new(BinaryArray::from_iter_values((0..ROWS).map(|r| format!("small value {r}").into_bytes())));
    let batch = RecordBatch::try_new(three_columns(), vec![n, text, blob]).unwrap();
    let selection = RowSelection::from(vec![RowSelector::select(50), RowSelector::skip(600), RowSelector::select(50)]);
    for codec in [Compression::ZSTD(ZstdLevel::default()), Compression::SNAPPY] {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            let props = WriterProperties::builder()
                .set_compression(codec)
                .set_writer_version(version)
                .set_data_page_size_limit(1024)
                .set_write_batch_size(16)
                .build();
            let path = write_with(dir.path(), &format!("small-{codec:?}-{version:?}"), &batch, props);
            for s in [None, Some(selection.clone())] {
                let (got, expected, streamed, whole) = both_counted(&path, s.clone());
                assert_eq!(got.len(), if s.is_some() { 100 } else { ROWS }, "{codec:?} {version:?}");
                assert!(got == expected, "{codec:?} {version:?}: rows differ from parquet-rs's own reader");
                assert_eq!(streamed, (0, 0), "{codec:?} {version:?}: no page is large");
                if matches!(codec, Compression::ZSTD(_)) {
                    // every column's pages, `n`'s among them: a dictionary page and a data page each
                    assert!(whole >= 6, "{version:?}: ZSTD pages decompressed whole here: {whole}");
                } else {
                    assert_eq!(whole, 0, "{version:?}: SNAPPY chunks this small are parquet-rs's");
                }
            }
        }
    }
}

#[test]
fn a_value_length_past_the_page_end_is_an_error_before_anything_is_sized_for_it() {
    let dir = Scratch::new("streamed-length");
    let path = write(dir.path(), Compression::UNCOMPRESSED, WriterVersion::PARQUET_1_0);
    let mut bytes = std::fs::read(&path).unwrap();
    // The blob column's first value, plain and uncompressed: its 4-byte length comes before it.
    let first = format!("{{\"row\":{ROWS},\"turn\":0,");
    let at = bytes.windows(first.len()).position(|w| w == first.as_bytes()).unwrap();
    bytes[at - 4..at].copy_from_slice(&0xFFFF_FF00u32.to_le_bytes());
    let bad = dir.path().join("bad-length.parquet");
    std::fs::write(&bad, &bytes).unwrap();
    let err = read_streamed(&bad, None).0.unwrap_err();
    assert!(err.contains("declares a value of 4294967040 bytes"), "{err}");
}

#[test]
fn bytes_flipped_in_streamed_chunks_give_errors_or_rows_never_a_panic() {
    let dir = Scratch::new("streamed-flips");
    let inputs = [
        write(dir.path(), Compression::SNAPPY, WriterVersion::PARQUET_1_0),
        write(dir.path(), Compression::ZSTD(ZstdLevel::default()), WriterVersion::PARQUET_2_0),
        write(dir.path(), Compression::GZIP(GzipLevel::default()), WriterVersion::PARQUET_1_0),
        write_fallback(dir.path(), Compression::SNAPPY, usize::MAX),
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut failed, mut read) = (0, 0);
    for input in &inputs {
        let clean = std::fs::read(input).unwrap();
        let meta = ArrowReaderMetadata::load(&File::open(input).unwrap(), ArrowReaderOptions::new()).unwrap();
        let (start, len) = meta.metadata().row_group(0).column(1).byte_range();
        for i in 0..40 {
            let mut bytes = clean.clone();
            // The first 40 KB of the chunk hold its page headers, levels and first values.
            let span = len.min(40_000);
            for _ in 0..1 + next() % 6 {
                let at = (start + next() % span) as usize;
                bytes[at] ^= 1 << (next() % 8);
            }
            let path = dir.path().join(format!("flipped-{i}.parquet"));
            std::fs::write(&path, &bytes).unwrap();
            match std::panic::catch_unwind(|| read_streamed(&path, None).0) {
                Ok(Ok(_)) => read += 1,
                Ok(Err(_)) => failed += 1,
                Err(_) => panic!("{}: reading with bytes flipped (case {i}) panicked", input.display()),
            }
        }
    }
    assert_eq!(failed + read, 160);
    assert!(failed > 0, "some flips were caught as errors ({failed} errors, {read} read)");
}

/// A streamed page's definition levels (one byte each while it is handed on) are accounted with
/// the page before they are allocated: a page of 3,000,000 levels, most of them null, read
/// through an input whose pages are accounted (`GuardedInput::account_pages`) — the peak holds
/// the page compressed, the decoder and a slice, and the levels.
#[test]
fn a_streamed_pages_levels_are_in_the_accounted_peak() {
    use gencompact::memory::Accountant;
    let dir = Scratch::new("streamed-levels");
    let rows = 3_000_000;
    let text: ArrayRef = Arc::new(StringArray::from_iter((0..rows).map(|r| (r % 3 == 0).then(|| format!("v{}", r % 97)))));
    let batch = RecordBatch::try_new(Arc::new(Schema::new(vec![Field::new("text", DataType::Utf8, true)])), vec![text]).unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_dictionary_enabled(false)
        .set_encoding(parquet::basic::Encoding::PLAIN)
        .set_data_page_size_limit(64 << 20)
        .set_data_page_row_count_limit(rows)
        .set_write_batch_size(rows)
        .set_max_row_group_row_count(Some(rows))
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
        .build();
    let path = write_with(dir.path(), "levels", &batch, props);
    let meta = ArrowReaderMetadata::load(&File::open(&path).unwrap(), ArrowReaderOptions::new()).unwrap();
    let chunk = meta.metadata().row_group(0).column(0);
    assert!(chunk.uncompressed_size() > 4 << 20, "the chunk is large: {}", chunk.uncompressed_size());
    let memory = Accountant::new(usize::MAX);
    let mut file = GuardedInput::new(File::open(&path).unwrap(), 96 << 20).unwrap();
    file.account_pages(&memory);
    file.check_metadata(&path, meta.metadata()).unwrap();
    let descr = meta.metadata().file_metadata().schema_descr_ptr();
    let levels = parquet_to_arrow_field_levels(&descr, ProjectionMask::all(), Some(meta.schema().fields())).unwrap();
    let row_group = RowGroup::new(file, meta.metadata().clone(), 0);
    let reader = ParquetRecordBatchReader::try_new_with_row_groups(&levels, &row_group, 65536, None).unwrap();
    let (mut read, mut present) = (0, 0);
    for b in reader {
        let b = b.unwrap();
        read += b.num_rows();
        present += b.num_rows() - b.column(0).null_count();
    }
    assert_eq!((read, present), (rows, rows.div_ceil(3)));
    assert_eq!(row_group.streamed(), (1, 0), "the page was streamed");
    // its compressed bytes (the chunk less its page header), the decoder (4 MiB), a slice
    // (1 MiB) and one byte per level
    let page = chunk.compressed_size() as usize - 100;
    let least = page + (5 << 20) + rows;
    assert!(memory.peak() >= least, "accounted peak {} < {least}: the levels are not in it", memory.peak());
}
