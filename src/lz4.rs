//! Lz4: a raw LZ4 block (the format of Parquet's LZ4_RAW codec) decoded as a reader that keeps
//! only a window of its output, so that a large page can be handed on in slices (`streamed`)
//! without ever being whole in memory.
//!
//! The `lz4_flex` crate decodes a raw block only whole, into a buffer of the decompressed
//! length; a pyarrow page of 1,024 fat values is tens of MB. The format (LZ4's
//! `Block_format.md`) is a sequence of sequences — a token, literals, a two-byte offset and a
//! match — whose offsets reach at most 65,535 bytes back, so a window of 64 KiB always holds
//! what a match copies. The block carries no length of its own: the page header declares it.
//! A long run of literals or a long match is decoded a piece at a time.
//!
//! Memory: the window (`WINDOW`), output read but not yet dropped (less than `window::DROP`), plus
//! output decoded but not read yet (at most `READ_AHEAD` and one piece, `PIECE`).

use crate::window::{copy_back, read_buffered, Window};
use bytes::Bytes;
use std::io::{BufRead, Error, ErrorKind, Read};

/// Output kept for matches: the farthest an LZ4 offset reaches.
const WINDOW: usize = 64 << 10;
/// Output decoded at once when a read finds none left (`fill_buf`).
const READ_AHEAD: usize = 64 << 10;
/// Literals or match bytes decoded at once, at most.
const PIECE: usize = 64 << 10;

/// Where the decoder is within a sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
enum At {
    /// Before a token (or at the end of the block, after a match).
    Token,
    /// Copying literals: how many are left, and the token's match length nibble.
    Literals { left: usize, nibble: u8 },
    /// Copying a match: its offset and how many bytes are left.
    Match { offset: usize, left: usize },
    /// After the last literals.
    End,
}

/// A raw LZ4 block that decodes to `declared` bytes, read as its decoded bytes.
pub struct Lz4Reader {
    input: Bytes,
    /// The next input byte.
    at: usize,
    state: At,
    /// The output kept (`WINDOW` of it for matches).
    window: Window,
    declared: usize,
}

fn corrupt(what: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidData, what.into())
}

/// A length: `nibble`, and when it is 15, the bytes at `input[*i..]` added to it until one is
/// not 255.
fn length(input: &[u8], i: &mut usize, nibble: usize) -> std::io::Result<usize> {
    let mut len = nibble;
    if nibble == 15 {
        loop {
            let b = *input.get(*i).ok_or_else(|| corrupt("lz4: block ends inside a sequence"))?;
            *i += 1;
            len = len.checked_add(usize::from(b)).ok_or_else(|| corrupt("lz4: a length too large"))?;
            if b != 255 {
                break;
            }
        }
    }
    Ok(len)
}

impl Lz4Reader {
    pub fn new(input: Bytes, declared: usize) -> Self {
        Lz4Reader { input, at: 0, state: At::Token, window: Window::default(), declared }
    }

    fn produced(&self) -> usize {
        self.window.produced()
    }

    /// The block is decoded to its end (a block whose last sequence has a match is taken as
    /// ended there too: its length is checked against the declared one all the same).
    fn finished(&self) -> bool {
        self.state == At::End || (self.state == At::Token && self.at >= self.input.len())
    }

    /// Decodes sequences onto `out` until it holds `until` bytes or the block ends, a long run
    /// of literals or a long match a piece at a time. A short one is copied as 32 bytes and cut
    /// back (one fixed-size copy instead of a call for a few bytes), where the input or the
    /// output holds 32 to copy.
    fn decode(&mut self, until: usize) -> std::io::Result<()> {
        let Lz4Reader { input, at, state, window, declared, .. } = self;
        let Window { out, dropped, .. } = window;
        let input: &[u8] = input;
        // The most `out` may hold: what the page declares, less what was dropped.
        let limit = declared.saturating_sub(*dropped);
        let over = || corrupt(format!("lz4: decodes to more than the {declared} bytes declared"));
        let ends = || corrupt("lz4: block ends inside a sequence");
        let mut i = *at;
        let mut st = *state;
        let result = loop {
            if out.len() >= until {
                break Ok(());
            }
            match st {
                At::End => break Ok(()),
                At::Token => {
                    let Some(&token) = input.get(i) else { break Ok(()) };
                    i += 1;
                    match length(input, &mut i, usize::from(token >> 4)) {
                        Ok(left) => st = At::Literals { left, nibble: token & 15 },
                        Err(e) => break Err(e),
                    }
                }
                At::Literals { left, nibble } => {
                    let n = left.min(PIECE);
                    if out.len() + n > limit {
                        break Err(over());
                    }
                    if n <= 32 && i + 32 <= input.len() {
                        let old = out.len();
                        out.extend_from_slice(&input[i..i + 32]);
                        out.truncate(old + n);
                    } else {
                        let Some(literals) = input.get(i..i + n) else { break Err(corrupt("lz4: block ends inside its literals")) };
                        out.extend_from_slice(literals);
                    }
                    i += n;
                    if left > n {
                        st = At::Literals { left: left - n, nibble };
                        continue;
                    }
                    if i >= input.len() {
                        st = At::End;
                        continue;
                    }
                    let Some(b) = input.get(i..i + 2) else { break Err(ends()) };
                    let offset = usize::from(u16::from_le_bytes([b[0], b[1]]));
                    i += 2;
                    let len = match length(input, &mut i, usize::from(nibble)) {
                        Ok(len) => len + 4,
                        Err(e) => break Err(e),
                    };
                    let produced = *dropped + out.len();
                    if offset == 0 || offset > produced {
                        break Err(corrupt(format!("lz4: match {offset} bytes before byte {produced}")));
                    }
                    st = At::Match { offset, left: len };
                }
                At::Match { offset, left } => {
                    let n = left.min(PIECE);
                    if out.len() + n > limit {
                        break Err(over());
                    }
                    // (the window keeps at least `WINDOW` bytes, the farthest an offset reaches)
                    copy_back::<32>(out, offset, n);
                    st = if left == n { At::Token } else { At::Match { offset, left: left - n } };
                }
            }
        };
        *at = i;
        *state = st;
        result
    }
}

impl BufRead for Lz4Reader {
    /// The decoded bytes not read yet, decoding more (up to `READ_AHEAD`) when there are none.
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.window.all_read() {
            self.decode(self.window.read + READ_AHEAD)?;
        }
        if self.finished() && self.produced() != self.declared {
            return Err(corrupt(format!("lz4: decodes to {} bytes, {} declared", self.produced(), self.declared)));
        }
        Ok(self.window.unread())
    }

    fn consume(&mut self, n: usize) {
        self.window.consume(n, WINDOW);
    }
}

impl Read for Lz4Reader {
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
    fn decodes_what_lz4_flex_encodes_in_any_read_size_and_drops_its_window() {
        let data = text(5 << 20);
        let compressed = lz4_flex::block::compress(&data);
        for chunk in [1, 7, 4096, 1 << 20] {
            let mut r = Lz4Reader::new(Bytes::from(compressed.clone()), data.len());
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
            assert!(r.window.dropped > 0, "the window slid");
            assert!(most <= 2 * (WINDOW + DROP + READ_AHEAD + PIECE + chunk), "kept {most} bytes at read size {chunk}");
        }
    }

    /// A block of long literals and a long overlapping match, each decoded in pieces: a 300 KB
    /// literal run, then a 5 MB run of one repeated 3-byte pattern (offset 3), then the last
    /// literals.
    #[test]
    fn long_literals_and_long_overlapping_matches_decode_in_pieces() {
        let head = text(300_000);
        let mut data = head.clone();
        let pattern = *b"xyz";
        data.extend_from_slice(&pattern);
        let run = 5 << 20;
        for i in 0..run {
            data.push(pattern[i % 3]);
        }
        data.extend_from_slice(b"tail!");
        let length = |s: &mut Vec<u8>, mut n: usize| {
            while n >= 255 {
                s.push(255);
                n -= 255;
            }
            s.push(n as u8);
        };
        let mut s = Vec::new();
        // literals: head + pattern (extended length); match: offset 3, `run` bytes (extended)
        s.push(0xff);
        length(&mut s, head.len() + 3 - 15);
        s.extend_from_slice(&head);
        s.extend_from_slice(&pattern);
        s.extend_from_slice(&3u16.to_le_bytes());
        length(&mut s, run - 4 - 15);
        // the last literals
        s.push(5 << 4);
        s.extend_from_slice(b"tail!");
        assert_eq!(lz4_flex::block::decompress(&s, data.len()).unwrap(), data, "the block is valid LZ4");
        let mut r = Lz4Reader::new(Bytes::from(s), data.len());
        let out = read_all(&mut r, 4096).unwrap();
        assert!(out == data);
        assert!(r.window.out.capacity() <= 2 * (WINDOW + DROP + READ_AHEAD + PIECE + 4096), "kept {} bytes", r.window.out.capacity());
    }

    #[test]
    fn a_truncated_block_a_wrong_length_or_a_match_before_the_start_is_an_error() {
        let data = text(300_000);
        let compressed = lz4_flex::block::compress(&data);
        let cut = Bytes::from(compressed[..compressed.len() - 10].to_vec());
        let e = read_all(Lz4Reader::new(cut, data.len()), 4096).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        let e = read_all(Lz4Reader::new(Bytes::from(compressed.clone()), 5), 4096).unwrap_err();
        assert!(e.to_string().contains("more than the 5 bytes declared"), "{e}");
        let e = read_all(Lz4Reader::new(Bytes::from(compressed), data.len() + 1), 4096).unwrap_err();
        assert!(e.to_string().contains("declared"), "{e}");
        // one literal, then a match 2 bytes back
        let e = read_all(Lz4Reader::new(Bytes::from(vec![0x10, b'a', 2, 0, 0x00]), 10), 4096).unwrap_err();
        assert!(e.to_string().contains("match 2 bytes before byte 1"), "{e}");
    }
}
