//! The call's memory accountant (`peak_memory_bytes`) and spill figures on inputs whose fat
//! value is unique to every row — a conversation history per message, as the host's rows carry
//! it — so no dictionary can hide their cost: the accounted peak stays within
//! 3 × batchBytes + 64 MiB for `threads` 1, 2 and 8, unsorted, sorted (spilling) and
//! partitioned, and across concurrent calls; a sort that spills says so and keeps its temporary
//! disk near the inputs' size on disk. Inputs whose writer puts those values in pages far
//! larger than a batch (DuckDB: a chunk in one page; pyarrow: one dictionary page; either
//! compressed with ZSTD or with LZ4_RAW) stay within it too, the pages never held whole.

mod common;

use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow_schema::{DataType, Schema, TimeUnit};
use common::{field, noise, Scratch};
use gencompact::iceberg::partition::{PartitionField, Transform};
use gencompact::memory::call_bound;
use gencompact::options::SortKey;
use gencompact::{compact, CompactReport, Options};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const TENANTS: usize = 4;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        field("id", DataType::Int32, false, 1),
        field("ts", DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())), false, 2),
        field("tenant", DataType::Utf8, false, 3),
        field("history", DataType::Utf8, false, 4),
    ]))
}

/// `files` inputs, file f holding tenant f % TENANTS; each row's `history` is its tenant's
/// conversation so far (the last ~`fat` bytes of it), so no two rows are equal. ts is out of
/// order within a file, and files of later waves start earlier: sorting by ts must spill.
fn write_unique_inputs(dir: &Path, files: usize, rows: usize, fat: usize) -> (Vec<String>, u64) {
    let mut histories = vec![String::new(); TENANTS];
    let mut paths = Vec::new();
    let mut bytes = 0;
    for f in 0..files {
        let tenant = f % TENANTS;
        let mut ids = Vec::new();
        let mut ts = Vec::new();
        let mut values = Vec::new();
        for r in 0..rows {
            let h = &mut histories[tenant];
            h.push_str(&format!("{{\"role\":\"user\",\"turn\":{},\"text\":\"{}\"}}\n", f * rows + r, noise((f * rows + r) as u64, 400)));
            if h.len() > fat {
                let cut = h.len() - fat;
                let cut = (cut..h.len()).find(|i| h.is_char_boundary(*i)).unwrap_or(h.len());
                h.drain(..cut);
            }
            ids.push((f * rows + r) as i32);
            ts.push(1_700_000_000_000_000 + ((files - f) * 1000 + (r * 37) % rows) as i64 * 1_000);
            values.push(h.clone());
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(ids)),
            Arc::new(TimestampMicrosecondArray::from(ts).with_timezone("+00:00")),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(format!("t{tenant}"), rows))),
            Arc::new(StringArray::from(values)),
        ];
        let path = dir.join(format!("in-{f:04}.parquet"));
        let props = WriterProperties::builder().set_compression(Compression::ZSTD(ZstdLevel::default())).build();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema(), Some(props)).unwrap();
        w.write(&RecordBatch::try_new(schema(), cols).unwrap()).unwrap();
        w.close().unwrap();
        bytes += std::fs::metadata(&path).unwrap().len();
        paths.push(path.display().to_string());
    }
    (paths, bytes)
}

/// Rewrites `files` as one row group each whose `history` chunk is one large page: `plain`, one
/// PLAIN data page (as DuckDB writes a chunk); otherwise one dictionary page holding every
/// value and the page of their indices, 0, 1, 2, … (as pyarrow writes values unique to every
/// row until its dictionary fallback). Returns the largest page's uncompressed bytes.
fn as_large_pages(files: &[String], dir: &Path, plain: bool, codec: Compression) -> (Vec<String>, u64) {
    let mut paths = Vec::new();
    let mut largest = 0u64;
    for (i, f) in files.iter().enumerate() {
        let batches: Vec<RecordBatch> = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(File::open(f).unwrap())
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        let batch = arrow_select::concat::concat_batches(&schema(), &batches).unwrap();
        let props = WriterProperties::builder()
            .set_compression(codec)
            .set_dictionary_enabled(!plain)
            .set_dictionary_page_size_limit(1 << 30)
            .set_data_page_size_limit(1 << 30)
            .set_write_batch_size(batch.num_rows())
            .build();
        let path = dir.join(format!("large-{plain}-{codec}-{i:04}.parquet"));
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        let meta = w.close().unwrap();
        let chunk = meta.row_group(0).column(3);
        largest = largest.max(chunk.uncompressed_size() as u64);
        paths.push(path.display().to_string());
    }
    (paths, largest)
}

fn options(out: &Path, batch_bytes: usize, threads: usize, sorted: bool, partitioned: bool) -> Options {
    let mut o = Options::new(out);
    o.batch_bytes = batch_bytes;
    o.threads = threads;
    o.compression = Some(Compression::ZSTD(ZstdLevel::default()));
    if sorted {
        o.sort_by = Some(vec![SortKey { column: "ts".into(), descending: false, nulls_first: true }]);
    }
    if partitioned {
        o.partition_by = Some(vec![PartitionField { column: "tenant".into(), transform: Transform::Identity, name: "tenant".into() }]);
    }
    o
}

fn run(files: &[String], o: &Options) -> CompactReport {
    compact(files, o, &AtomicBool::new(false), &|_| {}).unwrap()
}

const BATCH_BYTES: usize = 4 << 20;

#[test]
fn the_accounted_peak_stays_within_the_bound_for_every_thread_count_sorted_or_not() {
    let dir = Scratch::new("memory-unique");
    // 48 files × 120 rows × ~24 KB of history: ~140 MB decoded, many times batchBytes.
    let (files, input_bytes) = write_unique_inputs(dir.path(), 48, 120, 24_000);
    let bound = call_bound(BATCH_BYTES) as u64;
    for (sorted, partitioned) in [(false, false), (true, false), (true, true), (false, true)] {
        for threads in [1, 2, 8] {
            let out = dir.path().join(format!("out-{sorted}-{partitioned}-{threads}"));
            let r = run(&files, &options(&out, BATCH_BYTES, threads, sorted, partitioned));
            let case = format!("sorted {sorted}, partitioned {partitioned}, threads {threads}");
            assert_eq!(r.rows_written, 48 * 120, "{case}");
            assert!(r.peak_memory_bytes <= bound, "{case}: accounted peak {} > bound {bound}", r.peak_memory_bytes);
            // The accountant saw the batches: at least one batch's share of batchBytes.
            assert!(
                r.peak_memory_bytes >= (BATCH_BYTES / 8) as u64,
                "{case}: accounted peak {} is too small to have counted a batch",
                r.peak_memory_bytes
            );
            if sorted {
                // Rows arrive out of order and the tuples are far larger than a sort buffer.
                assert!(r.files_spilled > 0, "{case}: the sort spilled");
                assert!(
                    r.bytes_spilled > 0 && r.spill_peak_bytes > 0 && r.spill_peak_bytes <= r.bytes_spilled,
                    "{case}: {} / {}",
                    r.spill_peak_bytes,
                    r.bytes_spilled
                );
                // Runs are compressed: on disk at once far less than the rows' decoded size
                // (uncompressed runs would hold all of it).
                let decoded = (48 * 120 * 24_000) as u64;
                assert!(
                    r.spill_peak_bytes * 4 <= decoded,
                    "{case}: runs on disk peaked at {} bytes for {decoded} decoded bytes ({input_bytes} on disk)",
                    r.spill_peak_bytes
                );
            } else {
                assert_eq!((r.files_spilled, r.bytes_spilled, r.spill_peak_bytes), (0, 0, 0), "{case}: nothing spilled");
            }
        }
    }
}

#[test]
fn concurrent_calls_each_stay_within_the_bound_and_together_within_their_sum() {
    let dir = Scratch::new("memory-concurrent");
    let (files, _) = write_unique_inputs(dir.path(), 24, 120, 24_000);
    let peaks: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (files, out) = (&files, dir.path().join(format!("out-{i}")));
                s.spawn(move || run(files, &options(&out, BATCH_BYTES, 2, i % 2 == 1, false)).peak_memory_bytes)
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let bound = call_bound(BATCH_BYTES) as u64;
    assert!(peaks.iter().all(|p| *p > 0 && *p <= bound), "{peaks:?} (bound {bound})");
    // The process-wide total counted every call's bytes, and never more than the calls' limits.
    let process = gencompact::memory::process_peak() as u64;
    assert!(process >= *peaks.iter().max().unwrap_or(&0), "process peak {process} below a call's {peaks:?}");
    assert!(process <= 4 * bound, "process peak {process} > 4 × {bound}");
}

#[test]
fn pages_far_larger_than_a_batch_are_never_held_whole_and_the_bound_holds() {
    let dir = Scratch::new("memory-large-pages");
    // 4 files × 1,600 rows × ~30 KB of history: a 48 MB page per file, 12 × batchBytes.
    let (small, _) = write_unique_inputs(dir.path(), 4, 1600, 30_000);
    let bound = call_bound(BATCH_BYTES) as u64;
    // (LZ4_RAW: the codec pyarrow writes for `lz4`, a raw block per page with no length of its own)
    let zstd = Compression::ZSTD(ZstdLevel::default());
    for (plain, codec) in [(true, zstd), (false, zstd), (true, Compression::LZ4_RAW), (false, Compression::LZ4_RAW)] {
        let (files, page) = as_large_pages(&small, dir.path(), plain, codec);
        assert!(page >= 40 << 20, "the history chunk is one page of {page} bytes");
        for (sorted, threads) in [(false, 1), (false, 2), (false, 8), (true, 2)] {
            let out = dir.path().join(format!("out-{plain}-{codec}-{sorted}-{threads}"));
            let r = run(&files, &options(&out, BATCH_BYTES, threads, sorted, false));
            let case = format!("{codec} {} pages, sorted {sorted}, threads {threads}", if plain { "plain" } else { "dictionary" });
            assert_eq!(r.rows_written, 4 * 1600, "{case}");
            assert!(r.peak_memory_bytes <= bound, "{case}: accounted peak {} > bound {bound}", r.peak_memory_bytes);
            if !sorted {
                // A page read whole is accounted at its declared size (a dictionary twice: the
                // page and the values decoded from it); unsorted, the call holds 12-26 MB here
                // in all, so no reader held one. (A sort's buffers, runs and merge alone take
                // ~45-55 MB of the bound here, so this says nothing there.)
                assert!(r.peak_memory_bytes < page, "{case}: accounted peak {} reaches a whole page ({page})", r.peak_memory_bytes);
            }
        }
    }
}

/// What a merge straight from the inputs is planned on (`InputSummary::reader_bytes`, what an
/// open reader of a row group holds): a chunk that is one large page, streamed, is held
/// compressed, whole, while it is handed on in slices, so it counts at least its compressed
/// bytes; a chunk of pages of the usual size counts one such page per column. (Planned on
/// 1 MiB a column whatever the pages, pyarrow files of fat values sorted by ts were merged
/// with 20 open at once, and held 172 MiB above an idle process against the 160 MiB bound.)
#[test]
fn a_merge_from_the_inputs_is_planned_on_the_compressed_pages_its_readers_hold() {
    let dir = Scratch::new("memory-merge-estimate");
    // 4 files × 1,600 rows × ~30 KB of history: pages of the usual size (parquet-rs's 1 MiB),
    // then each file's history as one page of ~48 MB, compressed with SNAPPY.
    let (small, _) = write_unique_inputs(dir.path(), 4, 1600, 30_000);
    let (large, page) = as_large_pages(&small, dir.path(), true, Compression::SNAPPY);
    assert!(page >= 40 << 20, "the history chunk is one page of {page} bytes");
    let plan = |files: &[String]| {
        let inputs: Vec<gencompact::iceberg::input::InputFile> =
            files.iter().map(|f| gencompact::iceberg::input::InputFile::plain(f.as_str())).collect();
        gencompact::plan::build_plan(&inputs).unwrap()
    };
    let footer = |f: &String| parquet::file::reader::SerializedFileReader::new(File::open(f).unwrap()).unwrap();
    let p = plan(&large);
    for (i, f) in large.iter().enumerate() {
        let meta = parquet::file::reader::FileReader::metadata(&footer(f)).clone();
        let chunk = meta.row_group(0).column(3);
        let compressed = chunk.compressed_size() as u64;
        assert!(compressed > 4 << 20, "the page compresses to {compressed} bytes, more than four pages of the usual size");
        let estimate = p.inputs[i].reader_bytes[0];
        assert!(estimate >= compressed, "{f}: a reader planned at {estimate} bytes holds a {compressed}-byte page");
    }
    let p = plan(&small);
    for (i, f) in small.iter().enumerate() {
        let meta = parquet::file::reader::FileReader::metadata(&footer(f)).clone();
        let rg = meta.row_group(0);
        assert!(rg.column(3).uncompressed_size() > 8 << 20, "{f}: the history chunk spans many pages");
        let most: u64 = rg.columns().iter().map(|c| (1u64 << 20) + gencompact::plan::codec_state(c.compression())).sum();
        let estimate = p.inputs[i].reader_bytes[0];
        assert!(estimate <= most, "{f}: pages of the usual size planned at {estimate} bytes, more than one page a column ({most})");
    }
}

#[test]
fn inputs_of_an_older_schema_are_read_for_the_sort_keys_only_and_the_bound_holds() {
    let dir = Scratch::new("memory-evolved");
    // Three files of the older schema, one row group of ~48 MB decoded each, and one newer
    // file that adds a column: the older ones are adapted to the unified schema. Checking
    // whether the rows arrive sorted decodes their `ts` only; decoded whole, in batches sized
    // for `ts`, a batch of theirs would be a whole row group.
    let (mut files, _) = write_unique_inputs(dir.path(), 3, 2000, 24_000);
    let newer = Arc::new(Schema::new(
        schema().fields().iter().cloned().chain([Arc::new(field("region", DataType::Utf8, true, 5))]).collect::<Vec<_>>(),
    ));
    let rows = 50;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter_values(0..rows)),
        Arc::new(TimestampMicrosecondArray::from_iter_values((0..rows).map(|r| 1_600_000_000_000_000 + r as i64)).with_timezone("+00:00")),
        Arc::new(StringArray::from_iter_values((0..rows).map(|r| format!("t{}", r % 4)))),
        Arc::new(StringArray::from_iter_values((0..rows).map(|r| noise(r as u64, 2000)))),
        Arc::new(StringArray::from_iter((0..rows).map(|r| (r % 3 != 0).then_some("eu-west-1")))),
    ];
    let path = dir.path().join("in-newer.parquet");
    let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), newer.clone(), None).unwrap();
    w.write(&RecordBatch::try_new(newer, cols).unwrap()).unwrap();
    w.close().unwrap();
    files.push(path.display().to_string());
    let bound = call_bound(BATCH_BYTES) as u64;
    for threads in [1, 2] {
        let out = dir.path().join(format!("out-{threads}"));
        let r = run(&files, &options(&out, BATCH_BYTES, threads, true, false));
        assert_eq!(r.rows_written, 3 * 2000 + rows as u64);
        assert!(r.files_spilled > 0, "threads {threads}: the sort spilled");
        assert!(r.peak_memory_bytes <= bound, "threads {threads}: accounted peak {} > bound {bound}", r.peak_memory_bytes);
    }
}
