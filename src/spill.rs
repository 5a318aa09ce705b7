//! Spill: sorted runs that do not fit the heap bound go to temporary Arrow IPC stream files
//! (each file one LZ4 frame stream, in 256 KiB blocks: the buffers of a chunk are a few KB
//! each, too small to compress one by one) under outDir or `tmpDir`, named `<prefix>-spill-<n>.arrow.tmp`,
//! created exclusively. A run file is removed when its `Run` is dropped — after it has been
//! merged, or when the call fails, aborts or panics — and a directory created for `tmpDir`
//! is removed again (when empty) with the `SpillDir`.
//!
//! Memory: a run being written holds one chunk (encoded), an LZ4 block and a write buffer;
//! a run being read holds one decoded chunk, an LZ4 block and a read buffer (256 KiB blocks,
//! 64 KiB buffers).

use crate::error::{CompactError, Result};
use crate::dirs::CreatedDirs;
use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use lz4_flex::frame::{BlockSize, FrameDecoder, FrameEncoder, FrameInfo};
use arrow_schema::{ArrowError, SchemaRef};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

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
}

impl SpillDir {
    /// Nothing is created until the first run is spilled.
    pub fn new(dir: &Path, prefix: &str) -> Self {
        SpillDir { dir: dir.to_path_buf(), prefix: prefix.to_string(), next: 0, created_dirs: CreatedDirs::default(), ready: false, bytes_spilled: 0, files_spilled: 0, intermediate_merges: 0 }
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
        let guard = SpillFile { path };
        let stream = FrameEncoder::with_frame_info(FrameInfo::new().block_size(BlockSize::Max256KB), BufWriter::with_capacity(1 << 16, file));
        let writer = StreamWriter::try_new_with_options(stream, schema, IpcWriteOptions::default()).map_err(|e| ipc_error(&guard.path, e))?;
        self.files_spilled += 1;
        Ok(RunWriter { file: guard, writer, rows: 0, max_chunk_bytes: 0, dictionary_bytes: 0 })
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        self.created_dirs.remove_empty();
    }
}

/// A spill file, removed when dropped.
struct SpillFile {
    path: PathBuf,
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

pub struct RunWriter {
    file: SpillFile,
    writer: StreamWriter<FrameEncoder<BufWriter<File>>>,
    rows: u64,
    max_chunk_bytes: usize,
    /// Bytes of the dictionaries all chunks of the run share.
    pub dictionary_bytes: usize,
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
        let stream = self.writer.into_inner().map_err(|e| ipc_error(&self.file.path, e))?;
        let buffered = stream.finish().map_err(|e| match e {
            lz4_flex::frame::Error::IoError(io) => CompactError::io(&self.file.path, &io),
            other => CompactError::io_msg(&self.file.path, format!("spill file: {other}")),
        })?;
        let file = buffered.into_inner().map_err(|e| CompactError::io(&self.file.path, e.error()))?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
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
        let reader = StreamReader::try_new(FrameDecoder::new(BufReader::with_capacity(1 << 16, file)), None).map_err(|e| ipc_error(&self.file.path, e))?;
        Ok(RunReader { reader, path: self.file.path.clone() })
    }
}

pub struct RunReader {
    reader: StreamReader<FrameDecoder<BufReader<File>>>,
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
