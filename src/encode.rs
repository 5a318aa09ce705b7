//! Encode: one output file's Parquet writer, whose column chunks are encoded in parallel —
//! one `ArrowColumnWriter` per leaf column, the way parquet-rs exposes its `ArrowWriter` for
//! this — on up to `threads` threads. The writers, their settings and the order in which their
//! chunks are appended are `ArrowWriter`'s own, so the bytes are the same whatever the number
//! of threads.
//!
//! Memory: the open row group's encoded pages and dictionaries, as with `ArrowWriter`; the
//! leaf arrays of the batch being encoded (views into the batch, plus definition and
//! repetition levels).

use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory, ArrowWriter, ArrowWriterOptions};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::SchemaDescriptor;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub struct ColumnWriter {
    file: SerializedFileWriter<File>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// The open row group's column writers, one per leaf column.
    open: Option<Vec<ArrowColumnWriter>>,
    rows: usize,
    threads: usize,
}

impl ColumnWriter {
    /// A writer through the Parquet schema `parquet` (field ids, VARIANT, timestamps), for
    /// batches of `schema`.
    pub fn new(file: File, schema: SchemaRef, parquet: &SchemaDescriptor, props: WriterProperties, threads: usize) -> Result<Self> {
        let options = ArrowWriterOptions::new().with_properties(props).with_parquet_schema(parquet.clone()).with_skip_arrow_metadata(true);
        let (file, factory) = ArrowWriter::try_new_with_options(file, schema.clone(), options)?.into_serialized_writer()?;
        Ok(ColumnWriter { file, factory, schema, open: None, rows: 0, threads: threads.max(1) })
    }

    /// Appends `batch` to the open row group (opening one if needed).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let mut leaves: Vec<ArrowLeafColumn> = Vec::new();
        for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
            leaves.extend(compute_leaves(field.as_ref(), column)?);
        }
        let writers = match self.open.as_mut() {
            Some(w) => w,
            None => self.open.insert(self.factory.create_column_writers(self.file.flushed_row_groups().len())?),
        };
        if writers.len() != leaves.len() {
            return Err(ParquetError::General(format!("{} leaf columns for {} column writers", leaves.len(), writers.len())));
        }
        let jobs: Vec<Mutex<(&mut ArrowColumnWriter, &ArrowLeafColumn)>> = writers.iter_mut().zip(leaves.iter()).map(Mutex::new).collect();
        run(&jobs, self.threads, |(writer, leaf)| writer.write(leaf))?;
        self.rows += batch.num_rows();
        Ok(())
    }

    /// Closes the open row group: its column chunks are finished in parallel, then appended
    /// in column order.
    pub fn flush(&mut self) -> Result<()> {
        let Some(writers) = self.open.take() else { return Ok(()) };
        let jobs: Vec<Mutex<Option<ArrowColumnWriter>>> = writers.into_iter().map(|w| Mutex::new(Some(w))).collect();
        let chunks: Vec<Mutex<Option<parquet::arrow::arrow_writer::ArrowColumnChunk>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
        let indexed: Vec<Mutex<(usize, &Mutex<Option<ArrowColumnWriter>>)>> = jobs.iter().enumerate().map(Mutex::new).collect();
        run(&indexed, self.threads, |(i, job)| {
            let writer = job.lock().map_err(|_| poisoned())?.take().ok_or_else(|| ParquetError::General("column writer closed twice".into()))?;
            let chunk = writer.close()?;
            *chunks[*i].lock().map_err(|_| poisoned())? = Some(chunk);
            Ok(())
        })?;
        let mut row_group = self.file.next_row_group()?;
        for chunk in chunks {
            let chunk = chunk.into_inner().map_err(|_| poisoned())?.ok_or_else(|| ParquetError::General("column chunk missing".into()))?;
            chunk.append_to_row_group(&mut row_group)?;
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
        self.open.as_ref().map(|w| w.iter().map(|c| c.get_estimated_total_bytes()).sum()).unwrap_or(0)
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
        self.file.finish()
    }

    pub fn inner(&self) -> &File {
        self.file.inner()
    }
}

fn poisoned() -> ParquetError {
    ParquetError::General("a column encoder panicked".into())
}

/// Runs `work` on every job, on up to `threads` threads taking the next job as they finish
/// one; the first error wins. A panic in `work` propagates to the caller.
fn run<T: Send>(jobs: &[Mutex<T>], threads: usize, work: impl Fn(&mut T) -> Result<()> + Sync) -> Result<()> {
    let one = |job: &Mutex<T>| -> Result<()> {
        let mut guard = job.lock().map_err(|_| poisoned())?;
        work(&mut guard)
    };
    let threads = threads.min(jobs.len());
    if threads <= 1 {
        return jobs.iter().try_for_each(one);
    }
    let next = AtomicUsize::new(0);
    let first_error: Mutex<Option<ParquetError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                if let Err(e) = one(job) {
                    if let Ok(mut slot) = first_error.lock() {
                        slot.get_or_insert(e);
                    }
                    next.store(jobs.len(), Ordering::Relaxed);
                    break;
                }
            });
        }
    });
    match first_error.into_inner().map_err(|_| poisoned())? {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
