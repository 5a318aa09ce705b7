//! Spill: sorted runs that do not fit the heap bound go to temporary Arrow IPC stream files
//! under outDir or `tmpDir`, named `<prefix>-spill-<n>.arrow.tmp`. A run file is the IPC stream
//! of its chunks cut into zstd frames (level 1) of whole chunks — a chunk each, or small chunks
//! together up to `FRAME_BYTES` — each behind its compressed length (`u32`, little-endian): fat
//! text values of their own per row shrink about as much as in the inputs' pages, so the
//! temporary disk a sort needs stays near the partition's own size on disk. A frame is
//! decompressed whole, with the reading thread's one decompression context, when its first chunk
//! is read, and the chunks decoded from it are slices of it (no copy): it goes with the last of
//! them. The dictionaries a run's chunks share come first, in a frame of their own (with a
//! chunk of no rows): the reader keeps them to the run's end, and they must not keep a chunk's
//! frame with them. So a run being merged holds little beside its chunk — its dictionaries, and
//! where a frame holds more chunks (small ones) that frame — and a merge can take as many runs
//! as those allow (`sort`).
//! Files are created exclusively. The merge that consumes a run gives back the part of its file
//! it has read as it goes (`Run::open_consuming`, `holes`), and the disk counted for the call
//! goes down with it. A run file is removed when its `Run` is dropped — after it has been
//! merged, or when the call fails, aborts or panics — and a directory created for `tmpDir` is
//! removed again (when empty) with the `SpillDir`.
//!
//! The frames are written and read by `frames`, and read back as chunks by `readback`; a run
//! an intermediate merge writes alone (with `threads` > 1) is compressed and written on a
//! thread of its own while the merge goes on.
//!
//! Memory: a finished run holds the sort keys of its first and last rows; a run being written
//! holds its frames' bytes (`frames`, accounted as they grow), the
//! compression context and a write buffer (`RUN_WRITE_STATE`); a run being read holds
//! its file and dictionaries (`RUN_READ_STATE`, the dictionaries' bytes `dictionary_bytes`) and
//! its current frame, which is its chunk's memory, or more where the frame holds more chunks
//! (`held_frame_bytes`); while a frame is read, the frame compressed (at most
//! `max_frame_bytes`). The runs' schema is decoded once for all of them (`Schemas`).

use crate::dictionary::has_dictionary;
use crate::dirs::CreatedDirs;
use crate::error::{CompactError, Result};
use crate::frames::FrameWriter;
use crate::holes::Holes;
use crate::memory::{Accountant, Reservation};
pub use crate::readback::RunReader;
use crate::readback::{ipc_error, GiveBack, Schemas};
use arrow_array::RecordBatch;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_row::OwnedRow;
use arrow_schema::SchemaRef;
use std::fs::{File, OpenOptions};
use std::io::BufWriter;
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
    /// Runs that merged other runs (merge passes before the final one), and of them those
    /// merged beside another, at once.
    pub intermediate_merges: u64,
    pub concurrent_merges: u64,
    /// The most merge passes one tuple's runs took (the final merge included; see
    /// `Sorter::finish`).
    pub merge_passes: u64,
    /// Runs spilled from buffers that held fat values squeezed (`squeeze`).
    pub squeezed_runs: u64,
    /// Bytes of run files on disk now, and the most at once.
    disk: Arc<DiskUse>,
    memory: Accountant,
    /// The runs' schema, decoded once for all their readers.
    schemas: Schemas,
    /// Whether merges give back the run files they read here (`holes::gives_back`), once asked.
    gives_back: Option<bool>,
}

/// What a call spilled: run files written, their bytes, runs merged into other runs before the
/// final merge, and the most bytes of run files on disk at once.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SpillFigures {
    pub runs: u64,
    pub bytes: u64,
    pub intermediate_merges: u64,
    pub concurrent_merges: u64,
    pub merge_passes: u64,
    pub squeezed_runs: u64,
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
            concurrent_merges: 0,
            merge_passes: 0,
            squeezed_runs: 0,
            disk: Arc::default(),
            memory: memory.clone(),
            schemas: Schemas::default(),
            gives_back: None,
        }
    }

    /// The most bytes of run files on disk at once.
    pub fn figures(&self) -> SpillFigures {
        SpillFigures {
            runs: self.files_spilled,
            bytes: self.bytes_spilled,
            intermediate_merges: self.intermediate_merges,
            concurrent_merges: self.concurrent_merges,
            merge_passes: self.merge_passes,
            squeezed_runs: self.squeezed_runs,
            peak_bytes: self.peak_disk_bytes(),
        }
    }

    pub fn peak_disk_bytes(&self) -> u64 {
        self.disk.peak.load(Ordering::Relaxed)
    }

    /// Whether a merge gives back the run files it reads as it goes (`holes`): on Linux, where
    /// the spill directory's file system punches holes (asked once, after the first run).
    pub fn gives_back(&mut self) -> bool {
        if !self.ready {
            return false;
        }
        let dir = &self.dir;
        *self.gives_back.get_or_insert_with(|| crate::holes::gives_back(dir))
    }

    fn ensure_dir(&mut self) -> Result<()> {
        if self.ready {
            return Ok(());
        }
        self.created_dirs = CreatedDirs::create(&self.dir, "tmpDir")?;
        self.ready = true;
        Ok(())
    }

    /// Starts a new run file (a name another process holds is skipped, never reused) for
    /// chunks of about `chunk_bytes` decoded bytes, framed by `frames::FrameWriter` (with
    /// `background`, compressed and written on a thread of their own while the caller goes on
    /// encoding the next chunks).
    pub fn create(&mut self, schema: &SchemaRef, chunk_bytes: usize, background: bool) -> Result<RunWriter> {
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
        let guard = SpillFile { path, bytes: Arc::default(), disk: self.disk.clone() };
        let out = BufWriter::with_capacity(IO_BUFFER, file);
        let frames = FrameWriter::new(out, chunk_bytes, background).map_err(|e| CompactError::io(&guard.path, &e))?;
        let writer =
            StreamWriter::try_new_with_options(frames, schema, IpcWriteOptions::default()).map_err(|e| ipc_error(&guard.path, e))?;
        self.files_spilled += 1;
        let state = self.memory.hold(RUN_WRITE_STATE);
        Ok(RunWriter {
            file: guard,
            writer,
            schemas: self.schemas.clone(),
            rows: 0,
            max_chunk_bytes: 0,
            dictionary_bytes: 0,
            key_range: None,
            state,
        })
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        self.created_dirs.remove_empty();
    }
}

const IO_BUFFER: usize = 1 << 16;
/// What a run writer holds besides its chunk's encoded bytes and frame: zstd's level-1
/// context and the write buffer.
pub const RUN_WRITE_STATE: usize = (1 << 20) + IO_BUFFER;
/// What a run reader holds besides its frame and its run's dictionaries: the file and the
/// dictionaries' index (frames are read whole, with no buffer; the schema is the run's).
pub const RUN_READ_STATE: usize = 4 << 10;
/// A spill file, removed when dropped.
struct SpillFile {
    path: PathBuf,
    /// Its size once finished, less what a merge reading it has given back (`holes`):
    /// counted in `disk` until it is removed.
    bytes: Arc<AtomicU64>,
    disk: Arc<DiskUse>,
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.disk.now.fetch_sub(self.bytes.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

pub struct RunWriter {
    file: SpillFile,
    writer: StreamWriter<FrameWriter>,
    schemas: Schemas,
    rows: u64,
    max_chunk_bytes: usize,
    /// Bytes of the dictionaries all chunks of the run share.
    pub dictionary_bytes: usize,
    /// The sort keys of the run's first and last rows (the writer sets them).
    pub key_range: Option<(OwnedRow, OwnedRow)>,
    /// The call's accounting of the encoder's state and buffers.
    state: Reservation,
}

impl RunWriter {
    /// Appends one chunk of the run; `decoded_bytes` is its in-memory size.
    pub fn write(&mut self, chunk: &RecordBatch, decoded_bytes: usize) -> Result<()> {
        if self.rows == 0 && chunk.schema().fields().iter().any(|f| has_dictionary(f.data_type())) {
            // The dictionaries the stream sends before the first chunk go in a frame of their
            // own, with no rows: a reader keeps them for the whole run, and had they shared the
            // first chunk's frame, they would keep that frame too (its slices are theirs).
            self.writer.write(&chunk.slice(0, 0)).map_err(|e| ipc_error(&self.file.path, e))?;
            self.writer.get_mut().end_frame().map_err(|e| CompactError::io(&self.file.path, &e))?;
        }
        self.writer.write(chunk).map_err(|e| ipc_error(&self.file.path, e))?;
        let frames = self.writer.get_mut();
        frames.chunk_written().map_err(|e| CompactError::io(&self.file.path, &e))?;
        let held = RUN_WRITE_STATE + frames.held();
        self.state.resize(held);
        self.rows += chunk.num_rows() as u64;
        self.max_chunk_bytes = self.max_chunk_bytes.max(decoded_bytes);
        Ok(())
    }

    /// Closes the run file; the caller counts its `bytes` as spilled.
    pub fn finish(mut self) -> Result<Run> {
        self.writer.finish().map_err(|e| ipc_error(&self.file.path, e))?;
        let frames = self.writer.into_inner().map_err(|e| ipc_error(&self.file.path, e))?;
        let (out, max_frame_bytes, held_frame_bytes) = frames.finish().map_err(|e| CompactError::io(&self.file.path, &e))?;
        let file = out.into_inner().map_err(|e| CompactError::io(&self.file.path, e.error()))?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        self.file.bytes.store(bytes, Ordering::Relaxed);
        let now = self.file.disk.now.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.file.disk.peak.fetch_max(now, Ordering::Relaxed);
        Ok(Run {
            bytes,
            file: self.file,
            schemas: self.schemas.clone(),
            rows: self.rows,
            max_chunk_bytes: self.max_chunk_bytes,
            max_frame_bytes,
            held_frame_bytes,
            dictionary_bytes: self.dictionary_bytes,
            // (the keys twice: a merge takes a copy of the first ones)
            _key_memory: self
                .state
                .accountant()
                .hold(self.key_range.as_ref().map_or(0, |(f, l)| 2 * (f.row().as_ref().len() + l.row().as_ref().len()))),
            key_range: self.key_range.take(),
        })
    }
}

/// A finished sorted run on disk.
pub struct Run {
    file: SpillFile,
    /// The call's runs' schema, decoded once (`Schemas`).
    schemas: Schemas,
    /// Its size on disk.
    pub bytes: u64,
    pub rows: u64,
    /// The largest decoded chunk of the run: what one reader of it holds at most.
    pub max_chunk_bytes: usize,
    /// The largest frame decompressed: what reading a chunk of it takes besides the chunk.
    pub max_frame_bytes: usize,
    /// The largest frame of more than one chunk: what a reader of it holds between chunks
    /// (a frame of one chunk is dropped once its chunk is read).
    pub held_frame_bytes: usize,
    /// The dictionaries its chunks share: a reader holds them beside its chunk.
    pub dictionary_bytes: usize,
    /// The sort keys of its first and last rows: a merge opens it only when it reaches the
    /// first, and it is done after the last (`None`: not known, open from the start).
    pub key_range: Option<(OwnedRow, OwnedRow)>,
    /// The call's accounting of those keys (a sort key can be a long string).
    _key_memory: Reservation,
}

impl Run {
    pub fn open(&self) -> Result<RunReader> {
        let file = File::open(&self.file.path).map_err(|e| CompactError::io(&self.file.path, &e))?;
        Ok(self.reader(file, None))
    }

    /// Opens the run for the merge that reads it once, to its end, and then drops it: what it
    /// has read is given back to the file system as it goes (`holes`). Nothing reads the run
    /// after that reader.
    pub fn open_consuming(&self) -> Result<RunReader> {
        let file = OpenOptions::new().read(true).write(true).open(&self.file.path).map_err(|e| CompactError::io(&self.file.path, &e))?;
        let (left, disk) = (self.file.bytes.clone(), self.file.disk.clone());
        let given = move |n: u64| {
            left.fetch_sub(n, Ordering::Relaxed);
            disk.now.fetch_sub(n, Ordering::Relaxed);
        };
        Ok(self.reader(file, Some(GiveBack { holes: Holes::default(), given: Box::new(given) })))
    }

    /// (the bytes its frames are checked against: the file's, at most as written)
    fn reader(&self, file: File, give_back: Option<GiveBack>) -> RunReader {
        let bytes = file.metadata().map_or(self.bytes, |m| m.len().min(self.bytes));
        RunReader::new(file, give_back, self.schemas.clone(), self.file.path.clone(), self.rows, bytes, self.max_frame_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    /// A scratch directory `gencompact-spill-<name>-<pid>`, the schema of one string column
    /// `s`, and an accountant without a limit.
    fn one_string_column(name: &str) -> (PathBuf, SchemaRef, Accountant) {
        let dir = std::env::temp_dir().join(format!("gencompact-spill-{name}-{}", std::process::id()));
        (dir, Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)])), Accountant::new(usize::MAX))
    }

    #[test]
    fn a_runs_key_range_is_accounted_while_the_run_lives() {
        let (dir, schema, memory) = one_string_column("keys");
        let mut spill = SpillDir::new(&dir, "k", &memory);
        let mut w = spill.create(&schema, 1 << 20, false).unwrap();
        w.write(&RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(vec!["a"]))]).unwrap(), 0).unwrap();
        // a sort key 100 KB long (a sort by a fat column)
        let converter = arrow_row::RowConverter::new(vec![arrow_row::SortField::new(DataType::Utf8)]).unwrap();
        let long: arrow_array::ArrayRef = Arc::new(StringArray::from(vec!["x".repeat(100_000), "y".repeat(100_000)]));
        let rows = converter.convert_columns(&[long]).unwrap();
        w.key_range = Some((rows.row(0).owned(), rows.row(1).owned()));
        let run = w.finish().unwrap();
        assert!(memory.used() >= 400_000, "{}", memory.used());
        drop(run);
        assert_eq!(memory.used(), 0);
        drop(spill);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_consuming_reader_gives_back_what_it_has_read_and_the_disk_count_follows() {
        let (dir, schema, memory) = one_string_column("give");
        let mut spill = SpillDir::new(&dir, "g", &memory);
        // 40 chunks of 64 KB that zstd cannot shrink: a frame each
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let chunks: Vec<RecordBatch> = (0..40)
            .map(|_| {
                let v: String = (0..64_000)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        char::from(b'!' + (x % 90) as u8)
                    })
                    .collect();
                RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(vec![v]))]).unwrap()
            })
            .collect();
        let mut w = spill.create(&schema, 64_000, false).unwrap();
        for c in &chunks {
            w.write(c, 64_000).unwrap();
        }
        let run = w.finish().unwrap();
        let written = spill.disk.now.load(Ordering::Relaxed);
        assert!(written > 40 * 50_000 && written == run.bytes, "{written} {}", run.bytes);
        // a reader that does not consume the run gives nothing back
        let mut r = run.open().unwrap();
        while r.next_chunk().unwrap().is_some() {}
        assert_eq!(spill.disk.now.load(Ordering::Relaxed), written);
        let mut r = run.open_consuming().unwrap();
        for c in chunks.iter().take(20) {
            assert_eq!(r.next_chunk().unwrap().as_ref(), Some(c));
        }
        let half = spill.disk.now.load(Ordering::Relaxed);
        let gives_back = crate::holes::gives_back(&dir);
        let given = if gives_back { written / 2 - (64 << 10) } else { 0 };
        assert!(written - half >= given, "{written} -> {half}");
        let mut back = 20;
        while let Some(c) = r.next_chunk().unwrap() {
            assert_eq!(c, chunks[back]);
            back += 1;
        }
        assert_eq!(back, 40);
        let left = spill.disk.now.load(Ordering::Relaxed);
        assert!(left <= if gives_back { 64 << 10 } else { written }, "{written} -> {left}");
        assert_eq!(spill.figures().peak_bytes, written);
        drop(r);
        drop(run);
        assert_eq!(spill.disk.now.load(Ordering::Relaxed), 0, "what was not given back is counted off when the run goes");
        drop(spill);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A run file cut inside a frame, or whose second frame's length is edited to 4 GiB: reading
    /// it back is an error naming the file at that frame, the frames before it read as written.
    #[test]
    fn a_truncated_or_edited_run_file_is_an_error_at_the_damaged_frame() {
        let (dir, schema, memory) = one_string_column("damaged");
        let mut spill = SpillDir::new(&dir, "d", &memory);
        let chunks: Vec<RecordBatch> = (0..6)
            .map(|c| {
                RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(vec![format!("chunk {c} ").repeat(40_000)]))]).unwrap()
            })
            .collect();
        let mut w = spill.create(&schema, 1 << 20, false).unwrap();
        for c in &chunks {
            w.write(c, 0).unwrap();
        }
        let run = w.finish().unwrap();
        let clean = std::fs::read(&run.file.path).unwrap();
        // the frames: each behind its length
        let mut starts = Vec::new();
        let mut at = 0;
        while at < clean.len() {
            starts.push(at);
            at += 4 + u32::from_le_bytes(clean[at..at + 4].try_into().unwrap()) as usize;
        }
        assert_eq!(at, clean.len());
        assert!(starts.len() >= 4, "{} frames", starts.len());
        let third = starts[2];
        for (case, bytes) in [
            ("cut", clean[..third + 20].to_vec()),
            ("edited", {
                let mut b = clean.clone();
                b[third..third + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
                b
            }),
        ] {
            std::fs::write(&run.file.path, &bytes).unwrap();
            let mut r = run.open().unwrap();
            let mut read = 0;
            let e = loop {
                match r.next_chunk() {
                    Ok(Some(c)) => {
                        assert_eq!(c, chunks[read], "{case}");
                        read += 1;
                    }
                    Ok(None) => panic!("{case}: the damaged run read to its end"),
                    Err(e) => break e,
                }
            };
            assert!(read < chunks.len(), "{case}");
            let msg = e.to_string();
            assert!(msg.contains(&run.file.path.display().to_string()), "{case}: {msg}");
            if case == "edited" {
                assert!(msg.contains("a spill frame of 4294967280 bytes"), "{case}: {msg}");
            }
        }
        drop(run);
        drop(spill);
        let _ = std::fs::remove_dir_all(&dir);
    }

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
        // A chunk to a frame, then chunks smaller than a frame sharing frames; written here,
        // then on a thread of the run's own (the same bytes).
        let mut contents: Vec<Vec<u8>> = Vec::new();
        for (chunk_bytes, background) in [(1 << 20, false), (8 << 10, false), (1 << 20, true), (8 << 10, true)] {
            let mut w = spill.create(&schema, chunk_bytes, background).unwrap();
            assert_eq!(w.writer.get_ref().in_background(), background);
            for c in &chunks {
                w.write(c, 0).unwrap();
            }
            let run = w.finish().unwrap();
            contents.push(std::fs::read(&run.file.path).unwrap());
            assert_eq!(run.rows, 5000);
            assert!(run.max_frame_bytes > 0);
            // A reader holds a frame between chunks only where the frame has more than one.
            assert_eq!(run.held_frame_bytes > 0, chunk_bytes < crate::frames::FRAME_BYTES, "{chunk_bytes}: {}", run.held_frame_bytes);
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
        assert!(contents[0] == contents[2] && contents[1] == contents[3], "a run compressed on its own thread is the same file");
        assert!(paths.iter().all(|p| !p.exists()), "run files removed with their runs");
        drop(spill);
        assert!(!dir.exists(), "the directory the spill created is removed");
    }

    #[test]
    fn a_runs_shared_dictionaries_keep_no_chunks_frame() {
        // A run whose chunks share one dictionary (a sort buffer's, see `gather::share`) and
        // each fill a frame of their own with values of their own per row. The reader keeps the
        // dictionary for the whole run; were it a slice of the first chunk's frame, it would
        // keep that frame (the chunk's fat values with it) until the run is done: in a merge
        // of a hundred runs, a hundred frames nobody accounts.
        use arrow_array::{types::Int32Type, Array, DictionaryArray};
        let dir = std::env::temp_dir().join(format!("gencompact-spill-dictframe-{}", std::process::id()));
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        // (two dictionary columns: the stream numbers their dictionaries, and the reader must
        // find each by its number)
        let schema = Arc::new(Schema::new(vec![
            Field::new("model", dict.clone(), false),
            Field::new("tenant", dict, false),
            Field::new("history", DataType::Utf8, false),
        ]));
        let models: arrow_array::ArrayRef = Arc::new(StringArray::from(vec!["m0", "m1"]));
        let values: arrow_array::ArrayRef = Arc::new(StringArray::from(vec!["t0", "t1", "t2"]));
        let chunks: Vec<RecordBatch> = (0..3)
            .map(|c| {
                let keys = arrow_array::Int32Array::from_iter_values((0..8).map(|i| (i + c) % 3));
                let tenant = DictionaryArray::<Int32Type>::try_new(keys, values.clone()).unwrap();
                let model = arrow_array::Int32Array::from_iter_values((0..8).map(|i| (i + c) % 2));
                let model = DictionaryArray::<Int32Type>::try_new(model, models.clone()).unwrap();
                let history = StringArray::from_iter_values((0..8).map(|i| format!("{c}-{i}-{}", "x".repeat(40_000))));
                RecordBatch::try_new(schema.clone(), vec![Arc::new(model), Arc::new(tenant), Arc::new(history)]).unwrap()
            })
            .collect();
        let memory = Accountant::new(usize::MAX);
        let mut spill = SpillDir::new(&dir, "f", &memory);
        // chunks of FRAME_BYTES: a frame each
        let mut w = spill.create(&schema, crate::frames::FRAME_BYTES, false).unwrap();
        for c in &chunks {
            w.write(c, c.get_array_memory_size()).unwrap();
        }
        let run = w.finish().unwrap();
        let mut r = run.open().unwrap();
        let mut back = Vec::new();
        let (mut frames, mut dictionaries) = (Vec::new(), Vec::new());
        while let Some(c) = r.next_chunk().unwrap() {
            // the frame a chunk was decoded from: where its fat values lie
            frames.push(c.column(2).to_data().buffers()[1].data_ptr());
            let tenant = c.column(1).as_any().downcast_ref::<DictionaryArray<Int32Type>>().unwrap();
            dictionaries.push(tenant.values().to_data().buffers()[1].data_ptr());
            back.push(c);
        }
        assert_eq!(back, chunks, "the run reads back as written, and the chunk of no rows is not one");
        assert_eq!(frames.iter().collect::<std::collections::HashSet<_>>().len(), 3, "a frame per chunk");
        assert!(dictionaries.iter().all(|d| *d == dictionaries[0]), "one dictionary for the run");
        assert!(!frames.contains(&dictionaries[0]), "the run's dictionary lies in a chunk's frame");
        drop((r, run));
        drop(spill);
    }

    #[test]
    fn a_damaged_run_file_is_an_error() {
        let (dir, schema, memory) = one_string_column("damaged");
        let chunk =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from_iter_values((0..2000).map(|i| format!("row {i}"))))])
                .unwrap();
        let mut spill = SpillDir::new(&dir, "d", &memory);
        let read_all = |run: &Run| -> Result<usize> {
            let mut r = run.open()?;
            let mut n = 0;
            while let Some(c) = r.next_chunk()? {
                n += c.num_rows();
            }
            Ok(n)
        };
        for damage in ["truncate", "length", "frame"] {
            let mut w = spill.create(&schema, 1 << 20, false).unwrap();
            for _ in 0..3 {
                w.write(&chunk, 0).unwrap();
            }
            let run = w.finish().unwrap();
            assert_eq!(read_all(&run).unwrap(), 6000);
            let mut bytes = std::fs::read(&run.file.path).unwrap();
            match damage {
                "truncate" => bytes.truncate(bytes.len() * 2 / 3),
                // the first frame's length claims more than the file holds
                "length" => bytes[3] = 0x7f,
                _ => {
                    for b in &mut bytes[8..40] {
                        *b ^= 0x5a;
                    }
                }
            }
            std::fs::write(&run.file.path, &bytes).unwrap();
            assert!(read_all(&run).is_err(), "{damage}: a damaged run is an error");
        }
        drop(spill);
    }
}
