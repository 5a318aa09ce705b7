//! Window: the output a streaming decoder keeps (`snappy`, `lz4`) — the bytes its
//! back-references may still reach, and what it decoded but was not read yet — with output
//! that is read and out of reach dropped from the front, a megabyte at a time.
//!
//! Memory: the window the decoder keeps, output read but not yet dropped (less than `DROP`),
//! and output not read yet.

use std::io::BufRead;

/// Output read and out of the window is dropped once there is this much of it: each drop moves
/// the window to the front of the buffer, a copy of the window per `DROP` decoded.
pub const DROP: usize = 1 << 20;

/// A decoder's output as it keeps it.
#[derive(Default)]
pub struct Window {
    /// The output kept: the window and what is not read yet.
    pub out: Vec<u8>,
    /// Bytes of `out` already read.
    pub read: usize,
    /// Output bytes dropped from the front of `out`.
    pub dropped: usize,
}

impl Window {
    /// Output bytes decoded so far.
    pub fn produced(&self) -> usize {
        self.dropped + self.out.len()
    }

    /// Whether every byte decoded was read.
    pub fn all_read(&self) -> bool {
        self.read == self.out.len()
    }

    /// The bytes decoded and not read yet.
    pub fn unread(&self) -> &[u8] {
        &self.out[self.read..]
    }

    /// `n` more bytes are read; output read that lies more than `keep` bytes back is dropped
    /// once there is `DROP` of it.
    pub fn consume(&mut self, n: usize, keep: usize) {
        self.read = (self.read + n).min(self.out.len());
        let drop = self.read.min(self.out.len().saturating_sub(keep));
        if drop >= DROP {
            self.out.drain(..drop);
            self.read -= drop;
            self.dropped += drop;
        }
    }
}

/// `Read::read` of a decoder that is read through `BufRead`: what it has decoded, copied out.
pub fn read_buffered(r: &mut impl BufRead, buf: &mut [u8]) -> std::io::Result<usize> {
    let available = r.fill_buf()?;
    let n = available.len().min(buf.len());
    buf[..n].copy_from_slice(&available[..n]);
    r.consume(n);
    Ok(n)
}

/// Appends the `len` bytes that start `offset` bytes back in `out` (a back-reference, `offset`
/// from 1 to `out.len()`): where it overlaps its own output it repeats the last `offset`
/// bytes. A short one with room behind it is copied as a fixed `WIDE` bytes and cut back.
#[inline(always)]
pub fn copy_back<const WIDE: usize>(out: &mut Vec<u8>, offset: usize, len: usize) {
    let start = out.len() - offset;
    if offset >= WIDE && len <= WIDE {
        let old = out.len();
        out.extend_from_within(start..start + WIDE);
        out.truncate(old + len);
    } else if offset >= len {
        out.extend_from_within(start..start + len);
    } else {
        let mut left = len;
        while left > 0 {
            let n = left.min(out.len() - start);
            out.extend_from_within(start..start + n);
            left -= n;
        }
    }
}

/// What the decoders' tests share.
#[cfg(test)]
pub mod testdata {
    use std::io::Read;

    /// Everything `r` reads, `chunk` bytes a read.
    pub fn read_all(mut r: impl Read, chunk: usize) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            let n = r.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// Text that compresses with back-references near and far, unique per line.
    pub fn text(len: usize) -> Vec<u8> {
        let mut s = Vec::with_capacity(len);
        let mut i = 0u64;
        while s.len() < len {
            s.extend_from_slice(format!("{{\"turn\":{i},\"role\":\"user\",\"text\":\"{}\"}},", "abc".repeat((i % 40) as usize)).as_bytes());
            i = i.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) >> 40;
        }
        s.truncate(len);
        s
    }
}
