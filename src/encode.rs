//! Encode: one output file's Parquet writer, whose column chunks are encoded in parallel —
//! one `ArrowColumnWriter` per leaf column, the way parquet-rs exposes its `ArrowWriter` for
//! this — on the calling thread and `threads` − 1 helper threads that live as long as the file. The writers, their settings and the order in which their
//! chunks are appended are `ArrowWriter`'s own, so the bytes are the same whatever the number
//! of threads.
//!
//! A byte-array column whose values in the file's first `DISTINCT_SAMPLE` rows (its first batch,
//! or first few batches) are nearly all distinct (`DISTINCT_SHARE` of at least
//! `DISTINCT_SAMPLE` values) is written without a dictionary:
//! the writer settings ask for one where every input chunk was dictionary-encoded, and a
//! writer that checks its dictionary limit late (pyarrow: after 1,024 values) dictionary-encodes
//! small files of values unique to each row in full. Such a dictionary saves nothing, yet the
//! encoder copies and hashes every value into it, in fresh memory for every row group: with a
//! fat value per row, that was most of the call's page faults.
//!
//! Memory: the open row group's encoded pages and dictionaries, as with `ArrowWriter`; the
//! leaf arrays of the batch being encoded (views into the batch, plus definition and
//! repetition levels); once per file, a 16-byte hash per value of a byte-array column of the
//! batches that make its first `DISTINCT_SAMPLE` rows (`sample_values`).

use arrow_array::RecordBatch;
use arrow_array::{cast::AsArray, Array};
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory, ArrowWriter, ArrowWriterOptions,
};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::SchemaDescriptor;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// An output file as the writer writes it: every write goes through `testhooks::disk_room`
/// (in release builds, straight to the file).
pub struct Sink(File);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = crate::testhooks::disk_room(buf.len())?;
        self.0.write(&buf[..room])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// At least this many rows, and non-null values of a column in them, tell whether the
/// column's values repeat.
const DISTINCT_SAMPLE: usize = 64;
/// A column whose values in the file's first batches of `DISTINCT_SAMPLE` rows or more are
/// distinct in at least this share is written without a dictionary.
const DISTINCT_SHARE: f64 = 0.9;

pub struct ColumnWriter {
    file: SerializedFileWriter<Sink>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// The file's writer settings until its first `DISTINCT_SAMPLE` rows have been looked at
    /// (in one batch or several); where some columns' values turn out to be nearly all
    /// distinct there, the factory is replaced (a row group's writers are made at its first
    /// batch: the change holds from the row group that batch opens, or else the next).
    props: Option<WriterProperties>,
    /// The values of each top-level column seen until then: how many, and their hashes.
    sample: Vec<(usize, HashSet<u128>)>,
    sampled_rows: usize,
    /// Leaf columns written without a dictionary (`DISTINCT_SHARE`).
    plain: Vec<bool>,
    /// The open row group's column writers, one per leaf column (`None` while one is out
    /// with a worker).
    open: Option<Vec<Option<ArrowColumnWriter>>>,
    rows: usize,
    /// Helper threads, alive as long as the file is open (threads that come and go per batch
    /// would each take a malloc arena and keep its high-water mark).
    workers: Option<Workers>,
}

/// A unit of work for a worker, and what comes back.
enum Job {
    Write(usize, ArrowColumnWriter, ArrowLeafColumn),
    Close(usize, ArrowColumnWriter),
}

// (a writer goes to a worker and back once per column and batch: boxing it would cost an
// allocation each time for a few hundred bytes of enum)
#[allow(clippy::large_enum_variant)]
enum Done {
    Written(usize, ArrowColumnWriter, Result<()>),
    Closed(usize, Result<ArrowColumnChunk>),
    /// The job panicked (the call fails; its writer is gone).
    Panicked(String),
}

/// Runs one job, a panic included.
fn perform(job: Job) -> Done {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match job {
        Job::Write(i, mut w, leaf) => {
            let r = w.write(&leaf);
            Done::Written(i, w, r)
        }
        Job::Close(i, w) => Done::Closed(i, w.close()),
    }));
    outcome.unwrap_or_else(|p| Done::Panicked(crate::contain::panic_message(&*p)))
}

/// The jobs of one `dispatch`, costliest first, taken by the workers and the calling thread.
#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

struct Workers {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    done: Receiver<Done>,
    handles: Vec<JoinHandle<()>>,
}

impl Workers {
    fn start(n: usize) -> Option<Workers> {
        if n == 0 {
            return None;
        }
        let (done_tx, done) = channel::<Done>();
        let queue = Arc::new((Mutex::new(Queue::default()), Condvar::new()));
        let mut handles = Vec::with_capacity(n);
        for _ in 0..n {
            let (queue, tx) = (queue.clone(), done_tx.clone());
            let spawned = std::thread::Builder::new().name("gencompact-encode".into()).spawn(move || loop {
                let job = {
                    let (lock, ready) = &*queue;
                    let Ok(mut q) = lock.lock() else { return };
                    loop {
                        if let Some(job) = q.jobs.pop_front() {
                            break job;
                        }
                        if q.closed {
                            return;
                        }
                        q = match ready.wait(q) {
                            Ok(q) => q,
                            Err(_) => return,
                        };
                    }
                };
                if tx.send(perform(job)).is_err() {
                    return;
                }
            });
            match spawned {
                Ok(h) => handles.push(h),
                Err(_) => break,
            }
        }
        if handles.is_empty() {
            return None;
        }
        Some(Workers { queue, done, handles })
    }

    /// The next job not yet taken, if any.
    fn take(&self) -> Result<Option<Job>> {
        let (lock, _) = &*self.queue;
        let mut q = lock.lock().map_err(|_| ParquetError::General("encoder queue poisoned".into()))?;
        Ok(q.jobs.pop_front())
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        let (lock, ready) = &*self.queue;
        if let Ok(mut q) = lock.lock() {
            q.closed = true;
            q.jobs.clear();
        }
        ready.notify_all();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl ColumnWriter {
    /// A writer through the Parquet schema `parquet` (field ids, VARIANT, timestamps), for
    /// batches of `schema`.
    pub fn new(file: File, schema: SchemaRef, parquet: &SchemaDescriptor, props: WriterProperties, threads: usize) -> Result<Self> {
        let options =
            ArrowWriterOptions::new().with_properties(props.clone()).with_parquet_schema(parquet.clone()).with_skip_arrow_metadata(true);
        let (file, factory) = ArrowWriter::try_new_with_options(Sink(file), schema.clone(), options)?.into_serialized_writer()?;
        let plain = vec![false; parquet.num_columns()];
        let sample = vec![(0, HashSet::new()); schema.fields().len()];
        Ok(ColumnWriter {
            file,
            factory,
            schema,
            props: Some(props),
            sample,
            sampled_rows: 0,
            plain,
            open: None,
            rows: 0,
            workers: Workers::start(threads.saturating_sub(1)),
        })
    }

    /// Until the file's first `DISTINCT_SAMPLE` rows have been seen, the values of its
    /// batches are sampled; then the dictionary-encoded leaf columns (top-level byte arrays)
    /// whose values there are nearly all distinct get writers without a dictionary. (Inputs of
    /// a few fat rows each make batches of fewer rows than that: judged one batch at a time,
    /// such a file kept a dictionary of every value of every row group.)
    fn drop_useless_dictionaries(&mut self, batch: &RecordBatch, leaf_of: &[Option<usize>]) -> Result<()> {
        if self.props.is_none() {
            return Ok(());
        }
        for ((column, leaf), (n, seen)) in batch.columns().iter().zip(leaf_of).zip(self.sample.iter_mut()) {
            if leaf.is_some() {
                sample_values(column.as_ref(), n, seen);
            }
        }
        self.sampled_rows += batch.num_rows();
        if self.sampled_rows < DISTINCT_SAMPLE {
            return Ok(());
        }
        let Some(props) = self.props.take() else { return Ok(()) };
        let sample = std::mem::take(&mut self.sample);
        let parquet = self.file.schema_descr();
        let mut b = None;
        for (leaf, (n, seen)) in leaf_of.iter().zip(&sample) {
            let Some(leaf) = leaf.filter(|&l| l < parquet.num_columns() && l < self.plain.len()) else { continue };
            let path = parquet.column(leaf).path().clone();
            if props.dictionary_enabled(&path) && *n >= DISTINCT_SAMPLE && seen.len() as f64 >= DISTINCT_SHARE * *n as f64 {
                self.plain[leaf] = true;
                b = Some(b.unwrap_or_else(|| props.clone().into_builder()).set_column_dictionary_enabled(path, false));
            }
        }
        if let Some(b) = b {
            // A factory takes its settings from a file writer: this one writes nowhere and is
            // only asked for them; the column chunks it makes go into this file's row groups.
            let settings = SerializedFileWriter::new(std::io::sink(), parquet.root_schema_ptr(), Arc::new(b.build()))?;
            self.factory = ArrowRowGroupWriterFactory::new(&settings, self.schema.clone());
        }
        Ok(())
    }

    /// Leaf columns this file writes without a dictionary because their values are nearly all
    /// distinct.
    pub fn plain_leaves(&self) -> &[bool] {
        &self.plain
    }

    /// Appends `batch` to the open row group (opening one if needed).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let mut leaves: Vec<ArrowLeafColumn> = Vec::new();
        // Each leaf's share of its column's decoded bytes: the order in which jobs are taken.
        let mut costs: Vec<usize> = Vec::new();
        // The leaf of each top-level column that is one leaf.
        let mut leaf_of: Vec<Option<usize>> = Vec::new();
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
            let before = leaves.len();
            leaves.extend(compute_leaves(field.as_ref(), column)?);
            let n = (leaves.len() - before).max(1);
            costs.extend(std::iter::repeat_n(column.get_array_memory_size() / n, leaves.len() - before));
            leaf_of.push((leaves.len() == before + 1).then_some(before));
        }
        self.drop_useless_dictionaries(batch, &leaf_of)?;
        if self.open.is_none() {
            let writers = self.factory.create_column_writers(self.file.flushed_row_groups().len())?;
            self.open = Some(writers.into_iter().map(Some).collect());
        }
        let writers = self.open.as_mut().ok_or_else(|| ParquetError::General("no open row group".into()))?;
        if writers.len() != leaves.len() {
            return Err(ParquetError::General(format!("{} leaf columns for {} column writers", leaves.len(), writers.len())));
        }
        let mut jobs = Vec::with_capacity(leaves.len());
        for (i, leaf) in leaves.into_iter().enumerate() {
            let w = writers[i].take().ok_or_else(|| ParquetError::General("column writer missing".into()))?;
            jobs.push((costs.get(i).copied().unwrap_or(0), Job::Write(i, w, leaf)));
        }
        for done in dispatch(self.workers.as_ref(), jobs)? {
            match done {
                Done::Written(i, w, result) => {
                    writers[i] = Some(w);
                    result?;
                }
                Done::Closed(..) | Done::Panicked(_) => return Err(ParquetError::General("unexpected encoder result".into())),
            }
        }
        self.rows += batch.num_rows();
        Ok(())
    }

    /// Closes the open row group: its column chunks are finished in parallel, then appended
    /// in column order.
    pub fn flush(&mut self) -> Result<()> {
        let Some(writers) = self.open.take() else { return Ok(()) };
        let mut jobs = Vec::with_capacity(writers.len());
        for (i, w) in writers.into_iter().enumerate() {
            let w = w.ok_or_else(|| ParquetError::General("column writer missing".into()))?;
            jobs.push((w.get_estimated_total_bytes(), Job::Close(i, w)));
        }
        let n = jobs.len();
        let mut chunks: Vec<Option<ArrowColumnChunk>> = (0..n).map(|_| None).collect();
        for done in dispatch(self.workers.as_ref(), jobs)? {
            match done {
                Done::Closed(i, chunk) => {
                    if let Some(slot) = chunks.get_mut(i) {
                        *slot = Some(chunk?);
                    }
                }
                Done::Written(..) | Done::Panicked(_) => return Err(ParquetError::General("unexpected encoder result".into())),
            }
        }
        let mut row_group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk.ok_or_else(|| ParquetError::General("column chunk missing".into()))?.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        self.rows = 0;
        Ok(())
    }

    /// Bytes handed to the file so far (some may still sit in its 8 KiB write buffer).
    pub fn bytes_written(&self) -> usize {
        self.file.bytes_written()
    }

    /// Anticipated encoded size of the open row group.
    pub fn in_progress_size(&self) -> usize {
        self.open.as_ref().map(|w| w.iter().flatten().map(|c| c.get_estimated_total_bytes()).sum()).unwrap_or(0)
    }

    /// Memory the open row group's column writers hold: encoded pages, dictionaries, the page
    /// being built.
    pub fn memory_size(&self) -> usize {
        self.open.as_ref().map(|w| w.iter().flatten().map(|c| c.memory_size()).sum()).unwrap_or(0)
    }

    pub fn in_progress_rows(&self) -> usize {
        self.rows
    }

    pub fn flushed_row_groups(&self) -> &[RowGroupMetaData] {
        self.file.flushed_row_groups()
    }

    /// Flushes the open row group and writes the footer.
    pub fn finish(&mut self) -> Result<ParquetMetaData> {
        self.flush()?;
        self.workers = None;
        self.file.finish()
    }

    pub fn inner(&self) -> &File {
        &self.file.inner().0
    }
}

/// Runs `jobs` (each with its expected cost) and returns every result: the costliest first,
/// each taken by whichever thread is free next — the workers and the calling thread alike —
/// so that one fat column does not leave the other threads idle at the end. Which thread
/// encodes a column does not change its bytes.
fn dispatch(workers: Option<&Workers>, mut jobs: Vec<(usize, Job)>) -> Result<Vec<Done>> {
    let run = perform;
    let Some(workers) = workers.filter(|_| jobs.len() > 1) else {
        return no_panic(jobs.into_iter().map(|(_, j)| run(j)).collect());
    };
    jobs.sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
    let total = jobs.len();
    {
        let (lock, ready) = &*workers.queue;
        let mut q = lock.lock().map_err(|_| ParquetError::General("encoder queue poisoned".into()))?;
        q.jobs.extend(jobs.into_iter().map(|(_, job)| job));
        ready.notify_all();
    }
    let mut out: Vec<Done> = Vec::with_capacity(total);
    while let Some(job) = workers.take()? {
        out.push(run(job));
    }
    while out.len() < total {
        out.push(workers.done.recv().map_err(|_| ParquetError::General("encoder thread gone".into()))?);
    }
    no_panic(out)
}

fn no_panic(out: Vec<Done>) -> Result<Vec<Done>> {
    if let Some(Done::Panicked(msg)) = out.iter().find(|d| matches!(d, Done::Panicked(_))) {
        return Err(ParquetError::General(format!("column encoder panicked: {msg}")));
    }
    Ok(out)
}

/// Adds the hashes of `column`'s non-null values to `seen` and counts them in `n`, where it is
/// a byte-array column (of any Arrow layout, dictionary-encoded or not).
fn sample_values(column: &dyn Array, n: &mut usize, seen: &mut HashSet<u128>) {
    if let Some(d) = column.as_any_dictionary_opt() {
        let Some(value) = crate::digest::byte_values(d.values().as_ref()) else { return };
        // (a batch whose rows of the column are all null may come with no values: arrow's
        // `normalized_keys` asserts there)
        let keys = crate::dictionary::dictionary_keys(d);
        // Each referenced value is hashed once, however many rows name it.
        let mut hashes: HashMap<usize, u128> = HashMap::new();
        for (i, &k) in keys.iter().enumerate() {
            if d.keys().is_valid(i) && d.values().is_valid(k) {
                *n += 1;
                seen.insert(*hashes.entry(k).or_insert_with(|| crate::digest::hash_bytes(value(k))));
            }
        }
    } else {
        let Some(value) = crate::digest::byte_values(column) else { return };
        for i in (0..column.len()).filter(|&i| column.is_valid(i)) {
            *n += 1;
            seen.insert(crate::digest::hash_bytes(value(i)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, DictionaryArray, Int32Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowSchemaConverter;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// The dictionary page of each column of row group `rg` (whether it has one).
    fn dictionaries(path: &std::path::Path, rg: usize) -> Vec<bool> {
        let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        reader.metadata().row_group(rg).columns().iter().map(|c| c.dictionary_page_offset().is_some()).collect()
    }

    #[test]
    fn columns_of_distinct_values_are_written_without_a_dictionary_repeated_ones_keep_it() {
        let dir = std::env::temp_dir().join(format!("gencompact-encode-distinct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.parquet");
        let n = 200;
        let schema = Arc::new(Schema::new(vec![
            Field::new("unique", DataType::Utf8, true),
            Field::new("repeated", DataType::Utf8, true),
            Field::new("unique_dict", DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), true),
            Field::new("few", DataType::Utf8, true),
        ]));
        let parquet = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let props = WriterProperties::builder().set_dictionary_enabled(true).set_max_row_group_row_count(Some(n)).build();
        let mut w = ColumnWriter::new(File::create(&path).unwrap(), schema.clone(), &parquet, props, 2).unwrap();
        let batch = |first: usize| {
            let unique: ArrayRef = Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("value {}", first + i))));
            let repeated: ArrayRef = Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("value {}", i % 30))));
            let keys = Int32Array::from_iter_values(0..n as i32);
            let unique_dict: ArrayRef = Arc::new(DictionaryArray::new(keys, unique.clone()));
            // Distinct, but too few non-null values to tell.
            let few: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|i| (i < 10).then(|| format!("v{}", first + i)))));
            RecordBatch::try_new(schema.clone(), vec![unique, repeated, unique_dict, few]).unwrap()
        };
        // A first batch too small to decide on; with the next one the sample is large enough,
        // but its row group's writers were made at the first, with their dictionaries.
        w.write(&batch(n).slice(0, DISTINCT_SAMPLE - 1)).unwrap();
        let batch = batch(0);
        w.write(&batch).unwrap();
        w.flush().unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        assert_eq!(w.plain_leaves(), &[true, false, true, false]);
        assert_eq!(dictionaries(&path, 0), vec![true, true, true, true]);
        assert_eq!(dictionaries(&path, 1), vec![false, true, false, true]);
        // Read back by parquet-rs's own reader, the values are the batches written.
        let mut rows = 0;
        for b in
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap().build().unwrap()
        {
            rows += b.unwrap().num_rows();
        }
        assert_eq!(rows, DISTINCT_SAMPLE - 1 + 2 * n);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_dictionary_column_all_null_with_no_values_is_sampled_and_written() {
        // An all-null stretch of a dictionary column (a row group whose chunk is all null, a
        // sorted batch of its null rows) comes as a dictionary with no values at all: sampling
        // it tripped arrow's assertion in `normalized_keys` (issue 50: ERR_INTERNAL).
        let dir = std::env::temp_dir().join(format!("gencompact-encode-empty-dict-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.parquet");
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::LargeUtf8));
        let schema = Arc::new(Schema::new(vec![Field::new("cat", dict, true)]));
        let parquet = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let props = WriterProperties::builder().set_dictionary_enabled(true).build();
        let mut w = ColumnWriter::new(File::create(&path).unwrap(), schema.clone(), &parquet, props, 1).unwrap();
        let empty = arrow_array::LargeStringArray::from(Vec::<&str>::new());
        let nulls: ArrayRef = Arc::new(DictionaryArray::new(Int32Array::from(vec![None::<i32>; 5]), Arc::new(empty)));
        let some = arrow_array::LargeStringArray::from(vec!["a", "b"]);
        let values: ArrayRef = Arc::new(DictionaryArray::new(Int32Array::from(vec![Some(1), None, Some(0)]), Arc::new(some)));
        w.write(&RecordBatch::try_new(schema.clone(), vec![nulls]).unwrap()).unwrap();
        w.write(&RecordBatch::try_new(schema.clone(), vec![values]).unwrap()).unwrap();
        w.finish().unwrap();
        // parquet-rs's own reader: the five nulls, then b, null, a
        let mut read: Vec<Option<String>> = Vec::new();
        for b in
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap().build().unwrap()
        {
            let b = b.unwrap();
            read.extend(b.column(0).as_string::<i32>().iter().map(|v| v.map(str::to_string)));
        }
        let mut expected = vec![None; 5];
        expected.extend([Some("b".to_string()), None, Some("a".to_string())]);
        assert_eq!(read, expected);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn batches_each_too_small_to_decide_on_are_judged_together() {
        // Inputs of a few fat rows each: every batch holds fewer than `DISTINCT_SAMPLE` rows.
        let dir = std::env::temp_dir().join(format!("gencompact-encode-small-batches-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.parquet");
        let schema = Arc::new(Schema::new(vec![Field::new("unique", DataType::Utf8, true), Field::new("repeated", DataType::Utf8, true)]));
        let parquet = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let props = WriterProperties::builder().set_dictionary_enabled(true).build();
        let mut w = ColumnWriter::new(File::create(&path).unwrap(), schema.clone(), &parquet, props, 1).unwrap();
        let rows = 36;
        let batch = |b: usize| {
            let unique: ArrayRef = Arc::new(StringArray::from_iter_values((0..rows).map(|i| format!("value {b} {i}"))));
            let repeated: ArrayRef = Arc::new(StringArray::from_iter_values((0..rows).map(|i| format!("value {}", i % 3))));
            RecordBatch::try_new(schema.clone(), vec![unique, repeated]).unwrap()
        };
        w.write(&batch(0)).unwrap();
        assert_eq!(w.plain_leaves(), &[false, false], "decided on {rows} rows");
        w.write(&batch(1)).unwrap();
        assert_eq!(w.plain_leaves(), &[true, false]);
        w.flush().unwrap();
        for b in 2..5 {
            w.write(&batch(b)).unwrap();
        }
        w.finish().unwrap();
        assert_eq!(dictionaries(&path, 0), vec![true, true]);
        assert_eq!(dictionaries(&path, 1), vec![false, true]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
