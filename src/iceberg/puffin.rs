//! Puffin deletion vectors: reads a `deletion-vector-v1` blob (Iceberg spec: a 4-byte
//! big-endian length of magic + vector, the magic `D1 D3 39 64`, a portable 64-bit Roaring
//! bitmap of deleted row positions, and a big-endian CRC-32 of magic + vector) at the
//! offset/length the manifest records, and checks it against the Puffin footer's
//! `referenced-data-file` property when the footer names one.
//!
//! Memory: one blob at a time (bounded by the file's size and the call's page cap), plus each
//! Puffin file's footer JSON, read once per call.

use crate::budget::ReadLimits;
use crate::error::{CompactError, Result};
use roaring::RoaringTreemap;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

const BLOB_MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];
const FILE_MAGIC: &[u8; 4] = b"PFA1";
/// Footer flag bit 0: the footer payload is LZ4-compressed.
const FOOTER_COMPRESSED: u32 = 1;

/// The Puffin files of a call: each footer parsed once.
#[derive(Default)]
pub struct VectorFiles {
    /// Per file: blob offset → `referenced-data-file` (None: the footer does not say, or is
    /// compressed).
    footers: HashMap<PathBuf, HashMap<u64, Option<String>>>,
}

impl VectorFiles {
    /// The deleted positions of the blob at `offset`/`length` of `path`, which must belong to
    /// the data file at `location`.
    pub fn read(&mut self, path: &Path, offset: u64, length: u64, location: &str, limits: &ReadLimits) -> Result<RoaringTreemap> {
        let mut file = File::open(path).map_err(|e| CompactError::input_open(path, &e))?;
        let size = file.metadata().map_err(|e| CompactError::input_open(path, &e))?.len();
        if !self.footers.contains_key(path) {
            let footer = read_footer(&mut file, path, size, limits)?;
            self.footers.insert(path.to_path_buf(), footer);
        }
        if let Some(Some(referenced)) = self.footers.get(path).and_then(|f| f.get(&offset)) {
            if referenced != location {
                return Err(CompactError::InvalidOptions(format!(
                    "deletion vector {} at offset {offset} belongs to {referenced}, but was given for {location}",
                    path.display()
                )));
            }
        }
        let end = offset.checked_add(length).filter(|e| *e <= size);
        if end.is_none() || length < 12 {
            return Err(CompactError::corrupt(
                path,
                None,
                format!("deletion vector at offset {offset}, length {length}: outside the file's {size} bytes or too short"),
            ));
        }
        if length > limits.page_cap {
            return Err(CompactError::corrupt(
                path,
                None,
                format!("deletion vector of {length} bytes exceeds the read cap of {} bytes", limits.page_cap),
            ));
        }
        let mut blob = vec![0u8; length as usize];
        file.seek(SeekFrom::Start(offset)).and_then(|_| file.read_exact(&mut blob)).map_err(|e| CompactError::input_open(path, &e))?;
        parse_blob(&blob).map_err(|msg| CompactError::corrupt(path, None, format!("deletion vector at offset {offset}: {msg}")))
    }
}

/// Decodes a `deletion-vector-v1` blob.
pub fn parse_blob(blob: &[u8]) -> std::result::Result<RoaringTreemap, String> {
    let word = |at: usize| -> Option<u32> { Some(u32::from_be_bytes(blob.get(at..at + 4)?.try_into().ok()?)) };
    let declared = word(0).ok_or("shorter than its length field")? as usize;
    if declared.checked_add(8) != Some(blob.len()) {
        return Err(format!("declares {declared} bytes of magic and vector, but the blob holds {}", blob.len().saturating_sub(8)));
    }
    let body = &blob[4..4 + declared];
    if body.get(..4) != Some(&BLOB_MAGIC[..]) {
        return Err("bad magic (expected D1 D3 39 64)".into());
    }
    let stored = word(4 + declared).ok_or("missing CRC")?;
    let actual = crc32fast::hash(body);
    if stored != actual {
        return Err(format!("CRC-32 mismatch (stored {stored:08x}, computed {actual:08x})"));
    }
    let vector = &body[4..];
    let mut cursor = std::io::Cursor::new(vector);
    let bitmap = RoaringTreemap::deserialize_from(&mut cursor).map_err(|e| format!("bad Roaring bitmap: {e}"))?;
    if cursor.position() as usize != vector.len() {
        return Err(format!("{} bytes after the Roaring bitmap", vector.len() - cursor.position() as usize));
    }
    Ok(bitmap)
}

/// Reads a Puffin footer: blob offset → its `referenced-data-file` property.
fn read_footer(file: &mut File, path: &Path, size: u64, limits: &ReadLimits) -> Result<HashMap<u64, Option<String>>> {
    let corrupt = |msg: String| CompactError::corrupt(path, None, format!("not a Puffin file: {msg}"));
    // ... | payload | payload size (4, LE) | flags (4, LE) | "PFA1"
    if size < 4 + 4 + 12 {
        return Err(corrupt(format!("{size} bytes")));
    }
    let mut tail = [0u8; 12];
    file.seek(SeekFrom::Start(size - 12)).and_then(|_| file.read_exact(&mut tail)).map_err(|e| CompactError::input_open(path, &e))?;
    let mut head = [0u8; 4];
    file.seek(SeekFrom::Start(0)).and_then(|_| file.read_exact(&mut head)).map_err(|e| CompactError::input_open(path, &e))?;
    if &tail[8..12] != FILE_MAGIC || &head != FILE_MAGIC {
        return Err(corrupt("missing PFA1 magic".into()));
    }
    let payload_size = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    let flags = u32::from_le_bytes([tail[4], tail[5], tail[6], tail[7]]);
    let start = size
        .checked_sub(12 + payload_size + 4)
        .filter(|s| *s >= 4)
        .ok_or_else(|| corrupt(format!("footer payload of {payload_size} bytes exceeds the file")))?;
    if payload_size > limits.page_cap {
        return Err(corrupt(format!("footer payload of {payload_size} bytes exceeds the read cap")));
    }
    let mut footer = vec![0u8; 4 + payload_size as usize];
    file.seek(SeekFrom::Start(start)).and_then(|_| file.read_exact(&mut footer)).map_err(|e| CompactError::input_open(path, &e))?;
    if &footer[..4] != FILE_MAGIC {
        return Err(corrupt("missing footer magic".into()));
    }
    if flags & FOOTER_COMPRESSED != 0 {
        // A compressed footer cannot be checked here; the blobs themselves still are.
        return Ok(HashMap::new());
    }
    let json: serde_json::Value = serde_json::from_slice(&footer[4..]).map_err(|e| corrupt(format!("footer JSON: {e}")))?;
    let blobs = json.get("blobs").and_then(|b| b.as_array()).ok_or_else(|| corrupt("footer has no 'blobs' list".into()))?;
    let mut out = HashMap::new();
    for blob in blobs {
        let Some(offset) = blob.get("offset").and_then(|o| o.as_u64()) else { continue };
        let referenced = blob.get("properties").and_then(|p| p.get("referenced-data-file")).and_then(|r| r.as_str()).map(str::to_string);
        out.insert(offset, referenced);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(bitmap: &RoaringTreemap) -> Vec<u8> {
        let mut body = BLOB_MAGIC.to_vec();
        bitmap.serialize_into(&mut body).unwrap();
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        out
    }

    #[test]
    fn round_trip_and_damage() {
        let bitmap: RoaringTreemap = [0u64, 3, 7, 70_000, 5_000_000_000].into_iter().collect();
        let good = blob(&bitmap);
        assert_eq!(parse_blob(&good).unwrap(), bitmap);
        let mut bad_magic = good.clone();
        bad_magic[4] ^= 0xff;
        assert!(parse_blob(&bad_magic).unwrap_err().contains("magic"));
        let mut bad_crc = good.clone();
        let last = bad_crc.len() - 1;
        bad_crc[last] ^= 1;
        assert!(parse_blob(&bad_crc).unwrap_err().contains("CRC"));
        assert!(parse_blob(&good[..good.len() - 3]).is_err());
        assert!(parse_blob(&[0, 0]).is_err());
    }
}
