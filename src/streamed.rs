//! Streamed: large plain pages of flat string and binary columns decompressed as a stream and
//! handed to parquet-rs's column reader in slices, instead of whole.
//!
//! parquet-rs decompresses a page whole before it decodes a value of it. Writers put fat
//! values in large pages: DuckDB a column chunk's values in one page (100 MB and more for a
//! chunk of 2,000 conversation histories), pyarrow 1024 values in a page (its page size is
//! checked every 1024 values), ~48 MB of 47 KB values. Decompressed whole, one such page
//! takes most of the call's bound. Here the pages of such a chunk are read compressed (the
//! chunk's codec is hidden from parquet-rs's page reader) and
//! - a PLAIN data page declaring at least `LARGE_PAGE` bytes is decompressed as a stream
//!   (Snappy by `snappy`, LZ4_RAW by `lz4`, GZIP, ZSTD and BROTLI by their crates' stream
//!   decoders) and handed on as V1 pages of about `SLICE` bytes of whole values each; its
//!   definition levels (decoded first: in V1 they lead the page, in V2 they are not
//!   compressed) are written again per slice, bit-packed (`hybrid`);
//! - a large dictionary page whose dictionary-encoded pages use its values once each, in
//!   order (indices 0, 1, 2, …: a dictionary grown by values unique to every row, as
//!   pyarrow's is before it falls back to plain pages after 1024 values), is handed on the
//!   same way, as the plain values of those pages: they are read ahead (their indices are
//!   small) and checked, and if any index is out of order they are read as usual;
//! - any other page (dictionary, dictionary-encoded, small) is decompressed whole, as
//!   parquet-rs would, into the size its header declares.
//!
//! Chunks compressed with ZSTD are read here whatever their column, their pages decompressed
//! whole with the reading thread's one decompression context (`frames::with_decompressor`):
//! parquet-rs makes a compression and a decompression context for every column chunk it reads,
//! which on inputs of many small files (a row group of 26 rows, 56 columns) cost more than the
//! pages' decompression.
//!
//! The rows and values decoded are the same; slices carry no statistics (the column reader
//! does not use them). Chunks of other codecs (LZ4 with Hadoop's framing, LZO), nested
//! columns, and inputs whose page headers are not checked (`guard`) are read by parquet-rs's
//! page reader as before.
//!
//! Every buffer is sized from the page header's declared uncompressed size, which the guard
//! checked, never from a length inside the stream (a Snappy preamble that disagrees with it is
//! corrupt; a value's length is checked against the bytes the page has left).
//!
//! Memory: per streamed column, its compressed page, one slice (`SLICE` bytes and room for the
//! levels of the rest of the page), the decoder's window (`DECODER`, BROTLI's `BROTLI_DECODER`)
//! and the page's levels (one byte each, at most `MAX_LEVELS`, and their encoded bytes while
//! they are decoded); the page decompressed whole, at its declared size, where a stream cannot
//! be decoded within the window; the pages read ahead after a dictionary, compressed, and their
//! levels, while they are checked. All of it accounted with the input's pages, before it is
//! allocated (`GuardedInput::page_held`).

use crate::guard::GuardedInput;
use crate::hybrid::{decode, decode_levels, encode_levels, max_levels_len};
use crate::lz4::Lz4Reader;
use crate::snappy::SnappyReader;
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, Type as PhysicalType};
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::serialized_reader::SerializedPageReader;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Pages declaring at least this many bytes uncompressed are large: streamed here, and decoded
/// as views without `sortBy` (`views`).
pub const LARGE_PAGE: u64 = 4 << 20;
/// The page size assumed when estimating an open reader's pages: the common writers' default
/// (parquet-rs, Arrow C++, hyparquet-writer).
pub const PAGE_ESTIMATE: u64 = 1 << 20;
/// The values a slice holds, at least (a value is never cut; one larger is a slice of its own).
pub const SLICE: usize = 1 << 20;
/// What a stream decoder holds besides: Snappy's and LZ4_RAW's window (about 1 MiB, `snappy`'s
/// and `lz4`'s), GZIP's (32 KiB), ZSTD's at most (`ZSTD_WINDOW_LOG`), and the read buffer.
const DECODER: usize = 4 << 20;
/// The largest window a ZSTD page is streamed with (4 MiB: writers' default levels use 512 KiB
/// to 2 MiB): a frame that declares more is decompressed whole, into its page's declared size.
const ZSTD_WINDOW_LOG: u32 = 22;
/// What BROTLI's stream decoder holds: its window may be 16 MiB (a stream's `WBITS` of 24, the
/// format's most), and the read buffer.
const BROTLI_DECODER: usize = (16 << 20) + (1 << 20);
/// The read buffer over a stream decoder.
const BUFFER: usize = 64 << 10;
/// Dictionary-encoded pages read ahead after a large dictionary page, at most.
const AHEAD: usize = 64;
/// Levels a streamed page may hold (one byte each while it is handed on): a page declaring more
/// (a header's claim, before anything backs it) is decompressed whole, as parquet-rs would.
const MAX_LEVELS: usize = 16 << 20;

/// What the streamed page readers of a row group did, for tests and reports.
#[derive(Default)]
pub struct Counts {
    /// Large pages handed on in slices (dictionary pages read as plain included).
    pub pages: AtomicUsize,
    /// Dictionary pages handed on as the plain values of the pages using them in order.
    pub dictionaries: AtomicUsize,
    /// Pages decompressed whole (dictionary, dictionary-encoded, small).
    pub whole: AtomicUsize,
}

/// Whether the pages of `column` (a chunk of `file`) are read by `reader`: large pages are
/// streamed (`streams`), or the chunk is ZSTD's.
pub fn reads(file: &GuardedInput, column: &ColumnChunkMetaData) -> bool {
    streams(file, column) || (matches!(column.compression(), Compression::ZSTD(_)) && file.checks_pages())
}

/// Whether the large pages of `column` (a chunk of `file`) are streamed in slices.
fn streams(file: &GuardedInput, column: &ColumnChunkMetaData) -> bool {
    streamable(column) && file.checks_pages()
}

/// Whether the large pages of `column` are streamed where the input's page headers are checked.
fn streamable(column: &ColumnChunkMetaData) -> bool {
    let d = column.column_descr();
    let codec = matches!(
        column.compression(),
        Compression::UNCOMPRESSED
            | Compression::SNAPPY
            | Compression::GZIP(_)
            | Compression::ZSTD(_)
            | Compression::BROTLI(_)
            | Compression::LZ4_RAW
    );
    codec
        && d.physical_type() == PhysicalType::BYTE_ARRAY
        && d.max_rep_level() == 0
        && d.max_def_level() <= 1
        && column.uncompressed_size() >= LARGE_PAGE as i64
}

/// What an open reader of `column` holds of its pages at most, by estimate (the footer has no
/// page sizes), for planning a merge straight from the inputs; `first_page`: the bytes the
/// chunk's first page (its dictionary page, if any) declares, where that was read (else 0). A
/// chunk whose first page is not large, one page as large as that one or `PAGE_ESTIMATE` (the
/// common writers' pages), at most the chunk; else, when its large pages stream, one page
/// compressed (at most the chunk compressed), a slice, the decoder and the page's levels, as
/// `hold_stream` accounts them, and otherwise the chunk uncompressed (a writer may put it in
/// one page: DuckDB does).
pub fn pages_estimate(column: &ColumnChunkMetaData, first_page: u64) -> u64 {
    let uncompressed = u64::try_from(column.uncompressed_size()).unwrap_or(0);
    if first_page < LARGE_PAGE || uncompressed < LARGE_PAGE {
        return first_page.max(PAGE_ESTIMATE).min(uncompressed);
    }
    if streamable(column) {
        let compressed = u64::try_from(column.compressed_size()).unwrap_or(u64::MAX).min(uncompressed);
        let levels = u64::try_from(column.num_values()).unwrap_or(0).saturating_mul(2);
        return compressed.saturating_add((decoder_bytes(column.compression()) + SLICE) as u64).saturating_add(levels);
    }
    uncompressed
}

/// The page reader of `column` when `streams` holds; `counts` counts what it streams.
pub fn reader(file: Arc<GuardedInput>, column: &ColumnChunkMetaData, rows: usize, counts: Arc<Counts>) -> Result<Box<dyn PageReader>> {
    let compressed = column.clone().into_builder().set_compression(Compression::UNCOMPRESSED).build()?;
    let pages = SerializedPageReader::new(file.clone(), &compressed, rows, None)?;
    let chunk = column.dictionary_page_offset().unwrap_or(column.data_page_offset()).max(0) as u64;
    file.stream_chunk(chunk);
    Ok(Box::new(Streamed {
        slices: streams(&file, column),
        pages: Box::new(pages),
        ahead: VecDeque::new(),
        file,
        chunk,
        codec: column.compression(),
        optional: column.column_descr().max_def_level() > 0,
        stash: None,
        slicing: None,
        counts,
    }))
}

struct Streamed {
    /// Large pages are handed on in slices (else every page is decompressed whole).
    slices: bool,
    /// The chunk's pages, compressed.
    pages: Box<dyn PageReader>,
    /// Pages read ahead, compressed, with the bytes their headers declare uncompressed.
    ahead: VecDeque<(Page, usize)>,
    file: Arc<GuardedInput>,
    chunk: u64,
    codec: Compression,
    /// The column has definition levels (at most 1: it is flat).
    optional: bool,
    /// The page `peek_next_page` produced.
    stash: Option<Page>,
    /// The large page being handed on.
    slicing: Option<Slicing>,
    counts: Arc<Counts>,
}

/// A large page's values, decompressed as they are read (and copied out of the decoder's own
/// buffer, or else a read buffer over it).
type Values = std::io::Take<Box<dyn BufRead + Send>>;

struct Slicing {
    values: Values,
    /// The page's definition levels (`None`: the column is required).
    levels: Option<Vec<bool>>,
    next: usize,
    total: usize,
    /// The largest value so far: a slice ends with the value that takes it past `SLICE`, and
    /// its buffer has room for one such value (not grown, and so copied, at its end).
    widest: usize,
}

fn general(msg: impl Into<String>) -> ParquetError {
    ParquetError::General(msg.into())
}

fn io(what: &str) -> impl Fn(std::io::Error) -> ParquetError + '_ {
    move |e| general(format!("{what}: {e}"))
}

/// What the stream decoder of `codec` holds besides its input (`DECODER`, or BROTLI's).
fn decoder_bytes(codec: Compression) -> usize {
    match codec {
        Compression::BROTLI(_) => BROTLI_DECODER,
        _ => DECODER,
    }
}

/// Told the bytes a page streamed after all is about to be decompressed whole into (before
/// that buffer is allocated), to account them.
type Whole = Box<dyn FnMut(usize) + Send>;

/// A stream decoder over a compressed page's bytes, which decompress to `declared` bytes (its
/// checked header's figure: no length inside the stream sizes a buffer): read out of its own
/// buffer (`snappy`, `lz4`, uncompressed bytes) or a read buffer over it. A stream that cannot
/// be decoded within the decoder's window (a Snappy back-reference past it, a ZSTD frame's
/// window over `ZSTD_WINDOW_LOG`) is decompressed whole into `declared` bytes, told to `whole`
/// first.
fn decoder(codec: Compression, data: Bytes, declared: usize, mut whole: Option<Whole>) -> Result<Box<dyn BufRead + Send>> {
    let buffered = |r: Box<dyn Read + Send>| -> Box<dyn BufRead + Send> { Box::new(BufReader::with_capacity(BUFFER, r)) };
    Ok(match codec {
        Compression::UNCOMPRESSED => Box::new(Cursor::new(data)),
        Compression::SNAPPY => {
            let r = SnappyReader::for_page(data, declared).map_err(io("snappy page"))?;
            Box::new(match whole {
                Some(whole) => r.on_whole(whole),
                None => r,
            })
        }
        Compression::LZ4_RAW => Box::new(Lz4Reader::new(data, declared)),
        Compression::GZIP(_) => buffered(Box::new(flate2::read::MultiGzDecoder::new(Cursor::new(data)))),
        Compression::BROTLI(_) => buffered(Box::new(brotli::Decompressor::new(Cursor::new(data), BUFFER))),
        Compression::ZSTD(_) => {
            let mut d = zstd::stream::read::Decoder::with_buffer(Cursor::new(data.clone())).map_err(io("zstd page"))?;
            d.window_log_max(ZSTD_WINDOW_LOG).map_err(io("zstd page"))?;
            let mut r = buffered(Box::new(d));
            // (the frame header is read, and its window checked, by the first read)
            match r.fill_buf() {
                Err(e) if e.to_string().contains("too much memory") => {
                    if let Some(f) = &mut whole {
                        f(declared);
                    }
                    Box::new(Cursor::new(decompressed(codec, data, declared, &[])?))
                }
                Err(e) => return Err(io("zstd page")(e)),
                Ok(_) => r,
            }
        }
        other => return Err(general(format!("{other} pages are not streamed"))),
    })
}

/// `declared` bytes decompressed from `data`, read as a stream (`whole`: see `decoder`).
fn stream(codec: Compression, data: Bytes, declared: usize, whole: Whole) -> Result<Values> {
    Ok(decoder(codec, data, declared, Some(whole))?.take(declared as u64))
}

/// `n` bytes of `values` appended to `buf`, copied straight out of the decoder's buffer.
fn append(values: &mut Values, buf: &mut Vec<u8>, n: usize) -> std::io::Result<()> {
    let mut left = n;
    while left > 0 {
        let available = values.fill_buf()?;
        if available.is_empty() {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the page ends"));
        }
        let k = available.len().min(left);
        buf.extend_from_slice(&available[..k]);
        values.consume(k);
        left -= k;
    }
    Ok(())
}

/// `prefix` followed by `data` decompressed whole into the `declared` bytes (`prefix`: a V2
/// page's levels, which are not compressed).
fn decompressed(codec: Compression, data: Bytes, declared: usize, prefix: &[u8]) -> Result<Bytes> {
    if codec == Compression::UNCOMPRESSED && prefix.is_empty() {
        return Ok(data);
    }
    if let (Compression::ZSTD(_), true) = (codec, prefix.is_empty()) {
        // (decompressed into the buffer as allocated: nothing to zero first)
        let mut out = Vec::with_capacity(declared);
        zstd_page(&data, &mut out, declared)?;
        return Ok(Bytes::from(out));
    }
    let len = prefix.len() + declared;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(prefix);
    out.resize(len, 0);
    let values = &mut out[prefix.len()..];
    match codec {
        Compression::UNCOMPRESSED if data.len() == declared => values.copy_from_slice(&data),
        Compression::SNAPPY => {
            let n = snap::raw::decompress_len(&data).map_err(|e| general(format!("snappy page: {e}")))?;
            if n != declared {
                return Err(general(format!("snappy page decodes to {n} bytes, its header declares {declared}")));
            }
            snap::raw::Decoder::new().decompress(&data, values).map_err(|e| general(format!("snappy page: {e}")))?;
        }
        Compression::ZSTD(_) => zstd_page(&data, values, declared)?,
        Compression::LZ4_RAW => {
            let n = lz4_flex::block::decompress_into(&data, values).map_err(|e| general(format!("lz4 page: {e}")))?;
            if n != declared {
                return Err(general(format!("lz4 page decodes to {n} bytes, its header declares {declared}")));
            }
        }
        _ => {
            let mut input = decoder(codec, data, declared, None)?;
            input.read_exact(values).map_err(io("page decompresses to fewer bytes than its header declares"))?;
            if input.read(&mut [0u8; 1]).map_err(io("page"))? > 0 {
                return Err(general(format!("page decompresses to more than the {declared} bytes its header declares")));
            }
        }
    }
    Ok(Bytes::from(out))
}

/// A ZSTD page decompressed into `out`, which it must fill: `declared` bytes.
fn zstd_page<C: zstd::zstd_safe::WriteBuf + ?Sized>(data: &[u8], out: &mut C, declared: usize) -> Result<()> {
    let n = crate::frames::with_decompressor(|d| d.decompress_to_buffer(data, out))
        .map_err(io("page decompresses to more bytes than its header declares, or is damaged"))?;
    if n != declared {
        return Err(general(format!("page decompresses to {n} bytes, its header declares {declared}")));
    }
    Ok(())
}

/// A V1 page's definition levels, read from the front of its stream: their length, then them
/// (`held` is told that length before they are read).
fn read_levels(values: &mut impl Read, n: usize, held: impl FnOnce(usize)) -> Result<Vec<bool>> {
    let mut len = [0u8; 4];
    values.read_exact(&mut len).map_err(io("page ends in its definition levels"))?;
    let len = u32::from_le_bytes(len) as usize;
    held(len);
    let mut data = Vec::new();
    values.take(len as u64).read_to_end(&mut data).map_err(io("definition levels"))?;
    if data.len() != len {
        return Err(general("page ends in its definition levels"));
    }
    decode_levels(&data, n).map_err(general)
}

fn dictionary_encoded(page: &Page) -> bool {
    !matches!(page, Page::DictionaryPage { .. }) && matches!(page.encoding(), Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY)
}

impl Streamed {
    /// The next page of the chunk, compressed: read ahead, or read now.
    fn read(&mut self) -> Result<Option<(Page, usize)>> {
        if let Some(page) = self.ahead.pop_front() {
            return Ok(Some(page));
        }
        let Some(page) = self.pages.get_next_page()? else {
            return Ok(None);
        };
        let declared = self.file.declared(self.chunk).and_then(|d| usize::try_from(d).ok()).unwrap_or(0);
        Ok(Some((page, declared)))
    }

    /// The next page of the chunk: a slice of the large page being handed on, or the next page read.
    fn next_page(&mut self) -> Result<Option<Page>> {
        if let Some(page) = self.stash.take() {
            return Ok(Some(page));
        }
        if self.slicing.as_ref().is_some_and(|s| s.next < s.total) {
            return self.slice().map(Some);
        }
        self.slicing = None;
        let Some((page, declared)) = self.read()? else {
            return Ok(None);
        };
        let large = self.slices && declared as u64 >= LARGE_PAGE;
        Ok(Some(match page {
            Page::DictionaryPage { buf, num_values, encoding, is_sorted } => {
                if large && matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                    if let Some((levels, total)) = self.used_in_order(num_values as usize)? {
                        self.counts.dictionaries.fetch_add(1, Ordering::Relaxed);
                        let held = self.hold_stream(buf.len(), total);
                        let values = stream(self.codec, buf, declared, Box::new(move |n| held(n)))?;
                        return self.begin(total, self.optional.then_some(levels), values).map(Some);
                    }
                }
                self.hold_whole(buf.len(), declared);
                self.file.dictionary_held(self.chunk, declared);
                Page::DictionaryPage { buf: decompressed(self.codec, buf, declared, &[])?, num_values, encoding, is_sorted }
            }
            Page::DataPage { buf, num_values, encoding, def_level_encoding, rep_level_encoding, statistics } => {
                if large
                    && num_values as usize <= MAX_LEVELS
                    && encoding == Encoding::PLAIN
                    && (!self.optional || def_level_encoding == Encoding::RLE)
                {
                    let held = self.hold_stream(buf.len(), num_values as usize);
                    let whole = held.clone();
                    let mut values = stream(self.codec, buf, declared, Box::new(move |n| whole(n)))?;
                    let levels = if self.optional {
                        // (the levels' encoded bytes held while they are decoded)
                        let levels = read_levels(&mut values, num_values as usize, |len| held(len))?;
                        held(0);
                        Some(levels)
                    } else {
                        None
                    };
                    return self.begin(num_values as usize, levels, values).map(Some);
                }
                self.hold_whole(buf.len(), declared);
                let buf = decompressed(self.codec, buf, declared, &[])?;
                Page::DataPage { buf, num_values, encoding, def_level_encoding, rep_level_encoding, statistics }
            }
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                num_nulls,
                num_rows,
                def_levels_byte_len,
                rep_levels_byte_len,
                is_compressed,
                statistics,
            } => {
                let levels_len = (def_levels_byte_len + rep_levels_byte_len) as usize;
                if levels_len > buf.len() || levels_len > declared {
                    return Err(general("V2 page: its levels are longer than the page"));
                }
                let (levels, values) = (buf.slice(..levels_len), buf.slice(levels_len..));
                let codec = if is_compressed { self.codec } else { Compression::UNCOMPRESSED };
                if large && num_values as usize <= MAX_LEVELS && encoding == Encoding::PLAIN && rep_levels_byte_len == 0 {
                    let held = self.hold_stream(buf.len(), num_values as usize);
                    let defined = if self.optional { Some(decode_levels(&levels, num_values as usize).map_err(general)?) } else { None };
                    let values = stream(codec, values, declared - levels_len, Box::new(move |n| held(n)))?;
                    return self.begin(num_values as usize, defined, values).map(Some);
                }
                self.hold_whole(buf.len(), declared);
                // Levels and values in one buffer, as the column reader takes a V2 page.
                let buf = if is_compressed { decompressed(codec, values, declared - levels_len, &levels)? } else { buf };
                Page::DataPageV2 {
                    buf,
                    num_values,
                    encoding,
                    num_nulls,
                    num_rows,
                    def_levels_byte_len,
                    rep_levels_byte_len,
                    is_compressed: false,
                    statistics,
                }
            }
        }))
    }

    /// Reads ahead the dictionary-encoded pages after a dictionary page of `entries` values.
    /// When every index they hold is the next one, from 0 on, their values are the
    /// dictionary's, in order: returns their definition levels (all true for a required
    /// column) and their count, and drops them. Otherwise they stay ahead, to be read as usual.
    fn used_in_order(&mut self, entries: usize) -> Result<Option<(Vec<bool>, usize)>> {
        let mut read = Vec::new();
        let (mut levels, mut next, mut in_order) = (Vec::new(), 0usize, true);
        while read.len() < AHEAD {
            let Some((page, declared)) = self.read()? else { break };
            let encoded = dictionary_encoded(&page);
            let too_many = levels.len().saturating_add(page.num_values() as usize) > MAX_LEVELS;
            read.push((page, declared));
            if !encoded {
                break;
            }
            if too_many {
                in_order = false;
                break;
            }
            let Some((page, declared)) = read.last() else { break };
            // (the pages read before it, compressed, and the levels so far, held meanwhile)
            let before: usize = read[..read.len() - 1].iter().map(|(p, _)| p.buffer().len()).sum();
            let (defined, indices) = self.indices(page, *declared, before + levels.len())?;
            let present = defined.iter().filter(|d| **d).count();
            let width = indices.first().copied().unwrap_or(0);
            let checked = decode(indices.get(1..).unwrap_or_default(), width, present, |i| {
                if i as usize == next && next < entries {
                    next += 1;
                    Ok(())
                } else {
                    Err(String::new())
                }
            });
            if checked.is_err() {
                in_order = false;
                break;
            }
            levels.extend(defined);
        }
        in_order &= read.len() < AHEAD || read.last().is_some_and(|(p, _)| !dictionary_encoded(p));
        if !in_order {
            self.ahead.extend(read);
            return Ok(None);
        }
        // The dictionary-encoded pages are done with; a page after them stays ahead.
        self.ahead.extend(read.into_iter().filter(|(p, _)| !dictionary_encoded(p)));
        self.file.dictionary_held(self.chunk, 0);
        let total = levels.len();
        Ok(Some((levels, total)))
    }

    /// A dictionary-encoded page's definition levels (all true for a required column) and
    /// encoded indices (their bit width first); `held`: what the reader holds besides (the
    /// pages read ahead before it and their levels), accounted with it.
    fn indices(&self, page: &Page, declared: usize, held: usize) -> Result<(Vec<bool>, Bytes)> {
        let n = page.num_values() as usize;
        match page {
            Page::DataPage { buf, .. } => {
                self.hold(held + buf.len() + declared + n);
                let data = decompressed(self.codec, buf.clone(), declared, &[])?;
                if !self.optional {
                    return Ok((vec![true; n], data));
                }
                let mut cursor = Cursor::new(&data[..]);
                let levels = read_levels(&mut cursor, n, |_| ())?;
                let at = cursor.position() as usize;
                Ok((levels, data.slice(at..)))
            }
            Page::DataPageV2 { buf, def_levels_byte_len, rep_levels_byte_len, is_compressed, .. } => {
                let levels_len = (def_levels_byte_len + rep_levels_byte_len) as usize;
                if levels_len > buf.len() || levels_len > declared || *rep_levels_byte_len != 0 {
                    return Err(general("V2 page: its levels are longer than the page"));
                }
                self.hold(held + buf.len() + declared + n);
                let codec = if *is_compressed { self.codec } else { Compression::UNCOMPRESSED };
                let data = decompressed(codec, buf.slice(levels_len..), declared - levels_len, &[])?;
                let levels = if self.optional { decode_levels(&buf[..levels_len], n).map_err(general)? } else { vec![true; n] };
                Ok((levels, data))
            }
            Page::DictionaryPage { .. } => Err(general("a second dictionary page in a column chunk")),
        }
    }

    /// The pages read ahead and not handed on yet, compressed.
    fn ahead_bytes(&self) -> usize {
        self.ahead.iter().map(|(p, _)| p.buffer().len()).sum()
    }

    /// Accounts `bytes` as what the chunk's reader holds now, with the pages it read ahead.
    fn hold(&self, bytes: usize) {
        self.file.page_held(self.chunk, bytes + self.ahead_bytes());
    }

    /// Accounts a page of `compressed` bytes decompressed whole into `declared` (before that
    /// buffer is allocated), and counts it.
    fn hold_whole(&self, compressed: usize, declared: usize) {
        self.hold(compressed + declared);
        self.counts.whole.fetch_add(1, Ordering::Relaxed);
    }

    /// Accounts a large page of `total` levels, `compressed` bytes, as streamed: before its
    /// decoder and slices are allocated — its compressed bytes, the decoder, a slice, the levels
    /// (one byte each) and their encoding for a slice. Returns what accounts more beside that
    /// (the levels' encoded bytes while they are read, the page decompressed whole where the
    /// decoder falls back to that).
    fn hold_stream(&mut self, compressed: usize, total: usize) -> Arc<dyn Fn(usize) + Send + Sync> {
        let base = compressed + decoder_bytes(self.codec) + SLICE + max_levels_len(total) + total + self.ahead_bytes();
        let (file, chunk) = (self.file.clone(), self.chunk);
        file.page_held(chunk, base);
        Arc::new(move |more| file.page_held(chunk, base + more))
    }

    /// Begins handing on a large page of `total` levels (`levels`: its definition levels).
    fn begin(&mut self, total: usize, levels: Option<Vec<bool>>, values: Values) -> Result<Page> {
        self.counts.pages.fetch_add(1, Ordering::Relaxed);
        self.slicing = Some(Slicing { values, levels, next: 0, total, widest: 0 });
        self.slice()
    }

    /// The next slice of the large page: its next levels, up to `SLICE` bytes of values.
    fn slice(&mut self) -> Result<Page> {
        let Some(s) = &mut self.slicing else {
            return Err(general("no page being streamed"));
        };
        let first = s.next;
        // Room before the values for the slice's levels and their length.
        let prefix = if s.levels.is_some() { 4 + max_levels_len(s.total - first) } else { 0 };
        let mut buf = Vec::with_capacity(prefix + SLICE + 4 + s.widest);
        buf.resize(prefix, 0);
        while s.next < s.total {
            if s.levels.as_ref().is_none_or(|l| l[s.next]) {
                if buf.len() - prefix >= SLICE {
                    break;
                }
                let mut len = [0u8; 4];
                s.values.read_exact(&mut len).map_err(io("page ends before its values"))?;
                let n = u32::from_le_bytes(len) as usize;
                // A corrupt length must not size a buffer: at most the bytes the page has left.
                let left = s.values.limit() as usize;
                if n > left {
                    return Err(general(format!("page declares a value of {n} bytes, {left} bytes before its end")));
                }
                buf.extend_from_slice(&len);
                s.widest = s.widest.max(n);
                buf.reserve(n);
                append(&mut s.values, &mut buf, n).map_err(io("page ends inside a value"))?;
            }
            s.next += 1;
        }
        let start = match &s.levels {
            Some(levels) => {
                let encoded = encode_levels(&levels[first..s.next]);
                let start = prefix - 4 - encoded.len();
                buf[start..start + 4].copy_from_slice(&(encoded.len() as u32).to_le_bytes());
                buf[start + 4..prefix].copy_from_slice(&encoded);
                start
            }
            None => 0,
        };
        let buf = Bytes::from(buf);
        Ok(Page::DataPage {
            buf: buf.slice(start..),
            num_values: (s.next - first) as u32,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        })
    }
}

/// What `PageReader::peek_next_page` tells of `page`.
pub fn metadata_of(page: &Page) -> PageMetadata {
    match page {
        Page::DataPageV2 { num_rows, num_values, .. } => {
            PageMetadata { num_rows: Some(*num_rows as usize), num_levels: Some(*num_values as usize), is_dict: false }
        }
        Page::DataPage { num_values, .. } => PageMetadata { num_rows: None, num_levels: Some(*num_values as usize), is_dict: false },
        Page::DictionaryPage { .. } => PageMetadata { num_rows: None, num_levels: None, is_dict: true },
    }
}

impl Iterator for Streamed {
    type Item = Result<Page>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_page().transpose()
    }
}

impl PageReader for Streamed {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        self.next_page()
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        if self.stash.is_none() {
            self.stash = self.next_page()?;
        }
        Ok(self.stash.as_ref().map(metadata_of))
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.next_page().map(drop)
    }
}
