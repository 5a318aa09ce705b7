//! Fuzzing: thin entry points to the crate-private spill frame writer and reader for the
//! differential fuzz targets (`fuzz/targets.rs`, run by cargo-fuzz and, bounded, by
//! `tests/differential.rs`). Nothing here decides anything: it writes a run as `spill` does and
//! reads one back as `spill::Run::open` does. Built only with the `test-hooks` feature.
//!
//! Memory: the run written, whole (the caller's chunks), and what reading it back holds
//! (`readback`).

use crate::frames::FrameWriter;
use crate::readback::{RunReader, Schemas};
use arrow_array::RecordBatch;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_schema::SchemaRef;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::fd::FromRawFd;
use std::path::PathBuf;

/// An anonymous file in memory (`memfd_create`): a run's bytes without touching a disk.
fn memory_file() -> std::io::Result<File> {
    // SAFETY: the name is a NUL-terminated literal; a descriptor returned is new and ours alone.
    let fd = unsafe { libc::memfd_create(c"gencompact-fuzz".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a valid descriptor nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// The bytes of a run file holding `chunks` (as `spill::SpillDir::create` and
/// `RunWriter::write`/`finish` write it: an IPC stream in zstd frames of about `chunk_bytes`
/// decoded bytes each, a chunk's dictionaries in a frame of their own before the first chunk).
pub fn write_run(schema: &SchemaRef, chunks: &[RecordBatch], chunk_bytes: usize) -> std::io::Result<Vec<u8>> {
    let file = memory_file()?;
    let frames = FrameWriter::new(BufWriter::new(file.try_clone()?), chunk_bytes, false)?;
    let mut writer = StreamWriter::try_new_with_options(frames, schema, IpcWriteOptions::default()).map_err(std::io::Error::other)?;
    for (i, chunk) in chunks.iter().enumerate() {
        if i == 0 && schema.fields().iter().any(|f| matches!(f.data_type(), arrow_schema::DataType::Dictionary(..))) {
            writer.write(&chunk.slice(0, 0)).map_err(std::io::Error::other)?;
            writer.get_mut().end_frame()?;
        }
        writer.write(chunk).map_err(std::io::Error::other)?;
        writer.get_mut().chunk_written()?;
    }
    writer.finish().map_err(std::io::Error::other)?;
    let frames = writer.into_inner().map_err(std::io::Error::other)?;
    let (mut out, _, _) = frames.finish()?;
    out.flush()?;
    drop(out);
    let mut bytes = Vec::new();
    let mut file = file;
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The largest decompressed frame `read_run` accepts.
const MAX_FRAME: usize = 16 << 20;

/// The chunks a run file of `bytes` holds, read back as a merge reads them (`RunReader`), the
/// run declared to hold `rows` rows.
pub fn read_run(bytes: &[u8], rows: u64) -> crate::Result<Vec<RecordBatch>> {
    let path = PathBuf::from("fuzz-run.arrow.tmp");
    let mut file = memory_file().map_err(|e| crate::CompactError::io(&path, &e))?;
    file.write_all(bytes).and_then(|_| file.seek(SeekFrom::Start(0))).map_err(|e| crate::CompactError::io(&path, &e))?;
    // a frame of arbitrary bytes may declare any size: at most what a run's chunks take in a
    // call of the default batchBytes, as a merge's reader is told by its run
    let mut reader = RunReader::new(file, None, Schemas::default(), path, rows, bytes.len() as u64, MAX_FRAME);
    let mut chunks = Vec::new();
    while let Some(chunk) = reader.next_chunk()? {
        chunks.push(chunk);
    }
    Ok(chunks)
}
