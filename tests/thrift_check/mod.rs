//! The comparison behind `tests/thrift_guard.rs` (and its fuzz target): the strict Thrift reader
//! against parquet-rs's parser on one footer or one column chunk's bytes, and the seeds.

use arrow_array::builder::{Int32Builder, ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field};
use bytes::Bytes;
use gencompact::thrift::{Event, Thrift, FILE_META_DATA, PAGE_HEADER};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::{ColumnChunkMetaData, KeyValue, ParquetMetaDataReader};
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::serialized_reader::SerializedPageReader;
use parquet::schema::types::{ColumnDescPtr, Type};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct Tally {
    pub total: usize,
    pub both_accept: usize,
    pub both_reject: usize,
    /// The strict reader refuses what parquet-rs reads.
    pub stricter: usize,
    /// parquet-rs refuses what the strict reader accepts.
    pub theirs_stricter: usize,
}

pub enum Outcome {
    BothAccept,
    BothReject,
    Stricter,
    TheirsStricter,
}

impl Tally {
    pub fn add(&mut self, o: Outcome) {
        self.total += 1;
        match o {
            Outcome::BothAccept => self.both_accept += 1,
            Outcome::BothReject => self.both_reject += 1,
            Outcome::Stricter => self.stricter += 1,
            Outcome::TheirsStricter => self.theirs_stricter += 1,
        }
    }
}

fn events(bytes: &[u8], def: &'static gencompact::thrift::Def) -> Result<Vec<Event>, String> {
    let mut out = Vec::new();
    Thrift::new(bytes, bytes.len() as u64).read(def, &mut |e| {
        out.push(e);
        Ok(())
    })?;
    Ok(out)
}

fn ints(events: &[Event], on: &str, id: i16) -> Vec<i64> {
    events.iter().filter_map(|e| if let Event::Int(s, i, v) = e { (*s == on && *i == id).then_some(*v) } else { None }).collect()
}

fn nodes(t: &Type) -> usize {
    1 + if t.is_group() { t.get_fields().iter().map(|f| nodes(f)).sum() } else { 0 }
}

/// Why the strict reader refuses a footer (`None`: it reads it).
pub fn footer_error(bytes: &[u8]) -> Option<String> {
    Thrift::new(bytes, bytes.len() as u64).file_metadata().err()
}

/// Why the strict reader refuses a page header (`None`: it reads it).
pub fn page_error(bytes: &[u8]) -> Option<String> {
    Thrift::new(bytes, bytes.len() as u64).page_header().err()
}

/// One footer: both readers, and when both read it, the same values.
pub fn check_footer(bytes: &[u8]) -> Outcome {
    let ours = events(bytes, &FILE_META_DATA).and_then(|e| Thrift::new(bytes, bytes.len() as u64).file_metadata().map(|_| e));
    let theirs = catch_unwind(AssertUnwindSafe(|| ParquetMetaDataReader::decode_metadata(bytes)));
    let theirs = match theirs {
        Ok(t) => t,
        Err(_) => {
            assert!(ours.is_err(), "parquet-rs panics on a footer the strict reader accepts: {bytes:?}");
            return Outcome::BothReject;
        }
    };
    match (ours, theirs) {
        (Ok(ev), Ok(meta)) => {
            let file = meta.file_metadata();
            assert_eq!(ints(&ev, "FileMetaData", 3), vec![file.num_rows()], "{bytes:?}");
            let rgs: Vec<i64> = meta.row_groups().iter().map(|rg| rg.num_rows()).collect();
            assert_eq!(ints(&ev, "RowGroup", 3), rgs, "row group rows differ: {bytes:?}");
            let cols: Vec<&ColumnChunkMetaData> = meta.row_groups().iter().flat_map(|rg| rg.columns()).collect();
            let field = |id, f: &dyn Fn(&ColumnChunkMetaData) -> i64| {
                assert_eq!(ints(&ev, "ColumnMetaData", id), cols.iter().map(|c| f(c)).collect::<Vec<_>>(), "field {id} differs: {bytes:?}");
            };
            field(5, &|c| c.num_values());
            field(6, &|c| c.uncompressed_size());
            field(7, &|c| c.compressed_size());
            field(9, &|c| c.data_page_offset());
            let dictionaries: Vec<i64> = cols.iter().filter_map(|c| c.dictionary_page_offset()).collect();
            assert_eq!(ints(&ev, "ColumnMetaData", 11), dictionaries, "{bytes:?}");
            let elements = ev.iter().filter(|e| **e == Event::Begin("SchemaElement")).count();
            assert_eq!(elements, nodes(file.schema_descr().root_schema()), "schema differs: {bytes:?}");
            Outcome::BothAccept
        }
        (Ok(_), Err(_)) => Outcome::TheirsStricter,
        (Err(_), Ok(_)) => Outcome::Stricter,
        (Err(_), Err(_)) => Outcome::BothReject,
    }
}

/// One column chunk's bytes (uncompressed), its first page header read by both; with
/// `only_accepted`, parquet-rs reads only what the strict reader accepts (the fuzz target: a few
/// headers the strict reader refuses keep parquet-rs's stream reader busy for minutes, and the
/// guard never hands those to it).
pub fn check_page(column: &ColumnDescPtr, bytes: &[u8], only_accepted: bool) -> Outcome {
    let ours = events(bytes, &PAGE_HEADER).and_then(|e| Thrift::new(bytes, bytes.len() as u64).page_header().map(|s| (e, s)));
    if only_accepted && ours.is_err() {
        return Outcome::BothReject;
    }
    let theirs = catch_unwind(AssertUnwindSafe(|| {
        let meta = ColumnChunkMetaData::builder(column.clone())
            .set_compression(Compression::UNCOMPRESSED)
            .set_data_page_offset(0)
            .set_total_compressed_size(bytes.len() as i64)
            .set_total_uncompressed_size(bytes.len() as i64)
            .set_num_values(1 << 20)
            .build()?;
        let mut reader = SerializedPageReader::new(Arc::new(Bytes::from(bytes.to_vec())), &meta, 1 << 20, None)?;
        reader.get_next_page()
    }));
    let theirs = match theirs {
        Ok(t) => t,
        Err(_) => {
            assert!(ours.is_err(), "parquet-rs panics on a page header the strict reader accepts: {bytes:?}");
            return Outcome::BothReject;
        }
    };
    match (ours, theirs) {
        (Ok((ev, sizes)), Ok(Some(page))) => {
            let (on, encoding_field) = match sizes.page_type {
                0 => ("DataPageHeader", 2),
                2 => ("DictionaryPageHeader", 2),
                3 => ("DataPageHeaderV2", 4),
                // index pages are skipped by parquet-rs: what it read is another page
                _ => return Outcome::TheirsStricter,
            };
            let kind = match &page {
                Page::DataPage { .. } => 0,
                Page::DictionaryPage { .. } => 2,
                Page::DataPageV2 { .. } => 3,
            };
            assert_eq!(kind, sizes.page_type, "page type differs: {bytes:?}");
            assert_eq!(ints(&ev, on, 1), vec![i64::from(page.num_values())], "num_values differs: {bytes:?}");
            assert_eq!(ints(&ev, on, encoding_field), vec![page.encoding() as i64], "encoding differs: {bytes:?}");
            assert_eq!(page.buffer().len() as u64, sizes.compressed, "page bytes differ: {bytes:?}");
            Outcome::BothAccept
        }
        (Ok(_), _) => Outcome::TheirsStricter,
        (Err(_), Ok(Some(_))) => Outcome::Stricter,
        (Err(_), _) => Outcome::BothReject,
    }
}

fn batch() -> RecordBatch {
    let n = 40;
    let ints: ArrayRef = Arc::new(Int64Array::from_iter((0..n).map(|i| (i % 7 != 0).then_some(i * 1000))));
    let text: ArrayRef = Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("value {}", i % 5))));
    let flags: ArrayRef = Arc::new(BooleanArray::from_iter((0..n).map(|i| Some(i % 3 == 0))));
    let floats: ArrayRef = Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64 / 3.0)));
    let mut lists = ListBuilder::new(Int32Builder::new());
    for i in 0..n {
        for j in 0..i % 4 {
            lists.values().append_value(j as i32);
        }
        lists.append(i % 5 != 0);
    }
    let mut names = StringBuilder::new();
    for i in 0..n {
        names.append_option((i % 2 == 0).then(|| format!("n{i}")));
    }
    let nested: ArrayRef = Arc::new(StructArray::from(vec![
        (Arc::new(Field::new("name", DataType::Utf8, true)), Arc::new(names.finish()) as ArrayRef),
        (Arc::new(Field::new("score", DataType::Float64, false)), floats.clone()),
    ]));
    RecordBatch::try_from_iter(vec![
        ("id", ints),
        ("text", text),
        ("flag", flags),
        ("x", floats),
        ("list", Arc::new(lists.finish()) as ArrayRef),
        ("nested", nested),
    ])
    .unwrap()
}

/// Files parquet-rs writes, uncompressed: data pages v1 and v2, dictionaries, statistics,
/// key-value metadata, two row groups.
fn files() -> Vec<Vec<u8>> {
    [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0]
        .into_iter()
        .map(|version| {
            let props = WriterProperties::builder()
                .set_writer_version(version)
                .set_compression(Compression::UNCOMPRESSED)
                .set_max_row_group_row_count(Some(25))
                .set_key_value_metadata(Some(vec![KeyValue::new("k".to_string(), "v".to_string())]))
                .build();
            let b = batch();
            let mut out = Vec::new();
            let mut w = ArrowWriter::try_new(&mut out, b.schema(), Some(props)).unwrap();
            w.write(&b).unwrap();
            w.close().unwrap();
            out
        })
        .collect()
}

pub fn footer_seeds() -> Vec<Vec<u8>> {
    files()
        .into_iter()
        .map(|f| {
            let n = f.len();
            let len = u32::from_le_bytes(f[n - 8..n - 4].try_into().unwrap()) as usize;
            f[n - 8 - len..n - 8].to_vec()
        })
        .collect()
}

/// Every column chunk of those files: its descriptor and its bytes.
pub fn page_seeds() -> Vec<(ColumnDescPtr, Vec<u8>)> {
    let mut out = Vec::new();
    for f in files() {
        let meta = ParquetMetaDataReader::new().parse_and_finish(&Bytes::from(f.clone())).unwrap();
        for rg in meta.row_groups() {
            for c in rg.columns() {
                let (start, len) = c.byte_range();
                out.push((c.column_descr_ptr(), f[start as usize..(start + len) as usize].to_vec()));
            }
        }
    }
    out
}
