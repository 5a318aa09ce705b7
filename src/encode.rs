//! Encode: one output file's Parquet writer, whose column chunks are encoded in parallel —
//! one `ArrowColumnWriter` per leaf column, the way parquet-rs exposes its `ArrowWriter` for
//! this — on the calling thread and `threads` − 1 helper threads that live as long as the file. The writers, their settings and the order in which their
//! chunks are appended are `ArrowWriter`'s own, so the bytes are the same whatever the number
//! of threads.
//!
//! Memory: the open row group's encoded pages and dictionaries, as with `ArrowWriter`; the
//! leaf arrays of the batch being encoded (views into the batch, plus definition and
//! repetition levels).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory, ArrowWriter, ArrowWriterOptions,
};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::SchemaDescriptor;
use std::collections::VecDeque;
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

pub struct ColumnWriter {
    file: SerializedFileWriter<Sink>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
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
        let options = ArrowWriterOptions::new().with_properties(props).with_parquet_schema(parquet.clone()).with_skip_arrow_metadata(true);
        let (file, factory) = ArrowWriter::try_new_with_options(Sink(file), schema.clone(), options)?.into_serialized_writer()?;
        Ok(ColumnWriter { file, factory, schema, open: None, rows: 0, workers: Workers::start(threads.saturating_sub(1)) })
    }

    /// Appends `batch` to the open row group (opening one if needed).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let mut leaves: Vec<ArrowLeafColumn> = Vec::new();
        // Each leaf's share of its column's decoded bytes: the order in which jobs are taken.
        let mut costs: Vec<usize> = Vec::new();
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
            let before = leaves.len();
            leaves.extend(compute_leaves(field.as_ref(), column)?);
            let n = (leaves.len() - before).max(1);
            costs.extend(std::iter::repeat_n(column.get_array_memory_size() / n, leaves.len() - before));
        }
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
