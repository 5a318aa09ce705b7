//! Spill: sorted runs that do not fit the heap bound go to temporary Arrow IPC stream files
//! under outDir or `tmpDir`, named `<prefix>-spill-<n>.arrow.tmp`. Every run file is one zstd
//! stream (level 1, a 256 KiB window): a chunk's buffers are a few KB each, too small to
//! compress one by one, and a stream compresses the run as a whole — fat text values of their
//! own per row shrink about as much as in the inputs' pages, so the temporary disk a sort needs
//! stays near the partition's own size on disk, and reading runs back costs the kernel little.
//! Files are created exclusively. A run file is removed when its `Run` is dropped — after it has
//! been merged, or when the call fails, aborts or panics — and a directory created for `tmpDir`
//! is removed again (when empty) with the `SpillDir`.
//!
//! Memory: a run being written holds one chunk (encoded), the encoder's window and tables
//! (about 1 MiB at level 1) and a write buffer; a run being read holds one decoded chunk, the
//! decoder's window (256 KiB) and a read buffer (64 KiB). `RUN_WRITE_STATE`/`RUN_READ_STATE`.

use crate::dirs::CreatedDirs;
use crate::error::{CompactError, Result};
use crate::memory::{Accountant, Reservation};
use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_schema::{ArrowError, SchemaRef};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Where one call's sorted runs are spilled.
pub struct SpillDir {
    dir: PathBuf,
    prefix: String,
    next: usize,
    created_dirs: CreatedDirs,
    ready: bool,
    /// Bytes and files spilled so far (for reports and tests).
    pub bytes_spilled: u64,
    pub files_spilled: u64,
    /// Runs that merged other runs (merge passes before the final one).
    pub intermediate_merges: u64,
    /// Bytes of run files on disk now, and the most at once.
    disk: Arc<DiskUse>,
    memory: Accountant,
}

/// What a call spilled: run files written, their bytes, runs merged into other runs before the
/// final merge, and the most bytes of run files on disk at once.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SpillFigures {
    pub runs: u64,
    pub bytes: u64,
    pub intermediate_merges: u64,
    pub peak_bytes: u64,
}

/// Bytes of a call's run files on disk.
#[derive(Default)]
struct DiskUse {
    now: AtomicU64,
    peak: AtomicU64,
}

impl SpillDir {
    /// Nothing is created until the first run is spilled.
    pub fn new(dir: &Path, prefix: &str, memory: &Accountant) -> Self {
        SpillDir {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            next: 0,
            created_dirs: CreatedDirs::default(),
            ready: false,
            bytes_spilled: 0,
            files_spilled: 0,
            intermediate_merges: 0,
            disk: Arc::default(),
            memory: memory.clone(),
        }
    }

    /// The most bytes of run files on disk at once.
    pub fn figures(&self) -> SpillFigures {
        SpillFigures {
            runs: self.files_spilled,
            bytes: self.bytes_spilled,
            intermediate_merges: self.intermediate_merges,
            peak_bytes: self.peak_disk_bytes(),
        }
    }

    pub fn peak_disk_bytes(&self) -> u64 {
        self.disk.peak.load(Ordering::Relaxed)
    }

    fn ensure_dir(&mut self) -> Result<()> {
        if self.ready {
            return Ok(());
        }
        self.created_dirs = CreatedDirs::create(&self.dir, "tmpDir")?;
        self.ready = true;
        Ok(())
    }

    /// Starts a new run file (a name another process holds is skipped, never reused).
    pub fn create(&mut self, schema: &SchemaRef) -> Result<RunWriter> {
        self.ensure_dir()?;
        let (file, path) = loop {
            let path = self.dir.join(format!("{}-spill-{:05}.arrow.tmp", self.prefix, self.next));
            self.next += 1;
            match OpenOptions::new().write(true).read(true).create_new(true).open(&path) {
                Ok(f) => break (f, path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && self.next < 1_000_000 => continue,
                Err(e) => return Err(CompactError::io(&path, &e)),
            }
        };
        let guard = SpillFile { path, bytes: 0, disk: self.disk.clone() };
        let buffered = BufWriter::with_capacity(IO_BUFFER, file);
        let stream = zstd_encoder(buffered).map_err(|e| CompactError::io(&guard.path, &e))?;
        let writer =
            StreamWriter::try_new_with_options(stream, schema, IpcWriteOptions::default()).map_err(|e| ipc_error(&guard.path, e))?;
        self.files_spilled += 1;
        let state = self.memory.hold(RUN_WRITE_STATE);
        Ok(RunWriter { file: guard, writer, rows: 0, max_chunk_bytes: 0, dictionary_bytes: 0, _state: state })
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        self.created_dirs.remove_empty();
    }
}

/// zstd level 1: about as fast to write as LZ4 and much smaller on text.
const SPILL_LEVEL: i32 = 1;
/// The compression window: 2^18 = 256 KiB (what a run reader holds for it).
const SPILL_WINDOW_LOG: u32 = 18;
const IO_BUFFER: usize = 1 << 16;
/// What a run writer holds besides its chunk: zstd's level-1 window and tables, and its buffers.
pub const RUN_WRITE_STATE: usize = (1 << 20) + 2 * IO_BUFFER;
/// What a run reader holds besides its chunk: the window, zstd's block buffer, the read buffer.
pub const RUN_READ_STATE: usize = (1 << SPILL_WINDOW_LOG) + (128 << 10) + IO_BUFFER;

type Sink = zstd::stream::write::Encoder<'static, BufWriter<File>>;

fn zstd_encoder(out: BufWriter<File>) -> std::io::Result<Sink> {
    let mut encoder = zstd::stream::write::Encoder::new(out, SPILL_LEVEL)?;
    encoder.window_log(SPILL_WINDOW_LOG)?;
    encoder.include_checksum(false)?;
    Ok(encoder)
}

/// A spill file, removed when dropped.
struct SpillFile {
    path: PathBuf,
    /// Its size once finished, counted in `disk` until it is removed.
    bytes: u64,
    disk: Arc<DiskUse>,
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.disk.now.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

pub struct RunWriter {
    file: SpillFile,
    writer: StreamWriter<Sink>,
    rows: u64,
    max_chunk_bytes: usize,
    /// Bytes of the dictionaries all chunks of the run share.
    pub dictionary_bytes: usize,
    /// The call's accounting of the encoder's state and buffers.
    _state: Reservation,
}

impl RunWriter {
    /// Appends one chunk of the run; `decoded_bytes` is its in-memory size.
    pub fn write(&mut self, chunk: &RecordBatch, decoded_bytes: usize) -> Result<()> {
        self.writer.write(chunk).map_err(|e| ipc_error(&self.file.path, e))?;
        self.rows += chunk.num_rows() as u64;
        self.max_chunk_bytes = self.max_chunk_bytes.max(decoded_bytes);
        Ok(())
    }

    /// Closes the run file; the caller counts its `bytes` as spilled.
    pub fn finish(mut self) -> Result<Run> {
        self.writer.finish().map_err(|e| ipc_error(&self.file.path, e))?;
        let encoder = self.writer.into_inner().map_err(|e| ipc_error(&self.file.path, e))?;
        let buffered = encoder.finish().map_err(|e| CompactError::io(&self.file.path, &e))?;
        let file = buffered.into_inner().map_err(|e| CompactError::io(&self.file.path, e.error()))?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        self.file.bytes = bytes;
        let now = self.file.disk.now.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.file.disk.peak.fetch_max(now, Ordering::Relaxed);
        Ok(Run { bytes, file: self.file, rows: self.rows, max_chunk_bytes: self.max_chunk_bytes, dictionary_bytes: self.dictionary_bytes })
    }
}

/// A finished sorted run on disk.
pub struct Run {
    file: SpillFile,
    /// Its size on disk.
    pub bytes: u64,
    pub rows: u64,
    /// The largest decoded chunk of the run: what one reader of it holds at most.
    pub max_chunk_bytes: usize,
    /// The dictionaries its chunks share: a reader holds them beside its chunk.
    pub dictionary_bytes: usize,
}

impl Run {
    pub fn open(&self) -> Result<RunReader> {
        let file = File::open(&self.file.path).map_err(|e| CompactError::io(&self.file.path, &e))?;
        let buffered = BufReader::with_capacity(IO_BUFFER, file);
        let mut decoder = zstd::stream::read::Decoder::with_buffer(buffered).map_err(|e| CompactError::io(&self.file.path, &e))?;
        decoder.window_log_max(SPILL_WINDOW_LOG).map_err(|e| CompactError::io(&self.file.path, &e))?;
        let source: Box<dyn Read + Send> = Box::new(decoder);
        let reader = StreamReader::try_new(source, None).map_err(|e| ipc_error(&self.file.path, e))?;
        Ok(RunReader { reader, path: self.file.path.clone() })
    }
}

pub struct RunReader {
    reader: StreamReader<Box<dyn Read + Send>>,
    path: PathBuf,
}

impl RunReader {
    /// The run's next chunk, `None` at its end.
    pub fn next_chunk(&mut self) -> Result<Option<RecordBatch>> {
        match self.reader.next() {
            None => Ok(None),
            Some(Ok(b)) => Ok(Some(b)),
            Some(Err(e)) => Err(ipc_error(&self.path, e)),
        }
    }
}

fn ipc_error(path: &Path, e: ArrowError) -> CompactError {
    match e {
        ArrowError::IoError(_, io) => CompactError::io(path, &io),
        other => CompactError::io_msg(path, format!("spill file: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    #[test]
    fn runs_read_back_as_written_compressed_and_are_removed() {
        let dir = std::env::temp_dir().join(format!("gencompact-spill-unit-{}", std::process::id()));
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false), Field::new("s", DataType::Utf8, true)]));
        let chunks: Vec<RecordBatch> = (0..5)
            .map(|c| {
                let n = Int64Array::from_iter_values((0..1000).map(|i| c * 1000 + i));
                let s = StringArray::from_iter((0..1000).map(|i| (i % 7 != 0).then(|| format!("value {} of chunk {c}", i % 13))));
                RecordBatch::try_new(schema.clone(), vec![Arc::new(n), Arc::new(s)]).unwrap()
            })
            .collect();
        let memory = Accountant::new(usize::MAX);
        let mut spill = SpillDir::new(&dir, "t", &memory);
        let mut sizes = Vec::new();
        let mut paths = Vec::new();
        let plain: usize = chunks.iter().map(|c| c.get_array_memory_size()).sum();
        for _ in 0..2 {
            let mut w = spill.create(&schema).unwrap();
            for c in &chunks {
                w.write(c, 0).unwrap();
            }
            let run = w.finish().unwrap();
            assert_eq!(run.rows, 5000);
            sizes.push(run.bytes);
            paths.push(run.file.path.clone());
            let mut r = run.open().unwrap();
            let mut back = Vec::new();
            while let Some(c) = r.next_chunk().unwrap() {
                back.push(c);
            }
            assert_eq!(back, chunks);
            drop(r);
            drop(run);
        }
        assert!(sizes.iter().all(|s| (*s as usize) * 4 < plain), "zstd runs {sizes:?} bytes for {plain} bytes of chunks");
        assert!(paths.iter().all(|p| !p.exists()), "run files removed with their runs");
        drop(spill);
        assert!(!dir.exists(), "the directory the spill created is removed");
    }
}
