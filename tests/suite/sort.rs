//! `sortBy` without Node: every file sorted end to end, stable for equal keys, the same rows
//! in the same order whether the tuple was sorted in memory or spilled and merged in several
//! passes, `sorting_columns` declared, and spill files removed on success and failure.

use crate::common;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, TimestampMicrosecondType};
use arrow_array::{Array, ArrayRef, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow_schema::{DataType, Schema, TimeUnit};
use common::*;
use gencompact::compact;
use gencompact::iceberg::partition::{PartitionField, PartitionValue, Transform};
use gencompact::options::SortKey;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::{ParquetMetaDataReader, SortingColumn};
use std::cmp::Ordering as CmpOrdering;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

type Row = (i32, i64, Option<i32>, String);

fn sort_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        field("seq", DataType::Int32, false, 1),
        field("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())), false, 2),
        field("n", DataType::Int32, true, 3),
        field("tenant", DataType::Utf8, false, 4),
        field("body", DataType::Utf8, true, 5),
    ]))
}

/// `files` inputs of `rows` rows in no order: `seq` is the arrival position, `ts` pseudo-random
/// with many ties, `n` small with ties and nulls, `tenant` one of three.
fn unsorted_inputs(dir: &Path, files: usize, rows: usize) -> Vec<String> {
    inputs(dir, files, rows, 0)
}

/// As `unsorted_inputs`, but file f's `ts` within [f × `cluster`, f × `cluster` + 500) when
/// `cluster` > 0: the files come in time slices, each in no order within (as a day's ingest
/// flushes do).
fn inputs(dir: &Path, files: usize, rows: usize, cluster: i64) -> Vec<String> {
    inputs_with(dir, files, rows, cluster, |seed| noise(seed, 200))
}

/// As `inputs`, with each row's `body` (when not null) made by `body` from its `seq`.
fn inputs_with(dir: &Path, files: usize, rows: usize, cluster: i64, body: impl Fn(u64) -> String) -> Vec<String> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..files)
        .map(|f| {
            let path = dir.join(format!("u-{f:03}.parquet"));
            let vals: Vec<(i64, Option<i32>, u64)> =
                (0..rows).map(|_| ((next() % 500) as i64, (next() % 9 != 0).then(|| (next() % 6) as i32), next() % 3)).collect();
            let cols: Vec<ArrayRef> = vec![
                Arc::new(Int32Array::from_iter_values((0..rows).map(|r| (f * rows + r) as i32))),
                Arc::new(
                    TimestampMicrosecondArray::from_iter_values(vals.iter().map(|v| 1_700_000_000_000_000 + f as i64 * cluster + v.0))
                        .with_timezone("+00:00"),
                ),
                Arc::new(Int32Array::from_iter(vals.iter().map(|v| v.1))),
                Arc::new(StringArray::from_iter_values(vals.iter().map(|v| format!("t{}", v.2)))),
                Arc::new(StringArray::from_iter((0..rows).map(|r| (r % 4 != 1).then(|| body((f * rows + r) as u64))))),
            ];
            let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), sort_schema(), None).unwrap();
            w.write(&RecordBatch::try_new(sort_schema(), cols).unwrap()).unwrap();
            w.close().unwrap();
            path.display().to_string()
        })
        .collect()
}

/// (seq, ts, n, tenant) of every row of a file, in file order.
fn rows_of(path: &Path) -> Vec<Row> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    let mut out = Vec::new();
    for b in reader {
        let b = b.unwrap();
        let seq = b.column(0).as_primitive::<Int32Type>();
        let ts = b.column(1).as_primitive::<TimestampMicrosecondType>();
        let n = b.column(2).as_primitive::<Int32Type>();
        let tenant = b.column(3).as_string::<i32>();
        for i in 0..b.num_rows() {
            out.push((seq.value(i), ts.value(i), (!n.is_null(i)).then(|| n.value(i)), tenant.value(i).to_string()));
        }
    }
    out
}

/// `n` descending with nulls last, then `ts` ascending: the order the tests ask for.
fn expected_order(a: &Row, b: &Row) -> CmpOrdering {
    let by_n = match (a.2, b.2) {
        (None, None) => CmpOrdering::Equal,
        (None, Some(_)) => CmpOrdering::Greater,
        (Some(_), None) => CmpOrdering::Less,
        (Some(x), Some(y)) => y.cmp(&x),
    };
    by_n.then(a.1.cmp(&b.1))
}

fn sort_keys() -> Vec<SortKey> {
    vec![
        SortKey { column: "n".into(), descending: true, nulls_first: false },
        SortKey { column: "ts".into(), descending: false, nulls_first: true },
    ]
}

#[test]
fn spilled_and_in_memory_sorts_agree_and_are_stable() {
    let s = Scratch::new("sort");
    // A merge takes up to 256 runs: "passes" spills ~1,000 runs of ~15 rows.
    for (name, batch_bytes, rows_per_file) in [("memory", 32 << 20, 400), ("spill", 16 << 10, 400), ("passes", 4 << 10, 2700)] {
        let input_dir = s.path().join(format!("{name}-in"));
        std::fs::create_dir_all(&input_dir).unwrap();
        let files = unsorted_inputs(&input_dir, 6, rows_per_file);
        let mut all: Vec<_> = files.iter().flat_map(|f| rows_of(Path::new(f))).collect();
        // The stable sort of the arrival order: ties keep `seq` order.
        all.sort_by(expected_order);
        let out = s.path().join(name);
        let spill_dir = s.path().join(format!("{name}-tmp/nested"));
        let mut o = opts(&out);
        o.batch_bytes = batch_bytes;
        o.sort_by = Some(sort_keys());
        o.sort_order_id = 3;
        o.tmp_dir = Some(spill_dir.clone());
        let r = run(&files, &o).unwrap();
        assert_eq!(r.rows_written, 6 * rows_per_file as u64);
        match name {
            "memory" => assert_eq!(r.files_spilled, 0),
            "spill" => assert!(
                r.files_spilled >= 10 && r.intermediate_merges == 0,
                "{name}: {} runs, {} merges",
                r.files_spilled,
                r.intermediate_merges
            ),
            // Over 256 runs: merges of 256 runs each until the rest fit the final merge.
            _ => assert!(r.intermediate_merges >= 3, "{name}: {} runs, {} merges", r.files_spilled, r.intermediate_merges),
        }
        assert!(!spill_dir.exists() && !s.path().join(format!("{name}-tmp")).exists(), "{name}: tmpDir it created is removed");
        assert!(entries(&out).iter().all(|n| n.ends_with(".parquet")), "{:?}", entries(&out));
        let mut rows = Vec::new();
        for f in &r.files {
            assert_eq!(f.sort_order_id, 3);
            let meta = ParquetMetaDataReader::new().parse_and_finish(&File::open(&f.path).unwrap()).unwrap();
            for rg in meta.row_groups() {
                assert_eq!(
                    rg.sorting_columns().cloned(),
                    Some(vec![
                        SortingColumn { column_idx: 2, descending: true, nulls_first: false },
                        SortingColumn { column_idx: 1, descending: false, nulls_first: true }
                    ])
                );
            }
            rows.extend(rows_of(Path::new(&f.path)));
        }
        assert_eq!(rows, all, "{name}: sorted end to end, ties in arrival order");
    }
}

#[test]
fn runs_whose_keys_do_not_overlap_merge_in_one_pass_however_many_there_are() {
    // 40 files in time slices of their own, each in no order within, spilled in runs of a few
    // rows: far more runs than one merge takes (256), but only the runs of one file overlap,
    // and the merge opens a run when it reaches its first key: no intermediate merge.
    let s = Scratch::new("sort-sliced");
    let files = inputs(s.path(), 40, 300, 1000);
    let mut all: Vec<Row> = files.iter().flat_map(|f| rows_of(Path::new(f))).collect();
    all.sort_by_key(|r| r.1);
    let out = s.path().join("out");
    let mut o = opts(&out);
    o.batch_bytes = 4 << 10;
    o.sort_by = Some(vec![SortKey { column: "ts".into(), descending: false, nulls_first: true }]);
    let r = run(&files, &o).unwrap();
    assert!(r.files_spilled > 256 && r.intermediate_merges == 0, "{} runs, {} merges", r.files_spilled, r.intermediate_merges);
    assert!(r.peak_memory_bytes as usize <= gencompact::memory::call_bound(o.batch_bytes), "{}", r.peak_memory_bytes);
    let rows: Vec<Row> = r.files.iter().flat_map(|f| rows_of(Path::new(&f.path))).collect();
    assert_eq!(rows, all, "sorted by ts, ties in arrival order");
    // the same rows in unsliced files need merge passes (the runs all overlap)
    let mixed = s.path().join("mixed-in");
    std::fs::create_dir_all(&mixed).unwrap();
    let files = unsorted_inputs(&mixed, 40, 300);
    let mut m = opts(&s.path().join("mixed"));
    m.batch_bytes = o.batch_bytes;
    m.sort_by = o.sort_by.clone();
    let r = run(&files, &m).unwrap();
    assert!(r.files_spilled > 256 && r.intermediate_merges > 0, "{} runs, {} merges", r.files_spilled, r.intermediate_merges);
}

#[test]
fn intermediate_merges_run_two_at_once_with_threads_and_write_what_one_at_a_time_writes() {
    // ~1,000 runs that all overlap: merge passes before the final merge. With `threads` 2 they
    // run two at once, each giving back the runs it reads (Linux), with `threads` 1 one at a
    // time: the same files, byte for byte.
    let s = Scratch::new("sort-two-merges");
    let files = unsorted_inputs(s.path(), 6, 2700);
    let mut all: Vec<Row> = files.iter().flat_map(|f| rows_of(Path::new(f))).collect();
    all.sort_by(expected_order);
    sorted_on_every_thread_count(s.path(), &files, &all, &[1, 2], 4 << 10, |threads, r| {
        assert!(r.intermediate_merges >= 3, "threads {threads}: {} runs, {} merges", r.files_spilled, r.intermediate_merges);
        if threads > 1 && gencompact::holes::gives_back(s.path()) {
            assert!(
                r.concurrent_merges >= 2 && r.concurrent_merges <= r.intermediate_merges,
                "{} of {}",
                r.concurrent_merges,
                r.intermediate_merges
            );
        } else {
            assert_eq!(r.concurrent_merges, 0, "threads {threads}");
        }
    });
}

/// Sorts `files` by `sort_keys` with each of `threads` and `batch_bytes` into `dir`/t<threads>:
/// each call `check`ed, within the bound, its rows `all` in order; and the same files, byte for
/// byte, for every thread count.
fn sorted_on_every_thread_count(
    dir: &Path,
    files: &[String],
    all: &[Row],
    threads: &[usize],
    batch_bytes: usize,
    check: impl Fn(usize, &gencompact::CompactReport),
) {
    let mut outputs = Vec::new();
    for &threads in threads {
        let mut o = opts(&dir.join(format!("t{threads}")));
        o.batch_bytes = batch_bytes;
        o.threads = threads;
        o.sort_by = Some(sort_keys());
        let r = run(files, &o).unwrap();
        check(threads, &r);
        assert!(r.peak_memory_bytes as usize <= gencompact::memory::call_bound(o.batch_bytes), "{}", r.peak_memory_bytes);
        let rows: Vec<Row> = r.files.iter().flat_map(|f| rows_of(Path::new(&f.path))).collect();
        assert_eq!(rows, all, "threads {threads}: sorted end to end, ties in arrival order");
        outputs.push(r.files.iter().map(|f| std::fs::read(&f.path).unwrap()).collect::<Vec<_>>());
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]), "the same files for threads {threads:?}");
}

#[test]
fn a_partition_of_more_runs_than_a_merge_takes_squeezes_its_fat_values_and_writes_the_same_on_every_thread_count() {
    // Rows of ~5.6 KB of text each its own, sorted with a 64 KiB batchBytes: ~270 runs that all
    // overlap, more than a final merge takes (256), unless the sort buffers hold the text
    // squeezed once the partition's projected size says so. The same rows, sorted, with their
    // text (`verify` digests every column), in one merge pass, within the bound, and the same
    // files for `threads` 1, 2 and 8.
    let s = Scratch::new("sort-squeeze");
    let fat = |seed: u64| format!("{} {}", noise(seed, 300), "the conversation so far ".repeat(220));
    let files = inputs_with(s.path(), 40, 60, 0, fat);
    let mut all: Vec<Row> = files.iter().flat_map(|f| rows_of(Path::new(f))).collect();
    all.sort_by(expected_order);
    sorted_on_every_thread_count(s.path(), &files, &all, &[1, 2, 8], 64 << 10, |threads, r| {
        assert!(
            r.squeezed_runs > 0 && r.intermediate_merges == 0,
            "threads {threads}: {} runs, {} squeezed, {} merges",
            r.files_spilled,
            r.squeezed_runs,
            r.intermediate_merges
        );
    });
    // where the runs fit one merge, nothing is squeezed
    let mut o = opts(&s.path().join("fits"));
    o.batch_bytes = 1 << 20;
    o.sort_by = Some(sort_keys());
    let r = run(&files, &o).unwrap();
    assert!(r.files_spilled > 1 && r.squeezed_runs == 0, "{} runs, {} squeezed", r.files_spilled, r.squeezed_runs);
    // nor where they overlap little (inputs in time slices), however many there are
    let sliced = s.path().join("sliced-in");
    std::fs::create_dir_all(&sliced).unwrap();
    let files = inputs_with(&sliced, 40, 60, 1000, fat);
    let mut o = opts(&s.path().join("sliced"));
    o.batch_bytes = 64 << 10;
    o.sort_by = Some(vec![SortKey { column: "ts".into(), descending: false, nulls_first: true }]);
    let r = run(&files, &o).unwrap();
    assert!(
        r.files_spilled > 256 && r.squeezed_runs == 0 && r.intermediate_merges == 0,
        "{} runs, {} squeezed, {} merges",
        r.files_spilled,
        r.squeezed_runs,
        r.intermediate_merges
    );
}

#[test]
fn each_tuple_is_sorted_on_its_own_with_call_wide_dedupe_first_occurrences() {
    let s = Scratch::new("sort-part");
    let files = unsorted_inputs(s.path(), 4, 300);
    let out = s.path().join("out");
    let mut o = opts(&out);
    o.batch_bytes = 8 << 10;
    o.sort_by = Some(vec![SortKey { column: "ts".into(), descending: false, nulls_first: true }]);
    o.partition_by = Some(vec![PartitionField { column: "tenant".into(), transform: Transform::Identity, name: "tenant".into() }]);
    o.dedupe_by = Some("ts".into());
    let r = run(&files, &o).unwrap();
    assert_eq!(r.files.len(), 3);
    // First occurrence of each ts in the whole call (files order), whichever tenant it is in.
    let all: Vec<(String, i64, i32)> =
        files.iter().flat_map(|f| rows_of(Path::new(f))).map(|(seq, ts, _, tenant)| (tenant, ts, seq)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut expected: Vec<(String, i64, i32)> = all.into_iter().filter(|(_, ts, _)| seen.insert(*ts)).collect();
    expected.sort();
    assert_eq!(r.duplicates_dropped, 1200 - expected.len() as u64);
    let mut got = Vec::new();
    for f in &r.files {
        let Some((_, PartitionValue::String(tenant))) = f.partition.first() else { panic!("tenant partition: {:?}", f.partition) };
        let rows = rows_of(Path::new(&f.path));
        assert!(rows.windows(2).all(|w| w[0].1 < w[1].1), "sorted by ts, each ts once");
        assert!(rows.iter().all(|r| &r.3 == tenant), "one tenant per file");
        got.extend(rows.into_iter().map(|(seq, ts, _, t)| (t, ts, seq)));
    }
    got.sort();
    assert_eq!(got, expected);
}

#[test]
fn abort_while_spilling_and_bad_keys_leave_nothing() {
    let s = Scratch::new("sort-abort");
    let files = unsorted_inputs(s.path(), 6, 400);
    let out = s.path().join("out");
    let mut o = opts(&out);
    o.batch_bytes = 4 << 10;
    o.sort_by = Some(sort_keys());
    let cancel = AtomicBool::new(false);
    let saw_spill = AtomicBool::new(false);
    // A watcher aborts the call as soon as a run file shows up under outDir.
    let err = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !cancel.load(Ordering::SeqCst) {
                if entries(&out).iter().any(|n| n.contains("-spill-")) {
                    saw_spill.store(true, Ordering::SeqCst);
                    cancel.store(true, Ordering::SeqCst);
                }
                std::thread::yield_now();
            }
        });
        let r = compact(&files, &o, &cancel, &|_| {});
        cancel.store(true, Ordering::SeqCst);
        r.unwrap_err()
    });
    assert_eq!(err.code(), "ERR_ABORTED");
    assert!(saw_spill.load(Ordering::SeqCst), "runs were on disk when the abort came");
    assert!(!out.exists() || entries(&out).is_empty(), "{:?}", entries(&out));

    for bad in ["missing", ""] {
        o.sort_by = Some(vec![SortKey { column: bad.into(), descending: false, nulls_first: true }]);
        assert_eq!(run(&files, &o).unwrap_err().code(), "ERR_INVALID_OPTIONS");
        assert!(!out.exists(), "nothing created for bad options");
    }
}

/// Writes `rows` (seq, ts, n, tenant) as one input file (`props`: the writer's, e.g. row group size).
fn write_rows(path: &Path, rows: &[Row], props: Option<parquet::file::properties::WriterProperties>) -> String {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| r.1)).with_timezone("+00:00")),
        Arc::new(Int32Array::from_iter(rows.iter().map(|r| r.2))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.3.clone()))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| Some(noise(r.0 as u64, 300))))),
    ];
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), sort_schema(), props).unwrap();
    w.write(&RecordBatch::try_new(sort_schema(), cols).unwrap()).unwrap();
    w.close().unwrap();
    path.display().to_string()
}

/// Options sorting by ts (partitioned by tenant when asked), with `batch_bytes`.
fn ts_sort_opts(out: &Path, batch_bytes: usize, partitioned: bool) -> gencompact::Options {
    let mut o = opts(out);
    o.batch_bytes = batch_bytes;
    o.sort_by = Some(vec![SortKey { column: "ts".into(), descending: false, nulls_first: true }]);
    if partitioned {
        o.partition_by = Some(vec![PartitionField { column: "tenant".into(), transform: Transform::Identity, name: "tenant".into() }]);
    }
    o
}

/// Asserts that the call's files hold `expected` (already in order): in one file, or one file
/// per tenant t0..t2 when partitioned.
fn assert_files_hold(r: &gencompact::CompactReport, expected: &[Row], partitioned: bool, case: &str) {
    let mut got: Vec<Vec<Row>> = r.files.iter().map(|f| rows_of(Path::new(&f.path))).collect();
    got.sort_by_key(|rows| rows.first().map(|r| r.3.clone()));
    let want: Vec<Vec<Row>> = if partitioned {
        (0..3).map(|t| expected.iter().filter(|r| r.3 == format!("t{t}")).cloned().collect()).collect()
    } else {
        vec![expected.to_vec()]
    };
    assert_eq!(got, want, "{case} partitioned={partitioned}");
}

#[test]
fn rows_already_in_order_stream_without_spilling_and_a_single_row_out_of_order_sorts() {
    let s = Scratch::new("sort-presorted");
    // 8 files of 150 rows; ts rises over the files with ties (also across file boundaries);
    // tenants interleave, so each tenant's rows are in order too.
    let rows: Vec<Row> = (0..1200).map(|i| (i, 1_700_000_000_000_000 + (i / 3) as i64, None, format!("t{}", i % 3))).collect();
    for (case, out_of_order) in [("in-order", false), ("one-late-row", true)] {
        let dir = s.path().join(case);
        std::fs::create_dir_all(&dir).unwrap();
        let mut rows = rows.clone();
        if out_of_order {
            // the last row of the last file is earlier than everything but the first rows
            rows[1199].1 = 1_700_000_000_000_001;
        }
        let files: Vec<String> =
            rows.chunks(150).enumerate().map(|(f, c)| write_rows(&dir.join(format!("p-{f}.parquet")), c, None)).collect();
        let mut expected = rows.clone();
        expected.sort_by_key(|r| r.1); // stable: ties keep arrival order
        for partitioned in [false, true] {
            let r = run(&files, &ts_sort_opts(&dir.join(format!("out-{partitioned}")), 16 << 10, partitioned)).unwrap();
            assert_eq!(r.rows_written, 1200);
            // Partitioned, only the late row's tenant is out of order and spills.
            assert_eq!(r.files_spilled > 0, out_of_order, "{case} partitioned={partitioned}: {} runs spilled", r.files_spilled);
            assert_files_hold(&r, &expected, partitioned, case);
        }
    }
}

#[test]
fn files_each_in_order_are_merged_from_the_inputs_and_agree_with_the_spilling_sort() {
    let s = Scratch::new("sort-merge");
    // 8 files of 150 rows, each in ts order on its own, all covering the same time span (the
    // ingest waves of a writer flushing in time order), with ties inside and across files;
    // three tenants interleaved. Each file is written as 3 row groups (a chain of sorted runs).
    let files: Vec<String> = (0..8)
        .map(|f| {
            let rows: Vec<Row> = (0..150)
                .map(|r| (f * 150 + r, 1_700_000_000_000_000 + ((r * 8 + f) / 5) as i64, None, format!("t{}", (r + f) % 3)))
                .collect();
            let props = parquet::file::properties::WriterProperties::builder().set_max_row_group_row_count(Some(50)).build();
            write_rows(&s.path().join(format!("m-{f}.parquet")), &rows, Some(props))
        })
        .collect();
    let mut expected: Vec<Row> = files.iter().flat_map(|f| rows_of(Path::new(f))).collect();
    expected.sort_by_key(|r| r.1); // stable: ties in files order, then row order
                                   // ~400 KB decoded: 256 KiB spills in the buffering sort but holds the 8 open readers of the
                                   // merge (~45 KB of pages each); 16 KiB holds neither, so the tuple spills.
    for (name, batch_bytes, merged) in [("merge", 256 << 10, true), ("spill", 16 << 10, false)] {
        for partitioned in [false, true] {
            let r = run(&files, &ts_sort_opts(&s.path().join(format!("{name}-{partitioned}")), batch_bytes, partitioned)).unwrap();
            assert_eq!(r.rows_written, 1200);
            assert_eq!(r.files_spilled == 0, merged, "{name} partitioned={partitioned}: {} runs spilled", r.files_spilled);
            assert_files_hold(&r, &expected, partitioned, name);
        }
    }
}
