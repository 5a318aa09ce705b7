//! Snappy: a raw Snappy stream (the block format of Parquet's SNAPPY codec) decoded as a reader
//! that keeps only a window of its output, so that a large page can be handed on in slices
//! (`streamed`) without ever being whole in memory.
//!
//! The `snap` crate decodes raw Snappy only whole, into a buffer of the declared length. The
//! format (Snappy's `format_description.txt`) is a length preamble and a sequence of literals
//! and back-references; the compressors writers use (Snappy's own, and the `snap` and Go
//! ports) compress independent 64 KiB blocks, so a back-reference reaches at most 64 KiB back.
//! A stream that reaches further than the window kept is not an error: it is decoded again,
//! whole, by `snap`, from its start, and handed on from where the reader had got to.
//!
//! The length a stream's preamble declares sizes nothing by itself: a page's stream
//! (`for_page`) must declare the length its checked page header declares (else it is corrupt),
//! and any stream at most what its bytes can decode to (`MAX_EXPANSION`). The whole-stream
//! fallback tells its owner the bytes it is about to allocate (`on_whole`) before it does.
//!
//! Memory: the window (`WINDOW`), output read but not yet dropped (less than `window::DROP`), plus
//! output decoded but not read yet (`READ_AHEAD` and the element that passes it); the whole decoded
//! stream (its declared length, told to `on_whole` first) only when it reaches further back.

use crate::hybrid::varint;
use crate::window::{copy_back, read_buffered, Window};
use bytes::Bytes;
use std::io::{BufRead, Error, ErrorKind, Read};

/// Output kept for back-references: twice what Snappy's compressors reach back.
const WINDOW: usize = 128 << 10;
/// Output decoded at once when a read finds none left (`fill_buf`).
const READ_AHEAD: usize = 64 << 10;
/// The most bytes one input byte of a Snappy stream decodes to: a copy with a 2-byte offset
/// (3 bytes) of 64 bytes, 21⅓ (Snappy's `format_description.txt`).
pub const MAX_EXPANSION: usize = 22;

/// Told the bytes the whole-stream fallback is about to allocate, before it does.
type OnWhole = Box<dyn FnMut(usize) + Send>;

/// A raw Snappy stream, read as its decoded bytes.
pub struct SnappyReader {
    input: Bytes,
    /// The next input byte.
    at: usize,
    /// The output kept (`WINDOW` of it for back-references).
    window: Window,
    /// The length the preamble declares.
    declared: usize,
    /// The stream decoded whole (a back-reference reached past the window), and how far it is read.
    whole: Option<(Vec<u8>, usize)>,
    on_whole: Option<OnWhole>,
}

/// How decoding one element went wrong.
enum Stop {
    /// A back-reference reaches past the window: decode whole.
    Far,
    Corrupt(String),
}

/// The length a stream's preamble declares, and where its elements start.
fn preamble(input: &[u8]) -> std::io::Result<(usize, usize)> {
    let mut at = 0;
    let declared = varint(input, &mut at).ok_or_else(|| Error::new(ErrorKind::InvalidData, "snappy: unreadable length"))?;
    let declared = usize::try_from(declared).map_err(|_| Error::new(ErrorKind::InvalidData, "snappy: length too large"))?;
    Ok((declared, at))
}

fn corrupt(what: impl Into<String>) -> Stop {
    Stop::Corrupt(what.into())
}

impl SnappyReader {
    /// A raw Snappy stream, of the length its preamble declares: at most what its bytes can
    /// decode to (`MAX_EXPANSION` per byte).
    pub fn new(input: Bytes) -> std::io::Result<Self> {
        let (declared, at) = preamble(&input)?;
        let most = input.len().saturating_mul(MAX_EXPANSION);
        if declared > most {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!("snappy: the stream declares {declared} bytes, more than its {} bytes can decode to", input.len()),
            ));
        }
        Ok(SnappyReader { input, at, window: Window::default(), declared, whole: None, on_whole: None })
    }

    /// A page's raw Snappy stream, which decodes to the `declared` bytes its (checked) page
    /// header declares: a preamble that declares another length is corrupt.
    pub fn for_page(input: Bytes, declared: usize) -> std::io::Result<Self> {
        let (preamble, _) = preamble(&input)?;
        if preamble != declared {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!("snappy: the stream declares {preamble} bytes, its page header {declared}"),
            ));
        }
        SnappyReader::new(input)
    }

    /// `f` is told the bytes the whole-stream fallback is about to allocate, before it does
    /// (the stream's declared length), so that its owner accounts them.
    pub fn on_whole(mut self, f: impl FnMut(usize) + Send + 'static) -> Self {
        self.on_whole = Some(Box::new(f));
        self
    }

    /// The decoded length the stream declares.
    pub fn declared(&self) -> usize {
        self.declared
    }

    fn produced(&self) -> usize {
        self.window.produced()
    }

    fn done(&self) -> bool {
        self.at >= self.input.len()
    }

    /// Decodes literals and back-references onto `out` until it holds `until` bytes or the
    /// stream ends. A short element is copied as 16 bytes and cut back (one fixed-size copy
    /// instead of a call for a few bytes), where the input or the output holds 16 to copy.
    fn decode(&mut self, until: usize) -> Result<(), Stop> {
        let SnappyReader { input, at, window, declared, .. } = self;
        let Window { out, dropped, .. } = window;
        let input: &[u8] = input;
        // The most `out` may hold: what the stream declares, less what was dropped.
        let limit = declared.saturating_sub(*dropped);
        let ends = || corrupt("snappy: stream ends inside an element");
        let over = |declared: usize| corrupt(format!("snappy: decodes to more than the {declared} bytes declared"));
        let mut i = *at;
        while out.len() < until && i < input.len() {
            let tag = input[i];
            i += 1;
            let (offset, len) = match tag & 3 {
                0 => {
                    let mut len = usize::from(tag >> 2);
                    if len >= 60 {
                        let extra = len - 59;
                        let bytes = input.get(i..i + extra).ok_or_else(ends)?;
                        len = bytes.iter().rev().fold(0usize, |v, b| (v << 8) | usize::from(*b));
                        i += extra;
                    }
                    let len = len + 1;
                    if out.len() + len > limit {
                        *at = i;
                        return Err(over(*declared));
                    }
                    if len <= 16 && i + 16 <= input.len() {
                        let old = out.len();
                        out.extend_from_slice(&input[i..i + 16]);
                        out.truncate(old + len);
                    } else {
                        out.extend_from_slice(input.get(i..i + len).ok_or_else(ends)?);
                    }
                    i += len;
                    continue;
                }
                1 => {
                    let low = *input.get(i).ok_or_else(ends)?;
                    i += 1;
                    ((usize::from(tag >> 5) << 8) | usize::from(low), 4 + usize::from((tag >> 2) & 7))
                }
                2 => {
                    let b = input.get(i..i + 2).ok_or_else(ends)?;
                    i += 2;
                    (usize::from(u16::from_le_bytes([b[0], b[1]])), 1 + usize::from(tag >> 2))
                }
                _ => {
                    let b = input.get(i..i + 4).ok_or_else(ends)?;
                    i += 4;
                    (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 1 + usize::from(tag >> 2))
                }
            };
            if out.len() + len > limit {
                *at = i;
                return Err(over(*declared));
            }
            let produced = *dropped + out.len();
            if offset == 0 || offset > produced {
                *at = i;
                return Err(corrupt(format!("snappy: back-reference {offset} bytes before byte {produced}")));
            }
            if offset > out.len() {
                *at = i;
                return Err(Stop::Far);
            }
            copy_back::<16>(out, offset, len);
        }
        *at = i;
        Ok(())
    }

    /// Decodes the stream again, whole, and goes on from the bytes already read.
    /// The buffer is the declared length (checked when the reader was made), told first.
    fn decode_whole(&mut self) -> std::io::Result<()> {
        if let Some(f) = &mut self.on_whole {
            f(self.declared);
        }
        let mut whole = vec![0u8; self.declared];
        let n = snap::raw::Decoder::new().decompress(&self.input, &mut whole).map_err(|e| Error::new(ErrorKind::InvalidData, e))?;
        if n != self.declared {
            return Err(Error::new(ErrorKind::InvalidData, format!("snappy: decodes to {n} bytes, {} declared", self.declared)));
        }
        let position = self.window.dropped + self.window.read;
        self.window = Window::default();
        self.whole = Some((whole, position));
        Ok(())
    }
}

impl BufRead for SnappyReader {
    /// The decoded bytes not read yet, decoding more (up to `READ_AHEAD`) when there are none.
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.whole.is_none() && self.window.all_read() && !self.done() {
            match self.decode(self.window.read + READ_AHEAD) {
                Ok(()) => {}
                Err(Stop::Far) => self.decode_whole()?,
                Err(Stop::Corrupt(e)) => return Err(Error::new(ErrorKind::InvalidData, e)),
            }
        }
        if let Some((whole, position)) = &self.whole {
            return Ok(whole.get(*position..).unwrap_or_default());
        }
        if self.done() && self.produced() != self.declared {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!("snappy: decodes to {} bytes, {} declared", self.produced(), self.declared),
            ));
        }
        Ok(self.window.unread())
    }

    fn consume(&mut self, n: usize) {
        match &mut self.whole {
            Some((_, position)) => *position += n,
            None => self.window.consume(n, WINDOW),
        }
    }
}

impl Read for SnappyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        read_buffered(self, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::window::testdata::{read_all, text};
    use crate::window::DROP;

    #[test]
    fn decodes_what_snap_encodes_in_any_read_size_and_drops_its_window() {
        let data = text(5 << 20);
        let compressed = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        for chunk in [1, 7, 4096, 1 << 20] {
            let mut r = SnappyReader::new(Bytes::from(compressed.clone())).unwrap();
            assert_eq!(r.declared(), data.len());
            let mut out = Vec::new();
            let mut buf = vec![0u8; chunk];
            let mut most = 0;
            loop {
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
                most = most.max(r.window.out.capacity());
            }
            assert!(out == data, "read size {chunk}");
            assert!(r.window.dropped > 0 && r.whole.is_none(), "the window slid and the stream never needed decoding whole");
            assert!(most <= 2 * (WINDOW + DROP + READ_AHEAD + chunk), "kept {most} bytes at read size {chunk}");
        }
    }

    /// A stream whose back-reference reaches further than the window, and what it decodes to:
    /// the literal at the start is repeated after `2 × (WINDOW + DROP)` bytes; its preamble
    /// declares `declared` (else its true length).
    fn far_stream(declared: Option<usize>) -> (Vec<u8>, Vec<u8>) {
        let head = text(100);
        let middle = vec![b'x'; 2 * (WINDOW + DROP)];
        let mut data = head.clone();
        data.extend_from_slice(&middle);
        data.extend_from_slice(&head[..64]);
        // Preamble, a literal of `head`, runs of 'x' by overlapping copies, then a far copy.
        let mut s = Vec::new();
        let mut n = declared.unwrap_or(data.len());
        while n >= 0x80 {
            s.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        s.push(n as u8);
        s.push(60 << 2);
        s.push((head.len() - 1) as u8);
        s.extend_from_slice(&head);
        s.push(0); // a literal of one byte
        s.push(b'x');
        let mut left = middle.len() - 1;
        while left > 0 {
            let len = left.min(64);
            s.push(((len - 1) as u8) << 2 | 2);
            s.extend_from_slice(&1u16.to_le_bytes());
            left -= len;
        }
        s.push((63u8 << 2) | 3);
        s.extend_from_slice(&((middle.len() + 100) as u32).to_le_bytes());
        (data, s)
    }

    #[test]
    fn a_reference_past_the_window_decodes_the_stream_whole_and_goes_on() {
        let (data, s) = far_stream(None);
        assert_eq!(snap::raw::Decoder::new().decompress_vec(&s).unwrap(), data, "the stream is valid Snappy");
        let told = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let t = told.clone();
        let mut r =
            SnappyReader::for_page(Bytes::from(s), data.len()).unwrap().on_whole(move |n| t.store(n, std::sync::atomic::Ordering::SeqCst));
        let out = read_all(&mut r, 4096).unwrap();
        assert!(out == data);
        assert!(r.whole.is_some(), "the far reference made the reader decode whole");
        assert_eq!(told.load(std::sync::atomic::Ordering::SeqCst), data.len(), "the whole stream's buffer was told first");
    }

    /// The crafted case of issue 41: a preamble declaring 0xFFFFFFFF bytes and a far
    /// back-reference forcing the whole-stream fallback, which sized its buffer from the
    /// preamble (4 GiB). A page's stream must declare its header's length, and no stream more
    /// than its bytes decode to: both refused before anything is decoded or allocated.
    #[test]
    fn a_preamble_that_disagrees_with_the_page_header_or_its_bytes_is_refused_before_any_buffer() {
        let (data, s) = far_stream(Some(0xFFFF_FFFF));
        let e = SnappyReader::for_page(Bytes::from(s.clone()), data.len()).err().expect("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        assert!(e.to_string().contains("declares 4294967295 bytes, its page header"), "{e}");
        let e = SnappyReader::new(Bytes::from(s.clone())).err().expect("refused");
        assert!(e.to_string().contains("more than its"), "{e}");
        // snap itself would size its buffer from that preamble
        assert_eq!(snap::raw::decompress_len(&s).unwrap(), 0xFFFF_FFFF);
        // a preamble within what the bytes decode to but short of the page's: refused too
        let (_, s) = far_stream(Some(data.len() - 1));
        assert!(SnappyReader::for_page(Bytes::from(s), data.len()).is_err());
    }

    #[test]
    fn a_truncated_or_overlong_stream_is_an_error() {
        let data = text(300_000);
        let compressed = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        let cut = Bytes::from(compressed[..compressed.len() - 10].to_vec());
        let e = read_all(SnappyReader::new(cut).unwrap(), 4096).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        let mut fixed = vec![5u8]; // the same elements, declaring 5 bytes
        fixed.extend_from_slice(&compressed[varint_len(&compressed)..]);
        let e = read_all(SnappyReader::new(Bytes::from(fixed)).unwrap(), 4096).unwrap_err();
        assert!(e.to_string().contains("more than the 5 bytes declared"), "{e}");
    }

    fn varint_len(s: &[u8]) -> usize {
        let mut at = 0;
        varint(s, &mut at).unwrap();
        at
    }
}
