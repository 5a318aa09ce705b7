//! Deletes, divert and the drop-in rules, on small hand-built tables (jest checks the same
//! against pyiceberg, pyroaring and DuckDB). Expected rows are computed here from the rules
//! (row `n` of file `f` is `f * 1000 + n`), not from gencompact's output.

use crate::common;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Schema};
use common::{field, Scratch};
use gencompact::iceberg::input::{DeleteSource, InputFile};
use gencompact::options::DivertSpec;
use gencompact::{compact, Options};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use roaring::RoaringTreemap;
use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn data_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        field("n", DataType::Int64, false, 1),
        field("key", DataType::Utf8, true, 2),
        field("attrs", DataType::Utf8, true, 3),
    ]))
}

/// A data file of `rows` rows in row groups of 7: n = f*1000 + i, key "k{i % 5}" (null every 11th).
fn data_file(dir: &Path, f: i64, rows: i64) -> PathBuf {
    let path = dir.join(format!("data-{f}.parquet"));
    let props = WriterProperties::builder().set_max_row_group_row_count(Some(7)).build();
    let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), data_schema(), Some(props)).unwrap();
    let n: Vec<i64> = (0..rows).map(|i| f * 1000 + i).collect();
    let key: Vec<Option<String>> = (0..rows).map(|i| (i % 11 != 3).then(|| format!("k{}", i % 5))).collect();
    let attrs: Vec<Option<String>> = (0..rows)
        .map(|i| {
            Some(if i % 4 == 1 {
                r#"{"gateway":{"identity_source":"gateway_fallback"}}"#.to_string()
            } else {
                format!(r#"{{"gateway":{{"x":{i}}}}}"#)
            })
        })
        .collect();
    let cols: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(n)), Arc::new(StringArray::from(key)), Arc::new(StringArray::from(attrs))];
    w.write(&RecordBatch::try_new(data_schema(), cols).unwrap()).unwrap();
    w.close().unwrap();
    path
}

fn position_file(path: &Path, rows: &[(&str, i64)]) {
    let schema = Arc::new(Schema::new(vec![
        field("file_path", DataType::Utf8, false, 2147483546),
        field("pos", DataType::Int64, false, 2147483545),
    ]));
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema.clone(), None).unwrap();
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
    ];
    w.write(&RecordBatch::try_new(schema, cols).unwrap()).unwrap();
    w.close().unwrap();
}

/// A Puffin file with one deletion vector per (location, positions); returns (offset, length)s.
fn puffin(path: &Path, vectors: &[(&str, &[u64])]) -> Vec<(u64, u64)> {
    let mut out = b"PFA1".to_vec();
    let mut blobs = Vec::new();
    let mut meta = Vec::new();
    for (location, positions) in vectors {
        let bitmap: RoaringTreemap = positions.iter().copied().collect();
        let mut body = vec![0xD1, 0xD3, 0x39, 0x64];
        bitmap.serialize_into(&mut body).unwrap();
        let offset = out.len() as u64;
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        let length = out.len() as u64 - offset;
        blobs.push((offset, length));
        meta.push(format!(
            r#"{{"type":"deletion-vector-v1","fields":[2147483645],"snapshot-id":1,"sequence-number":1,"offset":{offset},"length":{length},"properties":{{"referenced-data-file":"{location}","cardinality":"{}"}}}}"#,
            positions.len()
        ));
    }
    let payload = format!(r#"{{"blobs":[{}]}}"#, meta.join(","));
    out.extend_from_slice(b"PFA1");
    out.extend_from_slice(payload.as_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(b"PFA1");
    std::fs::write(path, out).unwrap();
    blobs
}

fn equality_file(path: &Path, keys: &[Option<&str>]) {
    let schema = Arc::new(Schema::new(vec![field("key", DataType::Utf8, true, 2)]));
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema.clone(), None).unwrap();
    let cols: Vec<ArrayRef> = vec![Arc::new(StringArray::from(keys.to_vec()))];
    w.write(&RecordBatch::try_new(schema, cols).unwrap()).unwrap();
    w.close().unwrap();
}

/// Every `n` of the Parquet files in `dir`.
fn written(dir: &Path) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "parquet") {
            for b in ParquetRecordBatchReaderBuilder::try_new(File::open(&p).unwrap()).unwrap().build().unwrap() {
                let b = b.unwrap();
                out.extend(b.column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().iter().copied());
            }
        }
    }
    out
}

fn key_of(i: i64) -> Option<String> {
    (i % 11 != 3).then(|| format!("k{}", i % 5))
}

#[test]
fn every_delete_kind_mixed_and_counted_once() {
    let s = Scratch::new("deletes");
    let (a, b, c) = (data_file(s.path(), 1, 30), data_file(s.path(), 2, 30), data_file(s.path(), 3, 30));
    let pos = s.path().join("pos.parquet");
    // file 1 by location (not path), positions across row groups, one past the end (ignored),
    // position 8 also deleted by the vector below; a location no input has.
    position_file(
        &pos,
        &[
            ("s3://t/data/1.parquet", 0),
            ("s3://t/data/1.parquet", 8),
            ("s3://t/data/1.parquet", 29),
            ("s3://t/data/1.parquet", 40),
            ("s3://t/data/9.parquet", 1),
        ],
    );
    let dv = s.path().join("dv.puffin");
    let blobs = puffin(&dv, &[("s3://t/data/1.parquet", &[8, 9]), ("s3://t/data/2.parquet", &[1, 2, 3, 14, 15, 16, 17, 18, 19, 20])]);
    let eq = s.path().join("eq.parquet");
    equality_file(&eq, &[Some("k4"), None]);
    let input = |path: &PathBuf, loc: &str, deletes: Vec<DeleteSource>| InputFile { path: path.clone(), location: loc.into(), deletes };
    let files = vec![
        input(
            &a,
            "s3://t/data/1.parquet",
            vec![
                DeleteSource::Position { path: pos.clone() },
                DeleteSource::Vector { path: dv.clone(), offset: blobs[0].0, length: blobs[0].1 },
            ],
        ),
        input(
            &b,
            "s3://t/data/2.parquet",
            vec![
                DeleteSource::Vector { path: dv.clone(), offset: blobs[1].0, length: blobs[1].1 },
                DeleteSource::Position { path: pos.clone() },
            ],
        ),
        input(&c, "s3://t/data/3.parquet", vec![DeleteSource::Equality { path: eq.clone(), field_ids: vec![2] }]),
    ];
    let out = s.path().join("out");
    let mut o = Options::new(&out);
    o.batch_rows = 4;
    let r = compact(&files, &o, &AtomicBool::new(false), &|_| {}).unwrap();
    let deleted: BTreeSet<i64> = [1000, 1008, 1009, 1029, 2001, 2002, 2003, 2014, 2015, 2016, 2017, 2018, 2019, 2020]
        .into_iter()
        .chain((0..30).filter(|i| matches!(key_of(*i).as_deref(), Some("k4") | None)).map(|i| 3000 + i))
        .collect();
    let expected: BTreeSet<i64> = (1..=3).flat_map(|f| (0..30).map(move |i| f * 1000 + i)).filter(|n| !deleted.contains(n)).collect();
    assert_eq!(written(&out), expected);
    assert_eq!(r.rows_deleted, deleted.len() as u64);
    assert_eq!(r.rows_read, 90);
    assert_eq!(r.rows_written, expected.len() as u64);

    // Sorted + deduped: deleted rows never take part in dedupe.
    let out2 = s.path().join("out2");
    let mut o = Options::new(&out2);
    o.dedupe_by = Some("key".into());
    o.sort_by = Some(vec![gencompact::options::SortKey { column: "n".into(), descending: true, nulls_first: false }]);
    let r = compact(&files, &o, &AtomicBool::new(false), &|_| {}).unwrap();
    let mut seen = BTreeSet::new();
    let survivors: BTreeSet<i64> = expected
        .iter()
        .copied()
        .filter(|n| match key_of(n % 1000) {
            None => true,
            Some(k) => seen.insert(k),
        })
        .collect();
    assert_eq!(written(&out2), survivors);
    assert_eq!(r.rows_read, r.rows_deleted + r.duplicates_dropped + r.rows_written);

    // Partitioned: a row group whose rows are all deleted (file 2, rows 14-20) belongs to no
    // tuple and is never read for one, but its rows still count, once.
    let out3 = s.path().join("out3");
    let mut o = Options::new(&out3);
    o.batch_rows = 4;
    o.dedupe_by = Some("key".into());
    o.partition_by = Some(vec![gencompact::iceberg::partition::PartitionField {
        column: "key".into(),
        transform: gencompact::iceberg::partition::Transform::Identity,
        name: "key".into(),
    }]);
    let r = compact(&files, &o, &AtomicBool::new(false), &|_| {}).unwrap();
    assert_eq!(written(&out3), survivors);
    assert_eq!((r.rows_read, r.rows_deleted), (90, deleted.len() as u64));
    assert_eq!(r.rows_read, r.rows_deleted + r.duplicates_dropped + r.rows_written);
}

#[test]
fn bad_delete_files_fail_cleanly() {
    let s = Scratch::new("bad-deletes");
    let a = data_file(s.path(), 1, 20);
    let dv = s.path().join("dv.puffin");
    let blobs = puffin(&dv, &[("s3://t/1.parquet", &[1])]);
    let run = |deletes: Vec<DeleteSource>, loc: &str| {
        let out = s.path().join("out");
        let err =
            compact(&[InputFile { path: a.clone(), location: loc.into(), deletes }], &Options::new(&out), &AtomicBool::new(false), &|_| {})
                .unwrap_err();
        assert!(!out.exists(), "outDir left behind");
        err
    };
    let missing = s.path().join("nope.parquet");
    let e = run(vec![DeleteSource::Position { path: missing.clone() }], "s3://t/1.parquet");
    assert_eq!(e.code(), "ERR_INPUT_NOT_FOUND");
    assert!(e.to_string().contains("nope.parquet"));
    let e = run(vec![DeleteSource::Vector { path: dv.clone(), offset: blobs[0].0, length: blobs[0].1 }], "s3://t/other.parquet");
    assert_eq!(e.code(), "ERR_INVALID_OPTIONS");
    let e = run(vec![DeleteSource::Vector { path: dv.clone(), offset: blobs[0].0 + 1, length: blobs[0].1 }], "s3://t/1.parquet");
    assert_eq!(e.code(), "ERR_INPUT_CORRUPT");
    let truncated = s.path().join("trunc.parquet");
    position_file(&truncated, &[("s3://t/1.parquet", 1)]);
    let bytes = std::fs::read(&truncated).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() - 10]).unwrap();
    let e = run(vec![DeleteSource::Position { path: truncated }], "s3://t/1.parquet");
    assert_eq!(e.code(), "ERR_INPUT_CORRUPT");
    assert!(e.to_string().contains("trunc.parquet"));
}

#[test]
fn divert_json_path_before_dedupe() {
    let s = Scratch::new("divert");
    let files = vec![data_file(s.path(), 1, 24).display().to_string(), data_file(s.path(), 2, 24).display().to_string()];
    let out = s.path().join("out");
    let to = s.path().join("side").join("resettle.parquet");
    let mut o = Options::new(&out);
    o.dedupe_by = Some("key".into());
    o.divert = Some(DivertSpec {
        column: "attrs".into(),
        path: vec!["gateway".into(), "identity_source".into()],
        equals: "gateway_fallback".into(),
        to: to.clone(),
    });
    let r = compact(&files, &o, &AtomicBool::new(false), &|_| {}).unwrap();
    let all: Vec<i64> = (1..=2).flat_map(|f| (0..24).map(move |i| f * 1000 + i)).collect();
    let diverted: BTreeSet<i64> = all.iter().copied().filter(|n| n % 1000 % 4 == 1).collect();
    let mut seen = BTreeSet::new();
    let kept: BTreeSet<i64> =
        all.iter().copied().filter(|n| !diverted.contains(n)).filter(|n| key_of(n % 1000).is_none_or(|k| seen.insert(k))).collect();
    assert_eq!(written(&out), kept);
    assert_eq!(written(to.parent().unwrap()), diverted);
    assert_eq!(r.diverted, Some((to.display().to_string(), diverted.len() as u64)));
    assert_eq!(r.rows_read, r.duplicates_dropped + r.rows_written + diverted.len() as u64);
    // No row matches: no side file.
    let mut o = Options::new(s.path().join("out2"));
    o.divert = Some(DivertSpec {
        column: "attrs".into(),
        path: vec!["gateway".into()],
        equals: "nothing".into(),
        to: s.path().join("none.parquet"),
    });
    let r = compact(&files, &o, &AtomicBool::new(false), &|_| {}).unwrap();
    assert_eq!(r.diverted.map(|d| d.1), Some(0));
    assert!(!s.path().join("none.parquet").exists());
}

#[test]
fn empty_generation_creates_nothing() {
    let s = Scratch::new("empty");
    let out = s.path().join("out");
    let r = compact::<String>(&[], &Options::new(&out), &AtomicBool::new(false), &|_| {}).unwrap();
    assert!(r.files.is_empty() && r.rows_read == 0);
    assert!(!out.exists());
}

#[test]
fn output_bytes_do_not_depend_on_threads() {
    let s = Scratch::new("threads");
    let files: Vec<String> = (1..=4).map(|f| data_file(s.path(), f, 60).display().to_string()).collect();
    let mut outputs: Vec<Vec<Vec<u8>>> = Vec::new();
    for threads in [1, 2, 8] {
        let out = s.path().join(format!("out-{threads}"));
        let mut o = Options::new(&out);
        o.threads = threads;
        o.file_name_prefix = "t".into();
        o.target_file_bytes = 4096;
        o.batch_rows = 9;
        o.dedupe_by = Some("key".into());
        let r = compact(&files, &o, &AtomicBool::new(false), &|_| {}).unwrap();
        assert!(r.files.len() > 2, "several files, so verification overlaps writing");
        outputs.push(r.files.iter().map(|f| std::fs::read(&f.path).unwrap()).collect());
    }
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
}

/// The crafted deletion vectors of `tests/corpus-deletes/` (written by its `make.py`): the data
/// file, and per Puffin file its (path, offset, length).
fn crafted() -> (PathBuf, String, Vec<(PathBuf, u64, u64)>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("corpus-deletes");
    let cases: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("cases.json")).unwrap()).unwrap();
    let list = cases["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (dir.join(c["file"].as_str().unwrap()), c["offset"].as_u64().unwrap(), c["length"].as_u64().unwrap()))
        .collect();
    (dir.join(cases["data"].as_str().unwrap()), cases["location"].as_str().unwrap().to_string(), list)
}

fn crafted_case(name: &str) -> (PathBuf, String, DeleteSource) {
    let (data, location, cases) = crafted();
    let (path, offset, length) = cases.into_iter().find(|c| c.0.file_name().unwrap() == name).unwrap();
    (data, location, DeleteSource::Vector { path, offset, length })
}

#[test]
fn crafted_vectors_with_a_repeated_or_descending_key_or_a_wrong_cardinality_are_corrupt() {
    let s = Scratch::new("crafted-dv-bad");
    for (name, says) in [
        ("dv-dup-key0-123-then-5.puffin", "key 0 repeats key 0"),
        ("dv-dup-key0-5-then-123.puffin", "key 0 repeats key 0"),
        ("dv-keys-descending.puffin", "key 0 comes after key 1"),
        ("dv-cardinality-mismatch.puffin", "cardinality is 4, the vector holds 3"),
    ] {
        let (data, location, dv) = crafted_case(name);
        let out = s.path().join(name);
        let e = compact(&[InputFile { path: data, location, deletes: vec![dv] }], &Options::new(&out), &AtomicBool::new(false), &|_| {})
            .unwrap_err();
        assert_eq!(e.code(), "ERR_INPUT_CORRUPT", "{name}: {e}");
        assert!(e.path().is_some_and(|p| p.ends_with(name)) && e.to_string().contains(says), "{name}: {e}");
        assert!(!out.exists(), "{name}: outDir left behind");
    }
}

#[test]
fn the_huge_valid_vectors_remove_exactly_their_rows() {
    let s = Scratch::new("crafted-dv-huge");
    for name in ["dv-65536-full-runs.puffin", "dv-65536-runs-partial.puffin"] {
        let (data, location, dv) = crafted_case(name);
        let DeleteSource::Vector { path, offset, length } = &dv else { unreachable!() };
        // the positions as the roaring crate's own reader decodes the blob (keys ascending: it
        // reads them right), the rows as parquet-rs reads the data file
        let blob = std::fs::read(path).unwrap()[*offset as usize..(*offset + *length) as usize].to_vec();
        let deleted = RoaringTreemap::deserialize_from(&blob[8..blob.len() - 4]).unwrap();
        assert_eq!(deleted.bitmaps().map(|(_, b)| b.len().div_ceil(65_536)).sum::<u64>(), 65_536, "65,536 containers");
        let rows: Vec<i64> = ParquetRecordBatchReaderBuilder::try_new(File::open(&data).unwrap())
            .unwrap()
            .build()
            .unwrap()
            .flat_map(|b| b.unwrap().column(0).as_any().downcast_ref::<Int64Array>().unwrap().values().to_vec())
            .collect();
        let expected: BTreeSet<i64> = rows.iter().enumerate().filter(|(p, _)| !deleted.contains(*p as u64)).map(|(_, n)| *n).collect();
        let out = s.path().join(name);
        let started = std::time::Instant::now();
        let r = compact(&[InputFile { path: data, location, deletes: vec![dv] }], &Options::new(&out), &AtomicBool::new(false), &|_| {})
            .unwrap();
        eprintln!("{name}: {:?}, peak {} bytes accounted", started.elapsed(), r.peak_memory_bytes);
        assert_eq!(r.rows_read, 10);
        assert_eq!(r.rows_deleted, 10 - expected.len() as u64);
        assert_eq!(r.rows_written, expected.len() as u64);
        if expected.is_empty() {
            assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(), "{name}: nothing written");
        } else {
            assert_eq!(written(&out), expected);
        }
    }
}

/// An equality-delete file of `keys` distinct strings for column `key` (field id 2).
fn many_keys(path: &Path, keys: usize) {
    let schema = Arc::new(Schema::new(vec![field("key", DataType::Utf8, true, 2)]));
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema.clone(), None).unwrap();
    for chunk in (0..keys).collect::<Vec<_>>().chunks(65_536) {
        let cols: Vec<ArrayRef> = vec![Arc::new(StringArray::from_iter_values(chunk.iter().map(|i| format!("gone-{i}"))))];
        w.write(&RecordBatch::try_new(schema.clone(), cols).unwrap()).unwrap();
    }
    w.close().unwrap();
}

#[test]
fn equality_delete_keys_count_in_the_peak_and_a_set_past_the_bound_is_refused() {
    let s = Scratch::new("eq-memory");
    let data = data_file(s.path(), 1, 30);
    let eq = s.path().join("eq-200k.parquet");
    many_keys(&eq, 200_000);
    let run = |deletes: Vec<DeleteSource>, out: &str| {
        let mut o = Options::new(s.path().join(out));
        o.threads = 1;
        compact(&[InputFile { path: data.clone(), location: "s3://t/1.parquet".into(), deletes }], &o, &AtomicBool::new(false), &|_| {})
    };
    let without = run(vec![], "without").unwrap();
    let with = run(vec![DeleteSource::Equality { path: eq.clone(), field_ids: vec![2] }], "with").unwrap();
    assert_eq!((with.rows_deleted, with.rows_written), (0, 30), "no key of the data is deleted");
    // at least the keys' 128-bit hashes, held while the call runs
    let grown = with.peak_memory_bytes.saturating_sub(without.peak_memory_bytes);
    eprintln!("peak without {} / with {} bytes: +{grown}", without.peak_memory_bytes, with.peak_memory_bytes);
    assert!(grown >= 200_000 * 16, "peak grew by {grown} bytes only");

    // 2M keys need a 2^22-bucket table (~71 MB): more than the bound at batchBytes 1024 (64 MiB
    // + 3 KiB), refused before it is allocated
    let big = s.path().join("eq-2m.parquet");
    many_keys(&big, 2_000_000);
    let out = s.path().join("refused");
    let mut o = Options::new(&out);
    o.batch_bytes = 1024;
    let e = compact(
        &[InputFile {
            path: data.clone(),
            location: "s3://t/1.parquet".into(),
            deletes: vec![DeleteSource::Equality { path: big, field_ids: vec![2] }],
        }],
        &o,
        &AtomicBool::new(false),
        &|_| {},
    )
    .unwrap_err();
    assert_eq!(e.code(), "ERR_INVALID_OPTIONS", "{e}");
    assert!(e.to_string().contains("batchBytes") && e.to_string().contains("eq-2m.parquet"), "{e}");
    assert!(!out.exists());
}
