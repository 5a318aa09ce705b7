//! Helpers shared by the integration tests: scratch directories and production-like inputs.
#![allow(dead_code)]

use arrow_array::{ArrayRef, BinaryArray, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use gencompact::{compact, CompactError, Options};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::{KeyValue, ParquetMetaDataReader};
use parquet::file::properties::WriterProperties;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// A scratch directory removed on drop.
pub struct Scratch(PathBuf);
impl Scratch {
    pub fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!("gencompact-{name}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn field(name: &str, dt: DataType, nullable: bool, id: i32) -> Field {
    Field::new(name, dt, nullable).with_metadata(HashMap::from([("PARQUET:field_id".to_string(), id.to_string())]))
}

pub fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        field("id", DataType::Utf8, false, 1),
        field("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())), false, 2),
        field("fat", DataType::Binary, true, 3),
        field("body", DataType::Utf8, true, 4),
        field("n", DataType::Int32, true, 5),
    ]))
}

/// Deterministic pseudo-random text (incompressible enough to make sizes predictable).
pub fn noise(seed: u64, len: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (b'a' + (x % 26) as u8) as char
        })
        .collect()
}

/// Writes `files` inputs of `rows` rows each: a fat value of `fat` bytes repeated on every row of
/// a file (dictionary-encoded), and `body` bytes of distinct text per row.
pub fn write_inputs(dir: &Path, files: usize, rows: usize, fat: usize, body: usize) -> Vec<String> {
    let mut out = Vec::new();
    for f in 0..files {
        let path = dir.join(format!("in-{f:04}.parquet"));
        let fat_value = noise(1000 + f as u64, fat).into_bytes();
        let base = (f * rows) as i64;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values((0..rows).map(|r| format!("row-{}", base + r as i64)))),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values((0..rows).map(|r| 1_700_000_000_000_000 + base + r as i64))
                    .with_timezone("+00:00"),
            ),
            Arc::new(BinaryArray::from_iter((0..rows).map(|_| Some(fat_value.as_slice())))),
            Arc::new(StringArray::from_iter((0..rows).map(|r| (r % 7 != 3).then(|| noise((base as u64) + r as u64, body))))),
            Arc::new(Int32Array::from_iter((0..rows).map(|r| (r % 5 != 0).then_some(r as i32)))),
        ];
        let batch = RecordBatch::try_new(schema(), cols).unwrap();
        let props = WriterProperties::builder()
            .set_key_value_metadata(Some(vec![KeyValue::new("iceberg.schema".into(), format!("{{\"schema-id\":{f}}}"))]))
            .set_dictionary_page_size_limit(8 << 20)
            .build();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        out.push(path.display().to_string());
    }
    out
}

/// Copies `src` to `dst` with the first page header of leaf `leaf` scrambled (a flipped byte
/// inside compressed values may go unnoticed: pages carry no checksum unless the writer adds one).
pub fn corrupt_first_page(src: &Path, dst: &Path, leaf: usize) {
    let mut bytes = std::fs::read(src).unwrap();
    let meta = ParquetMetaDataReader::new().parse_and_finish(&File::open(src).unwrap()).unwrap();
    let (start, _) = meta.row_group(0).column(leaf).byte_range();
    for b in &mut bytes[start as usize..(start + 24) as usize] {
        *b ^= 0x5a;
    }
    std::fs::write(dst, &bytes).unwrap();
}

pub fn opts(out: &Path) -> Options {
    let mut o = Options::new(out);
    o.compression = Some(parquet::basic::Compression::SNAPPY);
    o
}

pub fn run(files: &[String], o: &Options) -> Result<gencompact::CompactReport, CompactError> {
    compact(files, o, &AtomicBool::new(false), &|_| {})
}

pub fn entries(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(rd) => rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    }
}

/// How a column-decoding choice (`dictionary::choose`, `views::choose`) marks the top-level
/// columns of `files`' plan: the plan chosen and, per column, (name, whether `marked`
/// recognises its type); first with no column kept plain, then with `key` kept plain as a key.
pub fn choices(
    files: &[String],
    key: &str,
    choose: impl Fn(&mut gencompact::plan::Plan, &[usize]) -> gencompact::Result<()>,
    marked: impl Fn(&DataType) -> bool,
) -> [(gencompact::plan::Plan, Vec<(String, bool)>); 2] {
    let inputs: Vec<gencompact::iceberg::input::InputFile> = files.iter().cloned().map(Into::into).collect();
    let key = gencompact::plan::build_plan(&inputs).unwrap().arrow_schema.index_of(key).unwrap();
    [vec![], vec![key]].map(|keep| {
        let mut plan = gencompact::plan::build_plan(&inputs).unwrap();
        choose(&mut plan, &keep).unwrap();
        let marks = plan.arrow_schema.fields().iter().map(|f| (f.name().clone(), marked(f.data_type()))).collect();
        (plan, marks)
    })
}
