//! Core tests without Node: byte-bounded batches, byte-targeted rolling, row-group caps,
//! schema and metadata fidelity, and cleanup on every failure path.

use arrow_array::{Array, ArrayRef, BinaryArray, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use gencompact::budget::ReadLimits;
use gencompact::compact;
use gencompact::read::read_all;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::ParquetMetaDataReader;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common;
use common::*;

#[test]
fn batches_stay_within_batch_bytes_even_for_fat_dictionary_values() {
    let s = Scratch::new("batches");
    let files = write_inputs(s.path(), 1, 2000, 50_000, 100);
    // The fat value is stored once per dictionary: the row group's uncompressed size per row is
    // tiny, while every decoded row carries 50 KB.
    let meta = ParquetMetaDataReader::new().parse_and_finish(&File::open(&files[0]).unwrap()).unwrap();
    let rg = meta.row_group(0);
    let naive_per_row = rg.total_byte_size() as f64 / rg.num_rows() as f64;
    assert!(naive_per_row < 5_000.0, "fixture must hide the fat value from the uncompressed size ({naive_per_row})");
    let plan =
        gencompact::plan::build_plan(&files.iter().map(|f| gencompact::iceberg::input::InputFile::plain(f.as_str())).collect::<Vec<_>>())
            .unwrap();
    let limits = ReadLimits::new(10_000, 1 << 20, 1 << 20);
    let mut rows = 0;
    let mut batches = 0;
    read_all(&plan, &limits, &AtomicBool::new(false), |b| {
        assert!(b.decoded_bytes <= limits.batch_bytes, "batch of {} rows holds {} bytes", b.batch.num_rows(), b.decoded_bytes);
        rows += b.batch.num_rows();
        batches += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(rows, 2000);
    assert!(batches >= 2000 * 50_000 / (1 << 20), "{batches} batches");
}

#[test]
fn a_row_larger_than_batch_bytes_is_a_batch_of_one() {
    let s = Scratch::new("one");
    let files = write_inputs(s.path(), 1, 50, 20_000, 10);
    let plan =
        gencompact::plan::build_plan(&files.iter().map(|f| gencompact::iceberg::input::InputFile::plain(f.as_str())).collect::<Vec<_>>())
            .unwrap();
    let limits = ReadLimits::new(10_000, 4096, 4096);
    let mut sizes = Vec::new();
    read_all(&plan, &limits, &AtomicBool::new(false), |b| {
        sizes.push(b.batch.num_rows());
        Ok(())
    })
    .unwrap();
    assert_eq!(sizes.len(), 50);
    assert!(sizes.iter().all(|&n| n == 1));
}

#[test]
fn many_small_files_become_few_near_equal_files_near_target() {
    let s = Scratch::new("roll");
    let inputs = s.path().join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    let files = write_inputs(&inputs, 40, 100, 2_000, 1_000);
    let total_rows = 40 * 100;
    let out = s.path().join("out");
    let mut o = opts(&out);
    o.target_file_bytes = 1 << 20;
    o.batch_bytes = 256 << 10;
    let r = run(&files, &o).unwrap();
    assert_eq!(r.rows_read, total_rows);
    assert_eq!(r.files.iter().map(|f| f.record_count).sum::<u64>(), total_rows);
    assert!(r.files.len() >= 2 && r.files.len() <= 5, "{} files", r.files.len());
    let mut names = entries(&out);
    names.sort();
    assert_eq!(names.len(), r.files.len());
    assert!(names.iter().all(|n| n.ends_with(".parquet")), "{names:?}");
    let sizes: Vec<u64> = r.files.iter().map(|f| std::fs::metadata(&f.path).unwrap().len()).collect();
    for (f, size) in r.files.iter().zip(&sizes) {
        assert_eq!(f.file_size_in_bytes, *size);
        let meta = ParquetMetaDataReader::new().parse_and_finish(&File::open(&f.path).unwrap()).unwrap();
        let largest_rg = meta.row_groups().iter().map(|rg| rg.compressed_size() as u64).max().unwrap();
        assert!(*size <= o.target_file_bytes + largest_rg + 64 * 1024, "file of {size} bytes");
        assert_eq!(meta.num_row_groups() as u32, f.row_groups);
    }
    let (min, max) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
    assert!(min * 2 >= max, "sizes {sizes:?}");
}

#[test]
fn row_groups_close_at_batch_rows_and_batch_bytes() {
    let s = Scratch::new("rg");
    let files = write_inputs(s.path(), 3, 500, 100, 1_000);
    let out = s.path().join("out");
    let mut o = opts(&out);
    o.batch_rows = 128;
    let r = run(&files, &o).unwrap();
    let meta = ParquetMetaDataReader::new().parse_and_finish(&File::open(&r.files[0].path).unwrap()).unwrap();
    assert!(meta.row_groups().iter().all(|rg| rg.num_rows() <= 128));
    assert_eq!(meta.file_metadata().num_rows(), 1500);

    // A 64 KiB cap: every row group holds at most that many decoded bytes, and every row
    // group but a file's last is filled to it (not closed when the next batch does not fit
    // whole). Sorted, the merge hands the writer batches of about half the cap.
    for sorted in [false, true] {
        let out2 = s.path().join(format!("out2-{sorted}"));
        let mut o = opts(&out2);
        o.batch_bytes = 64 << 10;
        if sorted {
            o.sort_by = Some(vec![gencompact::options::SortKey { column: "id".into(), descending: true, nulls_first: false }]);
        }
        let r = run(&files, &o).unwrap();
        let sizes = row_group_plain_bytes(Path::new(&r.files[0].path));
        assert!(sizes.len() >= 1500 * 1_000 / (64 << 10), "{sizes:?}");
        let cap = (64 << 10) as f64;
        assert!(sizes.iter().all(|&b| b as f64 <= cap * 1.03), "sorted {sorted}: a row group over the cap: {sizes:?}");
        assert!(sizes[..sizes.len() - 1].iter().all(|&b| b as f64 >= cap * 0.9), "sorted {sorted}: a row group closed early: {sizes:?}");
    }
}

/// Decoded bytes of each row group of a `write_inputs` file, counted from its values: each
/// string and binary value's bytes plus an 8-byte offset, 8 bytes per timestamp, 4 per int.
fn row_group_plain_bytes(path: &Path) -> Vec<usize> {
    let file = File::open(path).unwrap();
    let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
    use parquet::file::reader::FileReader;
    let mut out = Vec::new();
    for rg in 0..reader.num_row_groups() {
        let mut bytes = 0;
        for row in reader.get_row_group(rg).unwrap().get_row_iter(None).unwrap() {
            for (name, field) in row.unwrap().get_column_iter() {
                bytes += match field {
                    parquet::record::Field::Str(v) => v.len() + 8,
                    parquet::record::Field::Bytes(v) => v.len() + 8,
                    parquet::record::Field::TimestampMicros(_) => 8,
                    parquet::record::Field::Int(_) => 4,
                    parquet::record::Field::Null if name == "n" => 4,
                    parquet::record::Field::Null => 8,
                    other => panic!("unexpected value {other:?}"),
                };
            }
        }
        out.push(bytes);
    }
    out
}

#[test]
fn output_keeps_schema_field_ids_and_key_value_metadata() {
    let s = Scratch::new("schema");
    let files = write_inputs(s.path(), 3, 50, 1_000, 100);
    let out = s.path().join("out");
    let r = run(&files, &opts(&out)).unwrap();
    let input = ParquetMetaDataReader::new().parse_and_finish(&File::open(&files[2]).unwrap()).unwrap();
    let output = ParquetMetaDataReader::new().parse_and_finish(&File::open(&r.files[0].path).unwrap()).unwrap();
    assert_eq!(
        input.file_metadata().schema_descr().root_schema().get_fields(),
        output.file_metadata().schema_descr().root_schema().get_fields()
    );
    let kv = |m: &parquet::file::metadata::ParquetMetaData| -> Vec<(String, Option<String>)> {
        m.file_metadata().key_value_metadata().unwrap().iter().map(|k| (k.key.clone(), k.value.clone())).collect()
    };
    // The newest (last) input's iceberg.schema wins; no ARROW:schema of ours is added.
    let out_kv = kv(&output);
    assert_eq!(out_kv.iter().find(|(k, _)| k == "iceberg.schema"), kv(&input).iter().find(|(k, _)| k == "iceberg.schema"));
    assert_eq!(out_kv.iter().filter(|(k, _)| k == "ARROW:schema").count(), kv(&input).iter().filter(|(k, _)| k == "ARROW:schema").count());
    assert_eq!(r.files[0].columns.iter().map(|c| c.field_id).collect::<Vec<_>>(), vec![Some(1), Some(2), Some(3), Some(4), Some(5)]);
    let body = &r.files[0].columns[3];
    assert_eq!(body.value_count, 150);
    assert_eq!(body.null_value_count, 3 * (0..50).filter(|r| r % 7 == 3).count() as u64);
}

#[test]
fn corrupt_input_fails_with_its_name_and_leaves_nothing() {
    let s = Scratch::new("corrupt");
    let mut files = write_inputs(s.path(), 3, 200, 1_000, 500);
    let bad = s.path().join("bad.parquet");
    std::fs::write(&bad, b"PAR1 this is not parquet at all PAR1").unwrap();
    files.push(bad.display().to_string());
    let out = s.path().join("out");
    let err = run(&files, &opts(&out)).unwrap_err();
    assert_eq!(err.code(), "ERR_INPUT_CORRUPT");
    assert!(err.to_string().contains("bad.parquet"), "{err}");
    assert!(!out.exists(), "outDir we created must be removed: {:?}", entries(&out));

    // A corrupt page deep in the last input: the files before it were already written.
    let mut files = write_inputs(s.path(), 3, 200, 1_000, 500);
    let copy = s.path().join("victim.parquet");
    corrupt_first_page(Path::new(&files[2]), &copy, 3);
    files[2] = copy.display().to_string();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep.txt"), b"not ours").unwrap();
    let mut o = opts(&out);
    o.batch_rows = 50;
    o.target_file_bytes = 64 << 10;
    let err = run(&files, &o).unwrap_err();
    assert_eq!(err.code(), "ERR_INPUT_CORRUPT", "{err}");
    assert!(err.to_string().contains("victim.parquet"), "{err}");
    assert!(err.to_string().contains("body"), "names the column: {err}");
    assert_eq!(entries(&out), vec!["keep.txt".to_string()]);
}

#[test]
fn abort_before_and_during_a_run_leaves_nothing() {
    let s = Scratch::new("abort");
    let files = write_inputs(s.path(), 10, 300, 1_000, 1_000);
    let out = s.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut o = opts(&out);
    o.batch_rows = 100;
    o.target_file_bytes = 32 << 10;

    let cancel = AtomicBool::new(true);
    let err = compact(&files, &o, &cancel, &|_| {}).unwrap_err();
    assert_eq!(err.code(), "ERR_ABORTED");
    assert!(entries(&out).is_empty());

    // Abort once files exist on disk.
    let cancel = AtomicBool::new(false);
    let seen_files = AtomicUsize::new(0);
    let err = compact(&files, &o, &cancel, &|p| {
        if p.files_written >= 2 {
            seen_files.store(entries(&out).len(), Ordering::SeqCst);
            cancel.store(true, Ordering::SeqCst);
        }
    })
    .unwrap_err();
    assert_eq!(err.code(), "ERR_ABORTED");
    assert!(seen_files.load(Ordering::SeqCst) >= 2, "the abort came mid-run");
    assert!(entries(&out).is_empty(), "{:?}", entries(&out));
}

#[test]
fn missing_input_and_schema_conflict_are_typed() {
    let s = Scratch::new("errs");
    let files = write_inputs(s.path(), 2, 10, 10, 10);
    let out = s.path().join("out");
    let mut with_missing = files.clone();
    with_missing.push(s.path().join("nope.parquet").display().to_string());
    let err = run(&with_missing, &opts(&out)).unwrap_err();
    assert_eq!(err.code(), "ERR_INPUT_NOT_FOUND");
    // Directories a failed call created for a nested outDir are removed, all of them.
    // (The corrupt page is only found while reading, after outDir was made.)
    let nested = s.path().join("a").join("b").join("c");
    let bad_page = s.path().join("bad-page.parquet");
    corrupt_first_page(Path::new(&files[1]), &bad_page, 3);
    let bad = vec![files[0].clone(), bad_page.display().to_string()];
    assert_eq!(run(&bad, &opts(&nested)).unwrap_err().code(), "ERR_INPUT_CORRUPT");
    assert!(!s.path().join("a").exists());
    assert!(err.to_string().contains("nope.parquet"));

    let other = s.path().join("other.parquet");
    let schema2 = Arc::new(Schema::new(vec![field("id", DataType::Int32, false, 1)]));
    let batch = RecordBatch::try_new(schema2.clone(), vec![Arc::new(Int32Array::from(vec![1, 2]))]).unwrap();
    let mut w = ArrowWriter::try_new(File::create(&other).unwrap(), schema2, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let mut mixed = files.clone();
    mixed.push(other.display().to_string());
    let err = run(&mixed, &opts(&out)).unwrap_err(); // Utf8 vs Int32: no promotion
    assert_eq!(err.code(), "ERR_SCHEMA_CONFLICT");
    let msg = err.to_string();
    assert!(msg.contains("in-0000.parquet") && msg.contains("other.parquet") && msg.contains("'id'"), "{msg}");
    assert!(!out.exists());
}

#[test]
fn a_panic_becomes_err_internal() {
    let err = gencompact::contain::guard::<()>(|| panic!("boom")).unwrap_err();
    assert_eq!(err.code(), "ERR_INTERNAL");
    assert!(err.to_string().contains("boom"));
}

#[test]
fn outputs_never_replace_existing_files() {
    let s = Scratch::new("exists");
    let files = write_inputs(s.path(), 2, 10, 10, 10);
    let out = s.path().join("out");
    let mut o = opts(&out);
    o.file_name_prefix = "fixed".into();
    run(&files, &o).unwrap();
    let before = std::fs::read(out.join("fixed-00000.parquet")).unwrap();
    let err = run(&files, &o).unwrap_err();
    assert_eq!(err.code(), "ERR_IO");
    assert_eq!(std::fs::read(out.join("fixed-00000.parquet")).unwrap(), before);
    assert_eq!(entries(&out), vec!["fixed-00000.parquet".to_string()]);
}

#[test]
fn schemas_are_unified_and_a_missing_required_column_conflicts() {
    let s = Scratch::new("unify");
    let files = write_inputs(s.path(), 2, 20, 10, 10);
    let write = |name: &str, fields: Vec<Field>, cols: Vec<ArrayRef>| {
        let schema = Arc::new(Schema::new(fields));
        let path = s.path().join(name);
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), None).unwrap();
        w.write(&RecordBatch::try_new(schema, cols).unwrap()).unwrap();
        w.close().unwrap();
        path.display().to_string()
    };
    // An older file without the optional columns `fat`, `body` and with `n` as INT32; a newer
    // (last) one where `n` became INT64.
    let older = write(
        "older.parquet",
        vec![
            field("id", DataType::Utf8, false, 1),
            field("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())), false, 2),
            field("n", DataType::Int32, true, 5),
        ],
        vec![
            Arc::new(StringArray::from(vec!["o1", "o2"])),
            Arc::new(TimestampMicrosecondArray::from(vec![1, 2]).with_timezone("+00:00")),
            Arc::new(Int32Array::from(vec![Some(7), None])),
        ],
    );
    let newer = write(
        "newer.parquet",
        vec![
            field("id", DataType::Utf8, false, 1),
            field("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())), false, 2),
            field("fat", DataType::Binary, true, 3),
            field("body", DataType::Utf8, true, 4),
            field("n", DataType::Int64, true, 5),
        ],
        vec![
            Arc::new(StringArray::from(vec!["n1"])),
            Arc::new(TimestampMicrosecondArray::from(vec![3]).with_timezone("+00:00")),
            Arc::new(BinaryArray::from(vec![Some(b"x".as_slice())])),
            Arc::new(StringArray::from(vec![Some("b")])),
            Arc::new(arrow_array::Int64Array::from(vec![Some(1i64 << 40)])),
        ],
    );
    let out = s.path().join("out");
    let inputs = vec![files[0].clone(), older.clone(), newer.clone()];
    let r = run(&inputs, &opts(&out)).unwrap();
    assert_eq!(r.rows_written, 23);
    let meta = ParquetMetaDataReader::new().parse_and_finish(&File::open(&r.files[0].path).unwrap()).unwrap();
    let n = meta.file_metadata().schema_descr().columns().iter().find(|c| c.name() == "n").unwrap().clone();
    assert_eq!(n.physical_type(), parquet::basic::Type::INT64);
    let batches: Vec<RecordBatch> =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(File::open(&r.files[0].path).unwrap())
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
    let all = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    let ns = all.column_by_name("n").unwrap().as_any().downcast_ref::<arrow_array::Int64Array>().unwrap().clone();
    assert_eq!(ns.value(20), 7);
    assert!(ns.is_null(21));
    assert_eq!(ns.value(22), 1i64 << 40);
    // the first input had `fat` on every row; the older file lacks it: its 2 rows are null
    assert_eq!(all.column_by_name("fat").unwrap().null_count(), 2);

    // A REQUIRED column the other inputs lack cannot be filled with nulls.
    let strict = write(
        "strict.parquet",
        vec![
            field("id", DataType::Utf8, false, 1),
            field("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())), false, 2),
            field("must", DataType::Int32, false, 9),
        ],
        vec![
            Arc::new(StringArray::from(vec!["s"])),
            Arc::new(TimestampMicrosecondArray::from(vec![4]).with_timezone("+00:00")),
            Arc::new(Int32Array::from(vec![1])),
        ],
    );
    let err = run(&[files[0].clone(), strict], &opts(&s.path().join("out2"))).unwrap_err();
    assert_eq!(err.code(), "ERR_SCHEMA_CONFLICT");
    assert!(err.to_string().contains("'must'"), "{err}");
}

/// What the plan keeps per input for the whole call is held from the call's accountant: ten
/// times the inputs raise the accounted peak by at least their summaries' bytes (a streamed call
/// holds one small batch at a time, the same for both).
#[test]
fn per_input_state_is_reserved_from_the_accountant() {
    let peak = |files: usize| {
        let s = Scratch::new(&format!("per-input-{files}"));
        let inputs = write_inputs(s.path(), files, 3, 10, 10);
        let plan = gencompact::plan::build_plan(
            &inputs.iter().map(|f| gencompact::iceberg::input::InputFile::plain(f.as_str())).collect::<Vec<_>>(),
        )
        .unwrap();
        let summaries: usize = plan.inputs.iter().map(gencompact::plan::InputSummary::held_bytes).sum();
        let report = run(&inputs, &opts(&s.path().join("out"))).unwrap();
        assert_eq!(report.rows_written, 3 * files as u64);
        (report.peak_memory_bytes as usize, summaries)
    };
    let (small, small_summaries) = peak(100);
    let (large, large_summaries) = peak(1000);
    assert!(large_summaries >= 900 * std::mem::size_of::<gencompact::plan::InputSummary>() + small_summaries);
    assert!(
        large >= small + (large_summaries - small_summaries),
        "peak {small} -> {large}, summaries {small_summaries} -> {large_summaries}"
    );
}
