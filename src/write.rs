//! Write: stream batches into one open output file at a time, through the inputs' own
//! Parquet schema, closing row groups on the heap bound and files on bytes actually written.
//!
//! Memory bound: the open row group's encoded pages and dictionaries, which hold at most
//! `batchRows` rows / `batchBytes` decoded bytes of input (a row group closes at either cap),
//! plus the footer metadata of the open file, kept small by truncated statistics. Only one
//! file is open at a time.

use crate::batch::Batch;
use crate::dirs::{sync_dir, CreatedDirs};
use crate::encode::ColumnWriter;
use crate::error::{parquet_io_error, CompactError, Result};
use crate::memory::Reservation;
use crate::options::Options;
use crate::plan::Plan;
use crate::report::{file_report, FileReport};
use crate::testhooks;
use crate::transaction::Transaction;
use arrow_array::RecordBatch;
use parquet::basic::Compression;
use parquet::errors::ParquetError;
use parquet::file::metadata::SortingColumn;
use parquet::file::metadata::{FileMetaData, ParquetMetaData, RowGroupMetaData};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Footer bytes per row group and leaf column before any file has been measured.
const PRIOR_FOOTER_PER_LEAF: f64 = 220.0;

/// Statistics values (min/max) are cut to this many bytes, in the footer and page indexes.
const STATS_TRUNCATE_BYTES: usize = 64;

/// A finished output file, still under its temporary name.
pub struct WrittenFile {
    pub tmp_path: PathBuf,
    pub final_path: PathBuf,
    /// What the call reports about the file (derived from its footer when it closed).
    pub report: FileReport,
    pub size: u64,
    pub rows: u64,
}

/// Every path this call created. Unless `commit` is called, dropping it (on error, abort or
/// panic) removes them all, published or not.
pub struct Outputs {
    dir: PathBuf,
    prefix: String,
    next_index: usize,
    /// The files created (and their final names), removed unless the call commits.
    tx: Transaction,
    /// Directories this call created for outDir, deepest first (removed again on failure
    /// when empty).
    created_dirs: CreatedDirs,
}

impl Outputs {
    pub fn new(dir: &Path, prefix: &str) -> Result<Self> {
        let created_dirs = CreatedDirs::create(dir, "outDir")?;
        Ok(Outputs { dir: dir.to_path_buf(), prefix: prefix.to_string(), next_index: 0, tx: Transaction::default(), created_dirs })
    }

    /// Creates the next `<prefix>-<n>.parquet.tmp` exclusively (never through an existing path).
    fn create_next(&mut self) -> Result<(File, PathBuf, PathBuf)> {
        let final_path = self.dir.join(format!("{}-{:05}.parquet", self.prefix, self.next_index));
        let mut tmp_path = self.dir.join(format!("{}-{:05}.parquet.tmp", self.prefix, self.next_index));
        self.next_index += 1;
        if final_path.exists() {
            return Err(CompactError::io_msg(&final_path, "output file already exists"));
        }
        if testhooks::disabled("tmp-names") {
            tmp_path = final_path.clone();
        }
        let file = self.tx.create(&tmp_path, !testhooks::disabled("exclusive"))?;
        Ok((file, tmp_path, final_path))
    }

    /// Gives every file its final name (never replacing an existing file), then syncs the
    /// directory. On failure the files published so far are removed again by `Drop`.
    pub fn publish(&mut self, files: &[WrittenFile]) -> Result<()> {
        for f in files {
            if f.tmp_path == f.final_path {
                continue; // (test-only: written under its final name)
            }
            self.tx.link(&f.tmp_path, &f.final_path)?;
            testhooks::pause("publish");
        }
        for f in files {
            if f.tmp_path != f.final_path {
                self.tx.remove_tmp(&f.tmp_path)?;
            }
        }
        sync_dir(&self.dir)
    }

    pub fn commit(mut self) {
        self.tx.commit();
    }

    /// A path this call created under outDir besides its data files (a kept file's link),
    /// removed with them unless the call commits.
    pub fn adopt(&mut self, path: PathBuf) {
        self.tx.adopt(path);
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        // (files first, then the directories they were in)
        self.tx.roll_back();
        if !self.tx.committed() && !testhooks::disabled("cleanup") {
            self.created_dirs.remove_empty();
        }
    }
}

struct OpenFile {
    writer: ColumnWriter,
    tmp_path: PathBuf,
    final_path: PathBuf,
    rows: u64,
    rg_rows: usize,
    rg_bytes: usize,
    /// Flushed row groups already handed to the verifier.
    sent: usize,
    /// The call's accounting of the open row group's encoders (`ColumnWriter::memory_size`).
    /// Only accounted: a row group is cut on its rows alone, so that the output bytes do not
    /// depend on what the call's other threads hold at the moment.
    memory: Reservation,
}

/// What the writer hands a verifier running beside it (see `notify_closed`).
pub enum Written {
    /// A flushed row group whose bytes have reached the file: its metadata (the file's schema
    /// and this one row group), to be decoded from disk while later data is encoded.
    RowGroup { path: PathBuf, meta: Arc<ParquetMetaData> },
    /// The file closed with `rows` rows in `row_groups` row groups.
    Closed { path: PathBuf, rows: u64, row_groups: usize },
}

/// Bytes the writer may still hold in its buffer after they were counted as written
/// (parquet-rs writes through a `BufWriter` of the default 8 KiB).
const WRITE_BUFFER: u64 = 8 << 10;

/// Writes batches into files of near-equal size close to `targetFileBytes`.
pub struct RollingWriter<'a> {
    plan: &'a Plan,
    opts: &'a Options,
    props: WriterProperties,
    outputs: &'a mut Outputs,
    current: Option<OpenFile>,
    done: Vec<WrittenFile>,
    /// Input bytes this writer receives in all, and those whose rows it has written.
    total_in: f64,
    consumed_in: f64,
    closed_bytes: u64,
    calibration: Calibration,
    /// Told of every row group once its bytes are in the file, and of every file as it closes,
    /// to verify them while later data is written.
    on_close: Option<std::sync::mpsc::Sender<Written>>,
    pub rows_written: u64,
}

/// The writer's estimate of an open row group counts pages not yet compressed and
/// dictionaries at full size; each flush measures how that estimate compares with the bytes
/// that actually landed, and open row groups are then sized with the measured factor.
#[derive(Default, Clone)]
pub struct Calibration {
    estimated: f64,
    actual: f64,
    row_groups: usize,
    footer_bytes: f64,
    footer_row_groups: usize,
    /// Until an output file has closed: its footer estimated as a fixed part plus a part per
    /// row group (`for_inputs`), instead of the measured average per row group.
    footer_prior: Option<(f64, f64)>,
}

impl Calibration {
    /// Before any output file has closed, its footer is estimated from what it will hold: the
    /// key-value metadata and schema once, and per row group and leaf column the chunk metadata,
    /// truncated statistics and page indexes (about 220 bytes, as measured on small and wide
    /// outputs alike), so even the first file of a call stays near a small target.
    pub fn for_inputs(plan: &Plan) -> Self {
        let leaves = plan.parquet_schema.num_columns() as f64;
        let key_value: usize = plan.key_value.iter().map(|kv| kv.key.len() + kv.value.as_ref().map_or(0, String::len) + 8).sum();
        let fixed = key_value as f64 + 40.0 * leaves + 200.0;
        Calibration { footer_prior: Some((fixed, PRIOR_FOOTER_PER_LEAF * leaves)), ..Calibration::default() }
    }

    /// The footer a file of `row_groups` row groups will get.
    fn footer(&self, row_groups: usize) -> f64 {
        match self.footer_prior {
            Some((fixed, per_row_group)) => fixed + per_row_group * row_groups as f64,
            None => self.footer_per_row_group() * row_groups as f64,
        }
    }

    fn footer_per_row_group(&self) -> f64 {
        if self.footer_row_groups > 0 {
            self.footer_bytes / self.footer_row_groups as f64
        } else {
            0.0
        }
    }

    fn factor(&self) -> f64 {
        if self.estimated > 0.0 {
            (self.actual / self.estimated).clamp(0.001, 1.0e3)
        } else {
            1.0
        }
    }
}

impl<'a> RollingWriter<'a> {
    /// `input_bytes`: the compressed input bytes whose rows this writer will receive.
    /// `calibration`: what earlier writers of the call measured (`Calibration::default()` first).
    pub fn new(
        plan: &'a Plan,
        opts: &'a Options,
        props: WriterProperties,
        outputs: &'a mut Outputs,
        input_bytes: f64,
        calibration: Calibration,
    ) -> Self {
        RollingWriter {
            plan,
            opts,
            props,
            outputs,
            total_in: input_bytes,
            current: None,
            done: Vec::new(),
            consumed_in: 0.0,
            closed_bytes: 0,
            calibration,
            on_close: None,
            rows_written: 0,
        }
    }

    /// Sends each flushed row group (once its bytes are in the file) and each closed file to `tx`.
    pub fn notify_closed(&mut self, tx: std::sync::mpsc::Sender<Written>) {
        self.on_close = Some(tx);
    }

    /// Hands the verifier the flushed row groups of the open file whose bytes have left the
    /// writer's buffer.
    fn send_flushed(&mut self) {
        let (Some(tx), Some(cur)) = (&self.on_close, self.current.as_mut()) else { return };
        let written = cur.writer.bytes_written() as u64;
        while let Some(rg) = cur.writer.flushed_row_groups().get(cur.sent) {
            let end = rg.columns().iter().map(|c| c.byte_range()).map(|(start, len)| start + len).max().unwrap_or(0);
            if end + WRITE_BUFFER > written {
                break;
            }
            let _ = tx.send(Written::RowGroup { path: cur.tmp_path.clone(), meta: row_group_metadata(self.plan, rg.clone()) });
            cur.sent += 1;
        }
    }

    pub fn files_written(&self) -> usize {
        self.done.len()
    }

    /// Bytes of closed files plus the open file's written bytes and open row group.
    pub fn bytes_written(&self) -> u64 {
        self.closed_bytes + self.current.as_ref().map(|c| self.current_size(&c.writer) as u64).unwrap_or(0)
    }

    /// Writes a batch, cutting it where the open file reaches its planned share.
    pub fn write(&mut self, batch: Batch) -> Result<()> {
        let Batch { batch, decoded_bytes, input_bytes, .. } = batch;
        // Row groups are cut on the rows' size with dictionaries expanded (see `plain_size`).
        let decoded_bytes = if self.plan.dictionary_columns.is_empty() { decoded_bytes } else { crate::dictionary::plain_size(&batch) };
        let rows = batch.num_rows();
        let (decoded_per_row, input_per_row) = (decoded_bytes as f64 / rows.max(1) as f64, input_bytes / rows.max(1) as f64);
        let mut offset = 0;
        let mut force_progress = false;
        while offset < rows {
            if self.current.is_none() {
                self.current = Some(self.open()?);
            }
            let left = rows - offset;
            let out_per_row = input_per_row * self.ratio().unwrap_or(1.0);
            let mut take = match self.share() {
                Some(share) if out_per_row > 0.0 => {
                    let room = share - self.open_size();
                    ((room / out_per_row).round().max(0.0) as usize).min(left)
                }
                _ => left,
            };
            // Until this writer has flushed a row group, the ratio of output to input bytes is
            // a guess (rows that compress a hundredfold, or a dictionary repeated in every row
            // group, make the input a poor guide): write one row group at a time, so that the
            // first file is cut on bytes really written like the others.
            if self.done.is_empty() && self.current.as_ref().is_some_and(|c| c.writer.flushed_row_groups().is_empty()) {
                // (an open row group without room for one more row is flushed first, so that
                // the rows taken here go into one row group)
                if let Some(cur) = self.current.as_mut() {
                    if cur.rg_rows > 0 && cur.rg_bytes as f64 + decoded_per_row > self.opts.batch_bytes as f64 {
                        flush_row_group(cur, &mut self.calibration)?;
                    }
                }
                take = take.min(self.row_group_room(decoded_per_row).min(left));
            }
            // A file gets at least one row: one whose footer alone passes a tiny target would
            // otherwise be closed empty, again and again.
            if force_progress || self.current.as_ref().is_some_and(|c| c.rows == 0 && c.rg_rows == 0) {
                take = take.max(1);
                force_progress = false;
            }
            if take > 0 {
                let decoded = (decoded_per_row * take as f64).round() as usize;
                self.write_rows(&batch.slice(offset, take), decoded, input_per_row * take as f64)?;
                offset += take;
            }
            if take < left {
                // The planned cut: decide on bytes actually written. If the file turns out to
                // have room after all, at least one more row goes in before deciding again.
                force_progress = !self.close_if_full(out_per_row)?;
            }
        }
        Ok(())
    }

    /// Rows of `decoded_per_row` bytes that fit the open row group (at least one).
    fn row_group_room(&self, decoded_per_row: f64) -> usize {
        let Some(cur) = self.current.as_ref() else { return 1 };
        let by_rows = self.opts.batch_rows.saturating_sub(cur.rg_rows);
        let by_bytes = if decoded_per_row > 0.0 {
            (self.opts.batch_bytes.saturating_sub(cur.rg_bytes) as f64 / decoded_per_row).floor() as usize
        } else {
            usize::MAX
        };
        by_rows.min(by_bytes).max(1)
    }

    /// Appends rows to the open file, closing row groups at `batchRows` rows or `batchBytes`
    /// decoded bytes.
    fn write_rows(&mut self, rows: &RecordBatch, decoded_bytes: usize, input_bytes: f64) -> Result<()> {
        let (batch_rows, batch_bytes) = (self.opts.batch_rows, self.opts.batch_bytes);
        let n = rows.num_rows();
        let cur = self.current.as_mut().ok_or_else(|| CompactError::Internal("no open file".into()))?;
        let per_row = decoded_bytes as f64 / n.max(1) as f64;
        let mut offset = 0;
        while offset < n {
            // The open row group is filled to its cap, the rest of the rows start the next:
            // a row group only as large as the batches that fit it whole was half its cap with
            // batches of half of it, and every row group costs its own dictionaries, codecs
            // and footer entry.
            let room = if per_row > 0.0 { ((batch_bytes.saturating_sub(cur.rg_bytes)) as f64 / per_row).floor() as usize } else { n };
            let take = (batch_rows - cur.rg_rows).min(n - offset).min(room.max(usize::from(cur.rg_rows == 0)));
            if take == 0 {
                flush_row_group(cur, &mut self.calibration)?;
                continue;
            }
            cur.writer.write(&rows.slice(offset, take)).map_err(|e| write_error(&cur.tmp_path, e))?;
            cur.memory.resize(cur.writer.memory_size());
            cur.rg_rows += take;
            cur.rg_bytes += (per_row * take as f64).round() as usize;
            offset += take;
            if cur.rg_rows >= batch_rows || cur.rg_bytes >= batch_bytes {
                flush_row_group(cur, &mut self.calibration)?;
            }
        }
        cur.rows += n as u64;
        self.rows_written += n as u64;
        self.consumed_in += input_bytes;
        self.send_flushed();
        Ok(())
    }

    /// Flushes the open row group and closes the file if its actual size is at its share
    /// (nearer to it than one more row would bring it). Returns whether it closed.
    fn close_if_full(&mut self, out_per_row: f64) -> Result<bool> {
        if let Some(cur) = self.current.as_mut() {
            if cur.rg_rows > 0 {
                flush_row_group(cur, &mut self.calibration)?;
            }
        }
        self.send_flushed();
        let rows = self.current.as_ref().map_or(0, |c| c.rows);
        let full = crate::sizing::full(self.open_size(), rows, out_per_row, self.share());
        if full {
            self.close_current()?;
        }
        Ok(full)
    }

    /// Output bytes per input byte so far.
    fn ratio(&self) -> Option<f64> {
        (self.consumed_in > 0.0).then(|| (self.closed_bytes as f64 + self.open_size()) / self.consumed_in)
    }

    fn open_size(&self) -> f64 {
        self.current.as_ref().map(|c| self.current_size(&c.writer)).unwrap_or(0.0)
    }

    /// Where the open file should end, in bytes, if before the input does (`sizing::share`).
    fn share(&self) -> Option<f64> {
        // Before anything was written, assume output bytes ≈ input bytes.
        let ratio = self.ratio().unwrap_or(1.0);
        let remaining_in = (self.total_in - self.consumed_in).max(0.0);
        crate::sizing::share(self.open_size(), remaining_in * ratio, self.opts.target_file_bytes as f64, self.row_group_bytes())
    }

    /// Average bytes of the row groups flushed so far (the open row group's calibrated size
    /// before the first flush).
    fn row_group_bytes(&self) -> f64 {
        if self.calibration.row_groups > 0 {
            self.calibration.actual / self.calibration.row_groups as f64
        } else {
            self.current.as_ref().map(|c| c.writer.in_progress_size() as f64).unwrap_or(0.0)
        }
    }

    /// Bytes actually written to the open file plus its open row group, as calibrated.
    /// Includes the footer the file will get, estimated per row group from closed files.
    fn current_size(&self, writer: &ColumnWriter) -> f64 {
        let row_groups = writer.flushed_row_groups().len() + usize::from(writer.in_progress_rows() > 0);
        writer.bytes_written() as f64 + writer.in_progress_size() as f64 * self.calibration.factor() + self.calibration.footer(row_groups)
    }

    fn open(&mut self) -> Result<OpenFile> {
        let (file, tmp_path, final_path) = self.outputs.create_next()?;
        let writer = open_writer(file, self.plan, self.props.clone(), &tmp_path, self.opts.threads)?;
        Ok(OpenFile { writer, tmp_path, final_path, rows: 0, rg_rows: 0, rg_bytes: 0, sent: 0, memory: self.plan.memory.reservation() })
    }

    fn close_current(&mut self) -> Result<()> {
        let Some(mut cur) = self.current.take() else { return Ok(()) };
        flush_row_group(&mut cur, &mut self.calibration)?;
        let data_end = cur.writer.bytes_written();
        let metadata = cur.writer.finish().map_err(|e| write_error(&cur.tmp_path, e))?;
        cur.writer.inner().sync_all().map_err(|e| CompactError::io(&cur.tmp_path, &e))?;
        let size = cur.writer.bytes_written() as u64;
        self.calibration.footer_prior = None;
        self.calibration.footer_bytes += size.saturating_sub(data_end as u64) as f64;
        self.calibration.footer_row_groups += metadata.num_row_groups();
        drop(cur.writer);
        self.closed_bytes += size;
        let report = file_report(&cur.final_path, size, cur.rows, &metadata);
        if let Some(tx) = &self.on_close {
            // The rest of the row groups are in the file now. (A verifier that stopped has its
            // error waiting at its join.)
            for rg in metadata.row_groups().iter().skip(cur.sent) {
                let _ = tx.send(Written::RowGroup { path: cur.tmp_path.clone(), meta: row_group_metadata(self.plan, rg.clone()) });
            }
            let _ = tx.send(Written::Closed { path: cur.tmp_path.clone(), rows: cur.rows, row_groups: metadata.num_row_groups() });
        }
        drop(metadata);
        self.done.push(WrittenFile { tmp_path: cur.tmp_path, final_path: cur.final_path, report, size, rows: cur.rows });
        testhooks::pause("between-files");
        Ok(())
    }

    /// Closes the open file and returns every file written, and the calibration for the
    /// next writer of the call.
    pub fn finish(mut self) -> Result<(Vec<WrittenFile>, Calibration)> {
        self.close_current()?;
        Ok((self.done, self.calibration))
    }
}

/// Metadata for reading one row group of an output: the outputs' schema and that row group.
fn row_group_metadata(plan: &Plan, rg: RowGroupMetaData) -> Arc<ParquetMetaData> {
    let file = FileMetaData::new(1, rg.num_rows(), None, None, plan.parquet_schema.clone(), None);
    Arc::new(ParquetMetaData::new(file, vec![rg]))
}

/// A Parquet writer through the inputs' own Parquet schema (field ids, VARIANT, timestamps).
/// Its column chunks are encoded on up to `threads` threads (`encode`).
pub(crate) fn open_writer(file: File, plan: &Plan, props: WriterProperties, path: &Path, threads: usize) -> Result<ColumnWriter> {
    ColumnWriter::new(file, plan.arrow_schema.clone(), &plan.parquet_schema, props, threads).map_err(|e| write_error(path, e))
}

fn flush_row_group(cur: &mut OpenFile, calibration: &mut Calibration) -> Result<()> {
    if cur.rg_rows == 0 {
        return Ok(());
    }
    let (estimate, before) = (cur.writer.in_progress_size(), cur.writer.bytes_written());
    cur.writer.flush().map_err(|e| write_error(&cur.tmp_path, e))?;
    calibration.estimated += estimate as f64;
    calibration.actual += cur.writer.bytes_written().saturating_sub(before) as f64;
    calibration.row_groups += 1;
    testhooks::pause("row-group");
    cur.rg_rows = 0;
    cur.rg_bytes = 0;
    cur.memory.resize(cur.writer.memory_size());
    Ok(())
}

pub(crate) fn write_error(path: &Path, e: ParquetError) -> CompactError {
    match parquet_io_error(&e) {
        Some(io) => CompactError::io(path, io),
        None => CompactError::Internal(format!("writing {}: {e}", path.display())),
    }
}

/// The dictionary page limit of a column some input let fall back to plain (parquet-rs's and
/// Arrow C++'s default).
const FALLBACK_DICTIONARY_LIMIT: usize = 1 << 20;
/// The data page limit of a fat column (`Plan::fat_leaves`; parquet-rs's default elsewhere,
/// 1 MiB). A page comes out at the limit or a few values above it, and is compressed on its
/// own: the more of a column's values a page holds, the more of what they repeat from one
/// another its compression finds (text replayed from rows a few dozen rows back, as output
/// sorted by time has it). Larger pages would find more still, but their buffers, uncompressed,
/// grow past 2 MiB while encoded, which the allocator serves less well beside a merge's: more
/// page faults than time saved where the sort key is unrelated to arrival (bench/HISTORY.md).
const FAT_PAGE_BYTES: usize = 3 << 19;
/// At most this many fat columns get `FAT_PAGE_BYTES`; where there are more, all keep the
/// default: their page buffers are encoded at once, and seven columns of 1.5 MiB pages took the
/// kernel's share of a sort's CPU from 14.5 % to 18 % (bench/HISTORY.md).
const FAT_PAGE_COLUMNS: usize = 2;

/// Writer settings: the requested codec; dictionary encoding where any input used it — with a
/// dictionary limit as large as a row group may be where every input dictionary-encoded every
/// page (fat repeated values then never fall back to plain), else parquet-rs's default limit,
/// so that values unique to each row, which an input's writer already let fall back to plain,
/// do not build a dictionary as large as the row group (a copy of every value, held until
/// the row group closes); larger data pages for fat columns; truncated statistics; the inputs'
/// key-value metadata.
pub(crate) fn writer_properties(plan: &Plan, opts: &Options, sorting: Option<Vec<SortingColumn>>) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(opts.codec())
        .set_max_row_group_row_count(Some(opts.batch_rows))
        .set_max_row_group_bytes(None)
        .set_dictionary_page_size_limit(opts.batch_bytes.max(1 << 20))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_statistics_truncate_length(Some(STATS_TRUNCATE_BYTES))
        .set_column_index_truncate_length(Some(STATS_TRUNCATE_BYTES))
        .set_created_by(format!("gencompact version {} (parquet-rs 60)", env!("CARGO_PKG_VERSION")));
    if sorting.is_some() {
        b = b.set_sorting_columns(sorting);
    }
    if !plan.key_value.is_empty() {
        b = b.set_key_value_metadata(Some(plan.key_value.clone()));
    }
    let fat_pages = plan.fat_leaves.iter().filter(|&&fat| fat).count() <= FAT_PAGE_COLUMNS;
    for (i, used) in plan.dictionary_leaves.iter().enumerate() {
        // A row group whose chunk of a column is all null gets an empty dictionary page, and
        // hyparquet-compressors (1.1.2) rejects the empty LZ4 block encoding it. Under LZ4 only
        // columns that no input holds a null in (so no row group can be all null) keep their
        // dictionary.
        let nullable = plan.nullable_leaves.get(i).copied().unwrap_or(true);
        let dictionary = *used && !(opts.codec() == Compression::LZ4_RAW && nullable);
        let path = plan.parquet_schema.column(i).path().clone();
        if dictionary && !plan.fully_dictionary_leaves.get(i).copied().unwrap_or(false) {
            b = b.set_column_dictionary_page_size_limit(path.clone(), FALLBACK_DICTIONARY_LIMIT);
        }
        if fat_pages && plan.fat_leaves.get(i).copied().unwrap_or(false) {
            b = b.set_column_data_page_size_limit(path.clone(), FAT_PAGE_BYTES);
        }
        b = b.set_column_dictionary_enabled(path, dictionary);
    }
    b.build()
}
