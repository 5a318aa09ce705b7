//! Thrift: a minimal, bounded reader of Thrift's compact protocol, for the checks `guard` makes
//! on page headers and the footer's schema before parquet-rs parses them (parquet-rs keeps its
//! own parser crate-private). It only skips and bounds: it refuses lengths past the bytes left
//! and nesting deeper than parquet-rs's own skip limit.
//!
//! Memory: none beyond the reader it reads from.

use std::io::Read;

/// Deepest thrift struct nesting the header reader follows (parquet-rs's own skip limit).
const MAX_THRIFT_DEPTH: usize = 64;

/// A bounded reader of Thrift's compact protocol: skips what it does not need, and refuses
/// lengths past the bytes left.
pub struct Thrift<R: Read> {
    input: R,
    pub left: u64,
}

pub type TResult<T> = std::result::Result<T, String>;

impl<R: Read> Thrift<R> {
    pub fn new(input: R, left: u64) -> Self {
        Thrift { input, left }
    }

    fn byte(&mut self) -> TResult<u8> {
        if self.left == 0 {
            return Err("ends early".into());
        }
        let mut b = [0u8; 1];
        self.input.read_exact(&mut b).map_err(|e| e.to_string())?;
        self.left -= 1;
        Ok(b[0])
    }

    fn skip_bytes(&mut self, n: u64) -> TResult<()> {
        if n > self.left {
            return Err(format!("declares {n} bytes, only {} left", self.left));
        }
        let copied = std::io::copy(&mut (&mut self.input).take(n), &mut std::io::sink()).map_err(|e| e.to_string())?;
        if copied != n {
            return Err("ends early".into());
        }
        self.left -= n;
        Ok(())
    }

    fn varint(&mut self) -> TResult<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift.min(63);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint too long".into())
    }

    fn zigzag(&mut self) -> TResult<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// The next field header of a struct: `None` at its stop byte, else (field id, type).
    fn field(&mut self, last: &mut i16) -> TResult<Option<(i16, u8)>> {
        let b = self.byte()?;
        if b == 0 {
            return Ok(None);
        }
        let delta = (b >> 4) as i16;
        let id = if delta == 0 { self.zigzag()? as i16 } else { last.wrapping_add(delta) };
        *last = id;
        Ok(Some((id, b & 0x0f)))
    }

    /// A list or set header: (element type, count).
    fn list_header(&mut self) -> TResult<(u8, u64)> {
        let h = self.byte()?;
        let n = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if n > self.left {
            return Err(format!("declares {n} elements, only {} bytes left", self.left));
        }
        Ok((h & 0x0f, n))
    }

    fn skip(&mut self, ty: u8, depth: usize) -> TResult<()> {
        if depth > MAX_THRIFT_DEPTH {
            return Err("nested too deep".into());
        }
        match ty {
            1 | 2 => Ok(()),
            3 => self.byte().map(|_| ()),
            4..=6 => self.varint().map(|_| ()),
            7 => self.skip_bytes(8),
            8 => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            9 | 10 => {
                let (et, n) = self.list_header()?;
                for _ in 0..n {
                    // booleans inside lists take a byte each
                    if et == 1 || et == 2 {
                        self.byte().map(|_| ())?
                    } else {
                        self.skip(et, depth + 1)?
                    }
                }
                Ok(())
            }
            11 => {
                let n = self.varint()?;
                if n > self.left {
                    return Err(format!("declares {n} entries, only {} bytes left", self.left));
                }
                if n > 0 {
                    let kv = self.byte()?;
                    for _ in 0..n {
                        self.skip(kv >> 4, depth + 1)?;
                        self.skip(kv & 0x0f, depth + 1)?;
                    }
                }
                Ok(())
            }
            12 => {
                let mut last = 0;
                while let Some((_, t)) = self.field(&mut last)? {
                    self.skip(t, depth + 1)?;
                }
                Ok(())
            }
            t => Err(format!("unknown thrift type {t}")),
        }
    }

    /// A PageHeader's (uncompressed_page_size, compressed_page_size); the rest is skipped.
    /// A PageHeader's uncompressed and compressed sizes, and whether it is a dictionary page.
    pub fn page_header(&mut self) -> TResult<(u64, u64, bool)> {
        let (mut uncompressed, mut compressed, mut dictionary) = (None, None, false);
        let mut last = 0;
        while let Some((id, t)) = self.field(&mut last)? {
            match (id, t) {
                (1, 5) => dictionary = self.zigzag()? == 2,
                (2, 5) => uncompressed = Some(self.zigzag()?),
                (3, 5) => compressed = Some(self.zigzag()?),
                _ => self.skip(t, 1)?,
            }
        }
        match (uncompressed, compressed) {
            (Some(u), Some(c)) if u >= 0 && c >= 0 => Ok((u as u64, c as u64, dictionary)),
            _ => Err("page sizes missing or negative".into()),
        }
    }

    /// The nesting depth of FileMetaData's schema (field 2: a depth-first list of elements,
    /// each group naming its number of children in field 5).
    pub fn schema_depth(&mut self) -> TResult<usize> {
        let mut last = 0;
        while let Some((id, t)) = self.field(&mut last)? {
            if id != 2 || t != 9 {
                self.skip(t, 1)?;
                continue;
            }
            let (et, n) = self.list_header()?;
            if et != 12 {
                return Err("schema is not a list of structs".into());
            }
            // open groups: children still expected at each level
            let mut open: Vec<u64> = Vec::new();
            let mut deepest = 0;
            for _ in 0..n {
                while open.last() == Some(&0) {
                    open.pop();
                }
                if let Some(top) = open.last_mut() {
                    *top -= 1;
                }
                let mut children = 0u64;
                let mut last = 0;
                while let Some((fid, ft)) = self.field(&mut last)? {
                    match (fid, ft) {
                        (5, 5) => children = self.zigzag()?.max(0) as u64,
                        _ => self.skip(ft, 2)?,
                    }
                }
                if children > 0 {
                    open.push(children);
                    deepest = deepest.max(open.len());
                }
            }
            return Ok(deepest);
        }
        Ok(0)
    }
}
