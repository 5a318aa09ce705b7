//! Frames: the bytes of a spilled run (`spill`) as zstd frames, each behind its compressed length
//! (`u32`, little-endian) — written here or on a thread of the run's own (`FrameSink`), and read
//! back whole with the reading thread's one decompression context (`next_frame`).
//!
//! A frame read back is checked before a buffer is sized for it: its compressed length against
//! the bytes its file still holds, its decompressed size against the run's largest frame.
//!
//! Memory: a frame being filled and the frame compressed (on a thread of its own, up to four
//! frames of the largest size so far: the one filling, the one waiting, the one being compressed
//! and its output); a frame read back, compressed and decompressed; one compression context per
//! run being written and one decompression context per reading thread.

use std::fs::File;
use std::io::{BufWriter, Read, Write};

/// zstd level 1: about as fast to write as LZ4 and much smaller on text.
const SPILL_LEVEL: i32 = 1;
/// Chunks smaller than this share a frame, of about this many bytes (zstd finds little to
/// shrink in a few KB on their own).
pub(crate) const FRAME_BYTES: usize = 256 << 10;

/// No frame of a run decompresses to more than this (a chunk holds at least one row; Arrow's
/// 32-bit offsets keep a string column's values below 2 GiB).
const MAX_FRAME: usize = i32::MAX as usize;

/// The bytes of a run's IPC stream, compressed in frames of whole chunks (`end_frame`).
pub(crate) struct FrameWriter {
    /// Chunks to a frame.
    group: usize,
    /// The most bytes a frame decompresses to, and a frame of more than one chunk.
    max_frame: usize,
    max_shared_frame: usize,
    /// Chunks written since the last frame.
    chunks: usize,
    /// The stream's bytes since the last frame.
    pending: Vec<u8>,
    sink: FrameSink,
}

/// Where finished frames are compressed and written: here, or on a thread of the run's own, one
/// frame at a time with at most one more waiting (so a merge writing a run decodes, gathers and
/// encodes while the frame before is compressed).
enum FrameSink {
    Inline(FrameOut),
    Background {
        worker: Worker,
        /// Emptied frame buffers coming back for reuse.
        spare: std::sync::mpsc::Receiver<Vec<u8>>,
    },
}

/// The run file's compressed output.
struct FrameOut {
    out: BufWriter<File>,
    /// The frame being compressed.
    frame: Vec<u8>,
    compressor: zstd::bulk::Compressor<'static>,
}

impl FrameOut {
    /// `bytes` compressed into a frame of their own, behind its length.
    fn write_frame(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.frame.clear();
        self.frame.reserve(zstd::zstd_safe::compress_bound(bytes.len()));
        self.compressor.compress_to_buffer(bytes, &mut self.frame)?;
        let len = u32::try_from(self.frame.len()).map_err(|_| std::io::Error::other("a spill frame over 4 GiB"))?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&self.frame)
    }
}

/// The thread a run's frames are compressed and written on.
struct Worker {
    frames: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    handle: Option<std::thread::JoinHandle<std::io::Result<FrameOut>>>,
}

impl Worker {
    /// Hands the thread no more frames and waits for it: its output, or the error it stopped on.
    fn stop(&mut self) -> std::io::Result<FrameOut> {
        drop(self.frames.take());
        match self.handle.take() {
            Some(handle) => handle.join().unwrap_or_else(|_| Err(std::io::Error::other("the spill writer thread panicked"))),
            None => Err(std::io::Error::other("the spill writer thread is gone")),
        }
    }
}

impl Drop for Worker {
    /// A run abandoned (the call failed or was cancelled) leaves no thread writing behind it.
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

impl FrameSink {
    fn background(mut out: FrameOut) -> std::io::Result<FrameSink> {
        let (frames, queued) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
        let (emptied, spare) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
        let handle = std::thread::Builder::new().name("gencompact-runw".into()).spawn(move || {
            for mut bytes in queued {
                out.write_frame(&bytes)?;
                bytes.clear();
                let _ = emptied.try_send(bytes);
            }
            Ok(out)
        })?;
        Ok(FrameSink::Background { worker: Worker { frames: Some(frames), handle: Some(handle) }, spare })
    }

    /// The file's writer once every frame is written (and the thread, if any, is done).
    fn finish(self) -> std::io::Result<BufWriter<File>> {
        match self {
            FrameSink::Inline(out) => Ok(out.out),
            FrameSink::Background { mut worker, .. } => Ok(worker.stop()?.out),
        }
    }
}

impl Write for FrameWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl FrameWriter {
    /// Frames of chunks of about `chunk_bytes` decoded bytes, written to `out`: a chunk each,
    /// or, where they are smaller than `FRAME_BYTES`, as many to a frame as make that; with
    /// `background`, compressed and written on a thread of their own.
    pub(crate) fn new(out: BufWriter<File>, chunk_bytes: usize, background: bool) -> std::io::Result<FrameWriter> {
        let out = FrameOut { out, frame: Vec::new(), compressor: zstd::bulk::Compressor::new(SPILL_LEVEL)? };
        let sink = if background { FrameSink::background(out)? } else { FrameSink::Inline(out) };
        Ok(FrameWriter {
            group: FRAME_BYTES.div_ceil(chunk_bytes.max(1)),
            max_frame: 0,
            max_shared_frame: 0,
            chunks: 0,
            pending: Vec::new(),
            sink,
        })
    }

    /// The stream has written one more chunk: a frame ends after its last chunk, or once it
    /// holds `FRAME_BYTES`.
    pub(crate) fn chunk_written(&mut self) -> std::io::Result<()> {
        self.chunks += 1;
        if self.chunks >= self.group || self.pending.len() >= FRAME_BYTES {
            self.end_frame()?;
        }
        Ok(())
    }

    /// Ends the last frame; returns the file's writer once every frame is written (and the
    /// thread, if any, is done), with the most bytes a frame decompresses to, and a frame of
    /// more than one chunk.
    pub(crate) fn finish(mut self) -> std::io::Result<(BufWriter<File>, usize, usize)> {
        self.end_frame()?;
        let (max_frame, max_shared_frame) = (self.max_frame, self.max_shared_frame);
        Ok((self.sink.finish()?, max_frame, max_shared_frame))
    }

    /// Frames are compressed on a thread of their own.
    #[cfg(test)]
    pub(crate) fn in_background(&self) -> bool {
        matches!(self.sink, FrameSink::Background { .. })
    }

    /// Compresses what the stream wrote since the last frame into a frame of its own.
    pub(crate) fn end_frame(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.max_frame = self.max_frame.max(self.pending.len());
        if self.chunks > 1 {
            self.max_shared_frame = self.max_shared_frame.max(self.pending.len());
        }
        self.chunks = 0;
        match &mut self.sink {
            FrameSink::Inline(out) => {
                out.write_frame(&self.pending)?;
                self.pending.clear();
            }
            FrameSink::Background { worker, spare } => {
                let next = spare.try_recv().unwrap_or_default();
                let bytes = std::mem::replace(&mut self.pending, next);
                if worker.frames.as_ref().is_none_or(|f| f.send(bytes).is_err()) {
                    // The thread stopped on an error: that error.
                    return Err(match worker.stop() {
                        Err(e) => e,
                        Ok(_) => std::io::Error::other("the spill writer thread stopped"),
                    });
                }
            }
        }
        Ok(())
    }

    /// The bytes its buffers hold: the frame being filled and the compressed frame; on a thread
    /// of its own, also the frame waiting, the one being compressed and its output, each at
    /// most as large as the largest so far.
    pub(crate) fn held(&self) -> usize {
        match &self.sink {
            FrameSink::Inline(out) => self.pending.capacity() + out.frame.capacity(),
            FrameSink::Background { .. } => self.pending.capacity() + 4 * self.max_frame,
        }
    }
}

thread_local! {
    /// The decompression context of a thread reading runs (one merge reads its runs' chunks
    /// one at a time, on one thread) or ZSTD pages (`streamed`).
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
}

/// The next frame of a run file, decompressed (with the thread's decompression context), and
/// the bytes of the file it took; `None` at the end of the file. `left`: the bytes the file
/// holds from here; `max_frame`: the most a frame of the run decompresses to, as written. A
/// frame's lengths are checked against those before a buffer is sized for it: a frame that runs
/// past the end of the file, or decompresses to more, is damage.
pub(crate) fn next_frame(input: &mut impl Read, left: u64, max_frame: usize) -> std::io::Result<Option<(Vec<u8>, u64)>> {
    let damaged = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len);
    if u64::from(len) > left.saturating_sub(4) {
        return Err(damaged(format!("a spill frame of {len} bytes, {} bytes before the end of the file", left.saturating_sub(4))));
    }
    let mut compressed = vec![0u8; len as usize];
    // (a frame cut short is damage, not the end of the run)
    input.read_exact(&mut compressed).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let most = max_frame.min(MAX_FRAME);
    let size = match zstd::zstd_safe::get_frame_content_size(&compressed) {
        Ok(Some(n)) if n <= most as u64 => n as usize,
        Ok(Some(n)) => return Err(damaged(format!("a spill frame of {n} bytes, more than the run's largest ({most})"))),
        _ => return Err(damaged("a spill frame without a valid size".into())),
    };
    let mut frame = Vec::with_capacity(size);
    with_decompressor(|d| d.decompress_to_buffer(&compressed[..], &mut frame))?;
    Ok(Some((frame, 4 + compressed.len() as u64)))
}

/// `f` with the calling thread's zstd decompression context, made the first time a thread asks
/// (a context costs tens of KB to make and set up: one per run frame or page would cost more
/// than decompressing a small one).
pub(crate) fn with_decompressor<T>(f: impl FnOnce(&mut zstd::bulk::Decompressor<'static>) -> std::io::Result<T>) -> std::io::Result<T> {
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        let decompressor = match d.as_mut() {
            Some(decompressor) => decompressor,
            None => d.insert(zstd::bulk::Decompressor::new()?),
        };
        f(decompressor)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    /// A reader of `bytes` that counts the bytes read from it.
    struct Counted<'a>(&'a [u8], usize);

    impl Read for Counted<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            self.1 += n;
            Ok(n)
        }
    }

    /// Two frames as a run file holds them, and their contents.
    fn two_frames() -> (Vec<u8>, Vec<Vec<u8>>) {
        let contents: Vec<Vec<u8>> = vec![b"first frame ".repeat(1000), b"second ".repeat(3000)];
        let mut file = Vec::new();
        for c in &contents {
            let frame = zstd::bulk::compress(c, SPILL_LEVEL).unwrap();
            file.extend_from_slice(&(frame.len() as u32).to_le_bytes());
            file.extend_from_slice(&frame);
        }
        (file, contents)
    }

    #[test]
    fn frames_read_back_as_written_to_the_end_of_the_file() {
        let (file, contents) = two_frames();
        let mut r = Counted(&file, 0);
        let (a, n) = next_frame(&mut r, file.len() as u64, 21_000).unwrap().unwrap();
        assert_eq!(a, contents[0]);
        let (b, _) = next_frame(&mut r, file.len() as u64 - n, 21_000).unwrap().unwrap();
        assert_eq!(b, contents[1]);
        assert!(next_frame(&mut r, 0, 21_000).unwrap().is_none());
    }

    /// A frame length edited to 4 GiB, or a file cut inside a frame: refused on the length
    /// alone — the frame's bytes are not read, and no buffer is sized for them. (Without the
    /// check a buffer of the declared length was allocated, then the read failed.)
    #[test]
    fn a_frame_longer_than_the_file_holds_is_refused_before_its_buffer() {
        let (file, _) = two_frames();
        let mut edited = file.clone();
        edited[..4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        let mut r = Counted(&edited, 0);
        let e = next_frame(&mut r, edited.len() as u64, 21_000).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("a spill frame of 4294967280 bytes"), "{e}");
        assert_eq!(r.1, 4, "only the length was read");
        let cut = &file[..file.len() - 10];
        let mut r = Counted(cut, 0);
        let (_, n) = next_frame(&mut r, cut.len() as u64, 21_000).unwrap().unwrap();
        let before = r.1;
        let e = next_frame(&mut r, cut.len() as u64 - n, 21_000).unwrap_err();
        assert!(e.to_string().contains("bytes before the end of the file"), "{e}");
        assert_eq!(r.1 - before, 4, "only the second frame's length was read");
    }

    #[test]
    fn a_frame_that_decompresses_to_more_than_the_runs_largest_is_refused() {
        let (file, _) = two_frames();
        let e = next_frame(&mut Counted(&file, 0), file.len() as u64, 12_000 - 1).unwrap_err();
        assert!(e.to_string().contains("more than the run's largest (11999)"), "{e}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_run_written_on_its_own_thread_fails_with_the_error_its_thread_stopped_on() {
        // /dev/full: every write that reaches it fails with ENOSPC, as on a full disk.
        let full = OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = FrameOut {
            out: BufWriter::with_capacity(1 << 16, full),
            frame: Vec::new(),
            compressor: zstd::bulk::Compressor::new(SPILL_LEVEL).unwrap(),
        };
        let sink = FrameSink::background(out).unwrap();
        let mut frames = FrameWriter { group: 1, max_frame: 0, max_shared_frame: 0, chunks: 0, pending: Vec::new(), sink };
        // (bytes zstd cannot shrink: each frame outgrows the write buffer)
        let noise: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let mut failed = None;
        for _ in 0..50 {
            frames.write_all(&noise).unwrap();
            if let Err(e) = frames.end_frame() {
                failed = Some(e);
                break;
            }
        }
        let e = match failed {
            Some(e) => e,
            None => frames.sink.finish().unwrap_err(),
        };
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    }
}
