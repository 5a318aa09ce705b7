//! Guard: the checks on hostile inputs that parquet-rs does not make before it allocates or
//! recurses on what a file *declares*. Every input is read through `GuardedInput`, a
//! `ChunkReader` that
//! - refuses any byte range beyond the end of the file before a buffer is sized for it
//!   (a column chunk or page claiming gigabytes would otherwise be allocated up front);
//! - reads each page header whole with the strict Thrift reader (`thrift`) before parquet-rs
//!   does: a header with a field repeated, a field under another wire type or anything it cannot
//!   read is refused (parquet-rs would read it by id, the last copy winning), and so is a page
//!   whose declared uncompressed size exceeds the call's page cap (parquet-rs sizes, and for
//!   snappy/lz4/zstd zero-fills, the decompression buffer from that field).
//!
//! `check_footer` reads the whole footer with the same strict reader before parquet-rs parses it
//! (fail closed: a footer it cannot read whole is refused), and checks the schema list as the
//! tree it declares, at most `MAX_SCHEMA_DEPTH` deep (parquet-rs builds it recursively: a deep
//! enough one overflows the stack, a crash, not a panic; a group claiming i32::MAX children is a
//! 16 GiB allocation). `check_metadata` refuses what parquet-rs parsed but trusts: column chunks
//! whose byte ranges are negative or outside the file (parquet-rs asserts on negative ones: a
//! panic), row groups of negative rows, a column without repetition whose chunk declares
//! other than one value per row, and a chunk declaring more values than its pages could hold. Assertions parquet-rs trips while decoding corrupt pages are
//! contained by `contain` and reported as corrupt input.
//!
//! Memory: one 8 KiB read buffer per header check, plus the footer's read buffer while it is
//! checked.

use crate::error::{CompactError, Result};
use crate::memory::{Accountant, Reservation};
use crate::testhooks::disabled;
use crate::thrift::Thrift;
use bytes::Bytes;
use parquet::errors::ParquetError;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{ChunkReader, Length};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Arc;

pub use crate::thrift::MAX_SCHEMA_DEPTH;

/// An input file read through the checks above, by positional reads on one descriptor per
/// input (`PositionalRead`): no descriptor is duplicated and no offset is seeked per page, as
/// reading through `std::fs::File`'s own `ChunkReader` does.
pub struct GuardedInput {
    file: Arc<File>,
    len: u64,
    page_cap: u64,
    enabled: bool,
    /// Where the pages whose headers were checked begin: parquet-rs, when it skips rows (a row
    /// selection), peeks a header and later reads the page body from there.
    bodies: std::sync::Mutex<std::collections::HashSet<u64>>,
    /// The column chunks the footer declares (start, end, uncompressed bytes), by start, once
    /// `check_metadata` has seen them (shared by every handle on the input).
    chunks: Arc<std::sync::OnceLock<Vec<(u64, u64, u64)>>>,
    /// With `account_pages`: the pages its readers hold, accounted (shared by its clones).
    pages: Option<Arc<PageAccount>>,
    /// The column chunks whose pages `streamed` decompresses (by start), each with the
    /// uncompressed bytes its latest page header declares.
    streamed: Arc<std::sync::Mutex<HashMap<u64, u64>>>,
    /// A file no larger than `FOOTER_READ` whole, as `read_footer` read it: its pages are read
    /// from it, with no further read of the file (accounted with `account_pages`).
    whole: Arc<std::sync::OnceLock<(Bytes, Option<Reservation>)>>,
    /// The file's device and inode (Unix): the same file under two names is one file.
    identity: Option<(u64, u64)>,
}

impl GuardedInput {
    /// `page_cap`: the largest uncompressed page accepted.
    pub fn new(file: File, page_cap: u64) -> std::io::Result<Self> {
        let meta = file.metadata()?;
        let len = meta.len();
        let identity = crate::os::file_identity(&meta);
        Ok(GuardedInput {
            file: Arc::new(file),
            len,
            page_cap,
            enabled: !disabled("input"),
            bodies: Default::default(),
            chunks: Default::default(),
            pages: None,
            streamed: Default::default(),
            whole: Default::default(),
            identity,
        })
    }

    /// The file's identity (device, inode) where the platform gives one.
    pub fn identity(&self) -> Option<(u64, u64)> {
        self.identity
    }

    /// The largest uncompressed page accepted (batchBytes + 64 MiB for inputs).
    pub fn page_cap(&self) -> u64 {
        self.page_cap
    }

    /// The uncompressed bytes the page header at `start` declares (`None` when unreadable: the
    /// page is then checked, and reported, when it is read).
    pub fn page_size_at(&self, start: u64) -> Option<u64> {
        let left = self.len.checked_sub(start)?.min(MAX_PAGE_HEADER);
        let input = BufReader::new(PositionalRead::new(self.file.clone(), start));
        Thrift::new(input, left).page_header().ok().map(|sizes| sizes.uncompressed)
    }

    /// Another handle on the same descriptor (positional reads share no offset).
    pub fn try_clone(&self) -> std::io::Result<Self> {
        Ok(GuardedInput {
            file: self.file.clone(),
            len: self.len,
            page_cap: self.page_cap,
            enabled: self.enabled,
            bodies: Default::default(),
            chunks: self.chunks.clone(),
            pages: self.pages.clone(),
            streamed: self.streamed.clone(),
            whole: self.whole.clone(),
            identity: self.identity,
        })
    }

    /// The footer's bytes (the Thrift `FileMetaData`), read with the file's tail in one
    /// positional read where it is small, checked whole by the strict reader (`check_footer`)
    /// unless `known` is the hash of the same bytes checked before (a later stage of the call
    /// reading an input its plan read: `InputSummary::footer_hash`), with their hash. What
    /// parquet-rs parses are these bytes, the ones checked: not a second reading of the file.
    pub fn read_footer(&self, path: &Path, known: Option<u128>) -> Result<(Vec<u8>, u128)> {
        let (bytes, whole) = footer_bytes(&self.file, self.len).map_err(|msg| CompactError::corrupt(path, None, msg))?;
        if let Some(whole) = whole {
            let held = self.pages.as_ref().and_then(|p| p.held.lock().ok().map(|h| h.0.accountant().hold(whole.len())));
            let _ = self.whole.set((whole, held));
        }
        let hash = twox_hash::xxhash3_128::Hasher::oneshot(&bytes);
        if self.enabled && known != Some(hash) {
            check_footer(&bytes).map_err(|msg| CompactError::corrupt(path, None, msg))?;
        }
        Ok((bytes, hash))
    }

    /// Checks what parquet-rs trusts in a parsed footer: every column chunk's byte range must
    /// be non-negative and inside the file (`byte_range` asserts on a negative one: a panic).
    pub fn check_metadata(&self, path: &Path, meta: &ParquetMetaData) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let mut chunks = Vec::new();
        for (g, rg) in meta.row_groups().iter().enumerate() {
            if rg.num_rows() < 0 {
                return Err(CompactError::corrupt(path, None, format!("row group {g} declares {} rows", rg.num_rows())));
            }
            for col in rg.columns() {
                let start = col.dictionary_page_offset().unwrap_or(col.data_page_offset());
                let len = col.compressed_size();
                let inside = start >= 0 && len >= 0 && (start as u64).checked_add(len as u64).is_some_and(|end| end <= self.len);
                if !inside || col.data_page_offset() < 0 || col.num_values() < 0 {
                    return Err(CompactError::corrupt(
                        path,
                        Some(col.column_path().string()),
                        format!(
                            "row group {g}: column chunk declares {len} bytes at offset {start}, outside the file ({} bytes)",
                            self.len
                        ),
                    ));
                }
                // A column without repetition holds one value (or null) per row: a chunk declaring
                // another count would be read short (rows lost) or sized by its claim.
                if col.column_descr().max_rep_level() == 0 && col.num_values() != rg.num_rows() {
                    return Err(CompactError::corrupt(
                        path,
                        Some(col.column_path().string()),
                        format!("row group {g}: column chunk declares {} values for {} rows", col.num_values(), rg.num_rows()),
                    ));
                }
                // A repeated column's pages each hold at most i32::MAX values (their headers'
                // counts are 32-bit) and take at least `MIN_PAGE` bytes: a chunk claiming more
                // values than that is a claim its bytes cannot back (its count sizes estimates).
                let most = (len as u64 / MIN_PAGE).max(1).saturating_mul(i32::MAX as u64);
                if col.num_values() as u64 > most {
                    return Err(CompactError::corrupt(
                        path,
                        Some(col.column_path().string()),
                        format!("row group {g}: column chunk declares {} values in {len} bytes", col.num_values()),
                    ));
                }
                chunks.push((start as u64, start as u64 + len as u64, col.uncompressed_size().max(0) as u64));
            }
        }
        chunks.sort_unstable();
        let _ = self.chunks.set(chunks);
        Ok(())
    }

    /// The largest uncompressed page accepted at `start`: the call's page cap, or more for a page
    /// of a column chunk whose footer declares that much uncompressed (writers such as DuckDB
    /// put a whole chunk in one page), as long as the page expands at most `MAX_PAGE_RATIO`
    /// times its compressed size — a claim no codec's output can back is still refused before
    /// anything is allocated for it.
    fn page_limit(&self, start: u64, compressed: u64) -> u64 {
        page_limit(self.page_cap, self.chunks.get().map(Vec::as_slice).unwrap_or_default(), start, compressed)
    }

    /// Reads the page header at the reader's position and checks its sizes, then moves the
    /// reader back to the header's start (within its buffer: no new read) for parquet-rs.
    fn check_page_header(&self, start: u64, input: &mut PageRead) -> std::result::Result<(), String> {
        let left = self.len.saturating_sub(start).min(MAX_PAGE_HEADER);
        let mut thrift = Thrift::new(&mut *input, left);
        let sizes = thrift.page_header();
        let consumed = left - thrift.left;
        let sizes = sizes.map_err(|e| format!("unreadable page header at offset {start}: {e}"))?;
        let (uncompressed, compressed, dictionary) = (sizes.uncompressed, sizes.compressed, sizes.dictionary());
        let limit = self.page_limit(start, compressed);
        if uncompressed > limit {
            return Err(format!(
                "page at offset {start} declares {uncompressed} bytes uncompressed, more than the {limit} a page may hold here (batchBytes + 64 MiB, or its column chunk's declared size when its compressed bytes can back it)"
            ));
        }
        if compressed > self.len.saturating_sub(start) {
            return Err(format!("page at offset {start} declares {compressed} bytes, past the end of the file ({} bytes)", self.len));
        }
        // An empty body (a dictionary page of no values) starts where the next header does: that
        // header is still to be checked when it is read, so only bodies of some bytes are noted.
        if compressed > 0 {
            if let Ok(mut bodies) = self.bodies.lock() {
                bodies.insert(start + consumed);
            }
        }
        let chunk = self.chunk_at(start);
        // A streamed chunk's pages are read compressed; `streamed` accounts what it decompresses.
        let streamed =
            chunk.is_some_and(|c| self.streamed.lock().map(|mut s| s.get_mut(&c).map(|d| *d = uncompressed).is_some()).unwrap_or(false));
        if let (Some(account), Some(chunk)) = (&self.pages, chunk) {
            if streamed {
                account.page(chunk, compressed, None);
            } else {
                account.page(chunk, uncompressed + compressed, dictionary.then_some(uncompressed));
            }
        }
        input.back(consumed).map_err(|e| e.to_string())
    }

    /// Where the column chunk holding `start` begins.
    fn chunk_at(&self, start: u64) -> Option<u64> {
        let chunks = self.chunks.get()?;
        let i = chunks.partition_point(|c| c.0 <= start);
        i.checked_sub(1).and_then(|i| chunks.get(i)).filter(|c| start < c.1).map(|c| c.0)
    }

    /// From now on, the pages read through this input (and its clones) are accounted with
    /// `memory`: per column chunk its latest page (compressed and decompressed) and its decoded
    /// dictionary, by the sizes the page headers declare — for a chunk read by `streamed`
    /// (`stream_chunk`) the compressed page, and what `streamed` says it holds besides.
    pub fn account_pages(&mut self, memory: &Accountant) {
        self.pages = Some(Arc::new(PageAccount { held: std::sync::Mutex::new((memory.reservation(), HashMap::new())) }));
    }

    /// The decoded dictionary of the column chunk starting at byte `chunk` is no longer held
    /// (`chunks`: the chunk fell back to plain pages).
    pub fn release_dictionary(&self, chunk: u64) {
        if let Some(account) = &self.pages {
            account.release_dictionary(chunk);
        }
    }

    /// Whether page headers are checked and the column chunks known: `streamed` relies on both
    /// (the sizes it decompresses to are the checked, declared ones).
    pub fn checks_pages(&self) -> bool {
        self.enabled && self.chunks.get().is_some()
    }

    /// The pages of the column chunk starting at byte `chunk` are read compressed and
    /// decompressed by `streamed`, which accounts what it holds (`page_held`).
    pub fn stream_chunk(&self, chunk: u64) {
        if let Ok(mut s) = self.streamed.lock() {
            s.insert(chunk, 0);
        }
    }

    /// The uncompressed bytes the latest page header read in the streamed chunk `chunk` declares.
    pub fn declared(&self, chunk: u64) -> Option<u64> {
        self.streamed.lock().ok()?.get(&chunk).copied()
    }

    /// The column chunk starting at byte `chunk` now holds a decoded dictionary of `bytes`.
    pub fn dictionary_held(&self, chunk: u64, bytes: usize) {
        if let Some(account) = &self.pages {
            account.update(chunk, |entry| entry.0 = bytes as u64);
        }
    }

    /// The latest page of the column chunk starting at byte `chunk` now holds `bytes`.
    pub fn page_held(&self, chunk: u64, bytes: usize) {
        if let Some(account) = &self.pages {
            account.page(chunk, bytes as u64, None);
        }
    }

    /// The row group being read is done with: its pages are no longer held.
    pub fn release_pages(&self) {
        if let Some(account) = &self.pages {
            account.clear();
        }
    }
}

/// Pages an input's column readers hold, by column chunk: (decoded dictionary, latest page).
struct PageAccount {
    held: std::sync::Mutex<(Reservation, ChunkPages)>,
}

/// Per column chunk (by its first byte): its decoded dictionary's bytes, and its latest page's.
type ChunkPages = HashMap<u64, (u64, u64)>;

impl PageAccount {
    fn page(&self, chunk: u64, bytes: u64, dictionary: Option<u64>) {
        self.update(chunk, |entry| {
            entry.1 = bytes;
            if let Some(d) = dictionary {
                entry.0 = d;
            }
        });
    }

    fn release_dictionary(&self, chunk: u64) {
        self.update(chunk, |entry| entry.0 = 0);
    }

    fn update(&self, chunk: u64, change: impl FnOnce(&mut (u64, u64))) {
        if let Ok(mut held) = self.held.lock() {
            let (reservation, chunks) = &mut *held;
            change(chunks.entry(chunk).or_default());
            let total: u64 = chunks.values().map(|(d, p)| d + p).sum();
            reservation.resize(usize::try_from(total).unwrap_or(usize::MAX));
        }
    }

    fn clear(&self) {
        if let Ok(mut held) = self.held.lock() {
            held.0.free();
            held.1.clear();
        }
    }
}

/// `GuardedInput::page_limit` over `chunks` (start, end, uncompressed bytes; sorted by start).
fn page_limit(page_cap: u64, chunks: &[(u64, u64, u64)], start: u64, compressed: u64) -> u64 {
    let i = chunks.partition_point(|c| c.0 <= start);
    let declared = i.checked_sub(1).and_then(|i| chunks.get(i)).filter(|c| start < c.1).map(|c| c.2);
    let backed = compressed.max(1).saturating_mul(MAX_PAGE_RATIO);
    page_cap.max(declared.unwrap_or(0).min(backed).min(MAX_PAGE))
}

/// How many times its compressed size a page may expand to beyond the call's page cap (zstd
/// reaches a few hundred on repetitive text).
const MAX_PAGE_RATIO: u64 = 4096;
/// No page is larger than this (Parquet's page sizes are 32-bit).
const MAX_PAGE: u64 = i32::MAX as u64;

/// The fewest bytes a page takes: a header holding its type, sizes and value count, and a byte.
const MIN_PAGE: u64 = 8;

/// The largest page header accepted (headers carry sizes, encodings and optional statistics).
const MAX_PAGE_HEADER: u64 = 16 << 20;

impl Length for GuardedInput {
    fn len(&self) -> u64 {
        self.len
    }
}

/// A reader at an offset of a shared file, reading with `pread` (`FileExt::read_at`).
pub struct PositionalRead {
    file: Arc<File>,
    pos: u64,
}

impl PositionalRead {
    pub fn new(file: Arc<File>, pos: u64) -> Self {
        PositionalRead { file, pos }
    }
}

impl Read for PositionalRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = read_at(&self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl std::io::Seek for PositionalRead {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            std::io::SeekFrom::Start(p) => Some(p),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            std::io::SeekFrom::End(_) => None,
        };
        self.pos = target.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek outside the file"))?;
        Ok(self.pos)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

/// Fills `buf` from offset `at`, or fails with `UnexpectedEof`.
fn read_exact_at(file: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match read_at(file, buf, at) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                at += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// What parquet-rs reads a page through: the file (buffered positional reads), or a small file
/// held whole (`GuardedInput::whole`).
pub enum PageRead {
    File(BufReader<PositionalRead>),
    Memory(std::io::Cursor<Bytes>),
}

impl Read for PageRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            PageRead::File(r) => r.read(buf),
            PageRead::Memory(r) => r.read(buf),
        }
    }
}

impl PageRead {
    /// Moves back `n` bytes (within the buffer: no new read).
    fn back(&mut self, n: u64) -> std::io::Result<()> {
        match self {
            PageRead::File(r) => r.seek_relative(-(n as i64)),
            PageRead::Memory(r) => {
                let at = r.position().checked_sub(n).ok_or_else(|| std::io::Error::other("moved back before the start"))?;
                r.set_position(at);
                Ok(())
            }
        }
    }
}

impl ChunkReader for GuardedInput {
    type T = PageRead;

    /// parquet-rs reads page headers through this, and the file's last 8 bytes (footer length
    /// and magic), which are too short to hold a page header claiming anything. The header is
    /// read through the same buffered handle that is handed on.
    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let mut input = match self.whole.get().filter(|(w, _)| start <= w.len() as u64) {
            Some((whole, _)) => {
                let mut c = std::io::Cursor::new(whole.clone());
                c.set_position(start);
                PageRead::Memory(c)
            }
            None => PageRead::File(BufReader::new(PositionalRead::new(self.file.clone(), start))),
        };
        let body = self.bodies.lock().map(|b| b.contains(&start)).unwrap_or(false);
        if self.enabled && !body && start.saturating_add(8) < self.len {
            self.check_page_header(start, &mut input).map_err(ParquetError::General)?;
        }
        Ok(input)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        if self.enabled && start.checked_add(length as u64).is_none_or(|end| end > self.len) {
            return Err(ParquetError::EOF(format!(
                "{length} bytes at offset {start} declared, past the end of the file ({} bytes)",
                self.len
            )));
        }
        if let Some((whole, _)) = self.whole.get() {
            if let Some(end) = start.checked_add(length as u64).filter(|end| *end <= whole.len() as u64) {
                return Ok(whole.slice(start as usize..end as usize));
            }
        }
        let mut buffer = vec![0u8; length];
        read_exact_at(&self.file, &mut buffer, start).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => ParquetError::EOF(format!("{length} bytes at offset {start}: the file ends before")),
            _ => ParquetError::External(Box::new(e)),
        })?;
        Ok(Bytes::from(buffer))
    }
}

/// The bytes of the footer's Thrift `FileMetaData`: the file's last 64 KiB are read at once
/// (the footer of a small file, with its length and magic), a longer footer after them; and a
/// file that read covered whole, whole.
fn footer_bytes(file: &File, len: u64) -> std::result::Result<(Vec<u8>, Option<Bytes>), String> {
    if len < 12 {
        return Err(format!("{len} bytes: too short for a Parquet file"));
    }
    let tail_len = len.min(FOOTER_READ);
    let mut tail = vec![0u8; tail_len as usize];
    read_exact_at(file, &mut tail, len - tail_len).map_err(|e| format!("cannot read the footer: {e}"))?;
    let end = tail.len();
    if &tail[end - 4..] != b"PAR1" {
        return Err("no Parquet magic at the end (encrypted footers are not read)".into());
    }
    let footer_len = u64::from(u32::from_le_bytes([tail[end - 8], tail[end - 7], tail[end - 6], tail[end - 5]]));
    if footer_len + 8 > len - 4 {
        return Err(format!("footer declares {footer_len} bytes, more than the file's {len} hold"));
    }
    if footer_len + 8 <= tail_len {
        let footer = tail[end - 8 - footer_len as usize..end - 8].to_vec();
        let whole = (tail_len == len).then(|| Bytes::from(tail));
        return Ok((footer, whole));
    }
    let mut footer = vec![0u8; footer_len as usize];
    read_exact_at(file, &mut footer, len - 8 - footer_len).map_err(|e| format!("cannot read the footer: {e}"))?;
    Ok((footer, None))
}

/// The footer read in one go with the file's tail (most footers of small files are a few KB).
const FOOTER_READ: u64 = 64 << 10;

/// Reads the footer whole with the strict reader (`thrift`): one reading of every field, its
/// schema the tree it declares and at most `MAX_SCHEMA_DEPTH` deep. A footer it cannot read whole
/// is refused: nothing it has not checked reaches parquet-rs.
fn check_footer(footer: &[u8]) -> std::result::Result<(), String> {
    let mut r = Thrift::new(footer, footer.len() as u64);
    r.file_metadata().map(|_| ()).map_err(|e| format!("footer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_may_be_as_large_as_its_chunk_declares_when_its_compressed_bytes_back_it() {
        let cap = 100;
        // chunks at [0, 50) declaring 10,000 bytes uncompressed and [50, 90) declaring 60
        let chunks = [(0, 50, 10_000), (50, 90, 60)];
        // a whole chunk in one page (as DuckDB writes them): accepted up to the chunk's size
        assert_eq!(page_limit(cap, &chunks, 0, 40), 10_000);
        assert_eq!(page_limit(cap, &chunks, 10, 40), 10_000);
        // a chunk declaring less than the cap: the cap
        assert_eq!(page_limit(cap, &chunks, 50, 30), cap);
        // a claim its compressed bytes cannot back (a page bomb): the cap
        assert_eq!(page_limit(cap, &chunks, 0, 1), MAX_PAGE_RATIO.max(cap));
        assert_eq!(page_limit(cap, &[(0, 50, 1 << 40)], 0, 0), MAX_PAGE_RATIO);
        // outside every chunk, or before `check_metadata`: the cap
        assert_eq!(page_limit(cap, &chunks, 95, 40), cap);
        assert_eq!(page_limit(cap, &[], 0, 40), cap);
    }
}
