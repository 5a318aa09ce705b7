//! Spill: sorted runs that do not fit the heap bound go to temporary Arrow IPC stream files
//! under outDir or `tmpDir`, named `<prefix>-spill-<n>.arrow.tmp`. A run is written as it is
//! while its file system has room for many more runs; once free space runs low, runs are
//! compressed (each file one LZ4 frame stream in 256 KiB blocks — a chunk's buffers are a few
//! KB each, too small to compress one by one), which writes about a third of the bytes for
//! about a fifth more CPU in the sort. Files are created exclusively. A run file is removed
//! when its `Run` is dropped — after it has been merged, or when the call fails, aborts or
//! panics — and a directory created for `tmpDir` is removed again (when empty) with the
//! `SpillDir`.
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
use std::io::{BufReader, BufWriter, Read, Write};
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

    /// Starts a new run file (a name another process holds is skipped, never reused) for a run
    /// of about `run_bytes`: compressed unless its file system has room for
    /// `UNCOMPRESSED_HEADROOM` such runs and 1 GiB besides.
    pub fn create(&mut self, schema: &SchemaRef, run_bytes: u64) -> Result<RunWriter> {
        self.ensure_dir()?;
        let compressed = free_bytes(&self.dir).is_none_or(|free| free < run_bytes.saturating_mul(UNCOMPRESSED_HEADROOM).saturating_add(1 << 30));
        self.create_run(schema, compressed)
    }

    fn create_run(&mut self, schema: &SchemaRef, compressed: bool) -> Result<RunWriter> {
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
        let guard = SpillFile { path, compressed };
        let buffered = BufWriter::with_capacity(1 << 16, file);
        let stream = if compressed {
            Sink::Lz4(FrameEncoder::with_frame_info(FrameInfo::new().block_size(BlockSize::Max256KB), buffered))
        } else {
            Sink::Plain(buffered)
        };
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

/// Runs written uncompressed need room for this many more of them.
const UNCOMPRESSED_HEADROOM: u64 = 16;

/// Free bytes (for an unprivileged user) on the file system holding `dir`.
#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string that outlives the call, and `stat` points to
    // writable memory of the struct's size; it is read only when the call succeeded.
    let stat = unsafe {
        if libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) != 0 {
            return None;
        }
        stat.assume_init()
    };
    Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

#[cfg(not(unix))]
fn free_bytes(_dir: &Path) -> Option<u64> {
    None
}

/// Where a run's bytes go: the file, or an LZ4 frame stream over it.
enum Sink {
    Plain(BufWriter<File>),
    Lz4(FrameEncoder<BufWriter<File>>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Lz4(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Lz4(w) => w.flush(),
        }
    }
}

/// A spill file, removed when dropped.
struct SpillFile {
    path: PathBuf,
    /// Written as an LZ4 frame stream.
    compressed: bool,
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

pub struct RunWriter {
    file: SpillFile,
    writer: StreamWriter<Sink>,
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
        let buffered = match self.writer.into_inner().map_err(|e| ipc_error(&self.file.path, e))? {
            Sink::Plain(w) => w,
            Sink::Lz4(w) => w.finish().map_err(|e| match e {
                lz4_flex::frame::Error::IoError(io) => CompactError::io(&self.file.path, &io),
                other => CompactError::io_msg(&self.file.path, format!("spill file: {other}")),
            })?,
        };
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
        let buffered = BufReader::with_capacity(1 << 16, file);
        let source: Box<dyn Read + Send> = if self.file.compressed { Box::new(FrameDecoder::new(buffered)) } else { Box::new(buffered) };
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
    use std::sync::Arc;

    #[test]
    fn runs_read_back_as_written_compressed_or_not_and_are_removed() {
        let dir = std::env::temp_dir().join(format!("gencompact-spill-unit-{}", std::process::id()));
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false), Field::new("s", DataType::Utf8, true)]));
        let chunks: Vec<RecordBatch> = (0..5)
            .map(|c| {
                let n = Int64Array::from_iter_values((0..1000).map(|i| c * 1000 + i));
                let s = StringArray::from_iter((0..1000).map(|i| (i % 7 != 0).then(|| format!("value {} of chunk {c}", i % 13))));
                RecordBatch::try_new(schema.clone(), vec![Arc::new(n), Arc::new(s)]).unwrap()
            })
            .collect();
        let mut spill = SpillDir::new(&dir, "t");
        let mut sizes = Vec::new();
        let mut paths = Vec::new();
        for compressed in [false, true] {
            let mut w = spill.create_run(&schema, compressed).unwrap();
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
            assert_eq!(back, chunks, "compressed: {compressed}");
            drop(r);
            drop(run);
        }
        assert!(sizes[1] * 2 < sizes[0], "LZ4 stream {} bytes vs plain {}", sizes[1], sizes[0]);
        assert!(paths.iter().all(|p| !p.exists()), "run files removed with their runs");
        drop(spill);
        assert!(!dir.exists(), "the directory the spill created is removed");
    }

    #[test]
    fn free_space_is_that_of_the_directorys_file_system() {
        let free = free_bytes(&std::env::temp_dir());
        assert!(free.is_some_and(|f| f > 0), "{free:?}");
        assert_eq!(free_bytes(Path::new("/no/such/directory/here")), None);
    }
}
