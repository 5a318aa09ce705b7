//! Puffin deletion vectors: reads a `deletion-vector-v1` blob (Iceberg spec: a 4-byte
//! big-endian length of magic + vector, the magic `D1 D3 39 64`, a portable 64-bit Roaring
//! bitmap of deleted row positions, and a big-endian CRC-32 of magic + vector) at the
//! offset/length the manifest records, and checks it against the Puffin footer's
//! `referenced-data-file` and `cardinality` properties when the footer gives them.
//!
//! The portable 64-bit Roaring format is an 8-byte little-endian count of 32-bit bitmaps, then
//! per bitmap a 4-byte little-endian key (the positions' high 32 bits) and the 32-bit bitmap in
//! the portable Roaring format. The count and the keys are read here: the count is checked
//! against the bytes left before anything is sized from it, and the keys must be strictly
//! ascending, one bitmap per key (the roaring crate's treemap reader lets a later bitmap of a
//! repeated key replace the earlier one, bringing deleted rows back). Each 32-bit bitmap is
//! read by the `roaring` crate.
//!
//! Memory: one blob at a time (bounded by the file's size and the call's page cap), reserved
//! from the call's accountant with room for the bitmap it decodes to (`PARSE_FACTOR`), plus
//! each Puffin file's footer JSON, read once per call. The decoded bitmap stays accounted
//! (`heap_bytes`) for as long as the caller holds its reservation.

use crate::budget::ReadLimits;
use crate::error::{CompactError, Result};
use crate::memory::{Accountant, Reservation};
use roaring::{RoaringBitmap, RoaringTreemap};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

const BLOB_MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];
const FILE_MAGIC: &[u8; 4] = b"PFA1";
/// Footer flag bit 0: the footer payload is LZ4-compressed.
const FOOTER_COMPRESSED: u32 = 1;
/// The fewest bytes one entry of a portable 64-bit bitmap takes: its 4-byte key and the
/// smallest 32-bit bitmap (a cookie and a container count, no containers).
const MIN_ENTRY_BYTES: usize = 4 + 8;
/// What one container costs in memory beside its values (`heap_bytes`' model): the crate's
/// `Container` (a key and a store: 40 bytes), rounded up.
const CONTAINER_BYTES: usize = 48;
/// What one key of a 64-bit bitmap costs in memory beside its 32-bit bitmap: its entry in
/// the crate's `BTreeMap<u32, RoaringBitmap>`, with the map's node overhead.
const KEY_BYTES: usize = 64;
/// Bytes reserved per blob byte while a blob decodes: by `heap_bytes`' model a bitmap takes
/// at most ~4.2 times its serialized bytes (a container of one value: 10 bytes serialized,
/// 42 in memory; a key with an empty bitmap: 12 serialized, 48 in memory).
const PARSE_FACTOR: usize = 5;

/// What the Puffin footer says of one blob.
#[derive(Default, Clone)]
struct BlobProps {
    /// `referenced-data-file` (None: the footer does not say, or is compressed).
    referenced: Option<String>,
    /// `cardinality`: how many positions the vector holds.
    cardinality: Option<u64>,
}

/// The Puffin files of a call: each footer parsed once.
#[derive(Default)]
pub struct VectorFiles {
    /// Per file: blob offset → what the footer says of it.
    footers: HashMap<PathBuf, HashMap<u64, BlobProps>>,
}

/// Bytes a bitmap holds in memory, as this module models it (the crate does not say): its
/// serialized size (values: 2 bytes each in array containers, 8 KiB per bitmap container,
/// 4 bytes per run, plus 8 bytes of header per container), `CONTAINER_BYTES` per container
/// (counted as at most one per 2^16 of the span it covers, and at most one per value) and
/// `KEY_BYTES` per key. Linear in the containers, never in the values.
pub fn heap_bytes(bitmap: &RoaringTreemap) -> usize {
    let mut bytes = 0usize;
    for (_, b) in bitmap.bitmaps() {
        let span = match (b.min(), b.max()) {
            (Some(lo), Some(hi)) => u64::from((hi >> 16) - (lo >> 16)) + 1,
            _ => 0,
        };
        let containers = span.min(b.len()) as usize;
        bytes = bytes.saturating_add(KEY_BYTES + b.serialized_size() + containers.saturating_mul(CONTAINER_BYTES));
    }
    bytes
}

impl VectorFiles {
    /// The deleted positions of the blob at `offset`/`length` of `path`, which must belong to
    /// the data file at `location`, and the reservation of `memory` that accounts them
    /// (`heap_bytes`). `Err(Aborted)` once `cancel` is set; a blob that would not fit the
    /// call's bound is `ERR_INVALID_OPTIONS` (see `reserve`).
    #[allow(clippy::too_many_arguments)]
    pub fn read(
        &mut self,
        path: &Path,
        offset: u64,
        length: u64,
        location: &str,
        limits: &ReadLimits,
        memory: &Accountant,
        cancel: &AtomicBool,
    ) -> Result<(RoaringTreemap, Reservation)> {
        let mut file = File::open(path).map_err(|e| CompactError::input_open(path, &e))?;
        let size = file.metadata().map_err(|e| CompactError::input_open(path, &e))?.len();
        if !self.footers.contains_key(path) {
            let footer = read_footer(&mut file, path, size, limits)?;
            self.footers.insert(path.to_path_buf(), footer);
        }
        let props = self.footers.get(path).and_then(|f| f.get(&offset)).cloned().unwrap_or_default();
        if let Some(referenced) = &props.referenced {
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
        // (length ≤ the page cap and the file's size: it fits usize)
        let length = length as usize;
        let mut held = memory.reservation();
        reserve(&mut held, length.saturating_mul(1 + PARSE_FACTOR), path, "a deletion vector")?;
        let mut blob = vec![0u8; length];
        file.seek(SeekFrom::Start(offset)).and_then(|_| file.read_exact(&mut blob)).map_err(|e| CompactError::input_open(path, &e))?;
        let bitmap = parse_blob_until(&blob, cancel).map_err(|e| match e {
            Stop::Aborted => CompactError::Aborted,
            Stop::Corrupt(msg) => CompactError::corrupt(path, None, format!("deletion vector at offset {offset}: {msg}")),
        })?;
        drop(blob);
        if let Some(declared) = props.cardinality {
            if declared != bitmap.len() {
                return Err(CompactError::corrupt(
                    path,
                    None,
                    format!(
                        "deletion vector at offset {offset}: the footer's cardinality is {declared}, the vector holds {} positions",
                        bitmap.len()
                    ),
                ));
            }
        }
        held.resize(heap_bytes(&bitmap));
        Ok((bitmap, held))
    }
}

/// Grows `held` to `bytes` within the call's bound, or says which delete file would not fit
/// (`ERR_INVALID_OPTIONS` naming `batchBytes`, which sets the bound). `what` names the set.
pub fn reserve(held: &mut Reservation, bytes: usize, path: &Path, what: &str) -> Result<()> {
    if held.try_resize(bytes) {
        return Ok(());
    }
    let accountant = held.accountant();
    let others = accountant.used().saturating_sub(held.bytes());
    Err(CompactError::InvalidOptions(format!(
        "batchBytes: {what} of {} would take {bytes} bytes of memory, and the call's bound (3 × batchBytes + 64 MiB = {} bytes) \
         leaves {} beside what the call holds already: raise batchBytes",
        path.display(),
        accountant.limit(),
        accountant.limit().saturating_sub(others)
    )))
}

/// Why a blob was not decoded.
enum Stop {
    Aborted,
    Corrupt(String),
}

/// Decodes a `deletion-vector-v1` blob.
pub fn parse_blob(blob: &[u8]) -> std::result::Result<RoaringTreemap, String> {
    parse_blob_until(blob, &AtomicBool::new(false)).map_err(|e| match e {
        Stop::Aborted => "aborted".to_string(),
        Stop::Corrupt(msg) => msg,
    })
}

/// `parse_blob`, checking `cancel` per key.
fn parse_blob_until(blob: &[u8], cancel: &AtomicBool) -> std::result::Result<RoaringTreemap, Stop> {
    let bad = |msg: String| Stop::Corrupt(msg);
    let word = |at: usize| -> Option<u32> { Some(u32::from_be_bytes(blob.get(at..at + 4)?.try_into().ok()?)) };
    let declared = word(0).ok_or_else(|| bad("shorter than its length field".into()))? as usize;
    if declared.checked_add(8) != Some(blob.len()) {
        return Err(bad(format!("declares {declared} bytes of magic and vector, but the blob holds {}", blob.len().saturating_sub(8))));
    }
    let body = &blob[4..4 + declared];
    if body.get(..4) != Some(&BLOB_MAGIC[..]) {
        return Err(bad("bad magic (expected D1 D3 39 64)".into()));
    }
    let stored = word(4 + declared).ok_or_else(|| bad("missing CRC".into()))?;
    let actual = crc32fast::hash(body);
    if stored != actual {
        return Err(bad(format!("CRC-32 mismatch (stored {stored:08x}, computed {actual:08x})")));
    }
    parse_vector(&body[4..], cancel)
}

/// Decodes a portable 64-bit Roaring bitmap (see the module's doc): keys strictly ascending,
/// the count no more than the bytes left can hold, nothing after the last bitmap.
fn parse_vector(vector: &[u8], cancel: &AtomicBool) -> std::result::Result<RoaringTreemap, Stop> {
    let count_bytes = vector.get(..8).ok_or_else(|| Stop::Corrupt(format!("{} bytes: shorter than the bitmap count", vector.len())))?;
    let count = u64::from_le_bytes(count_bytes.try_into().map_err(|_| Stop::Corrupt("bitmap count".into()))?);
    let left = vector.len() - 8;
    let most = (left / MIN_ENTRY_BYTES) as u64;
    if count > most {
        return Err(Stop::Corrupt(format!("declares {count} 32-bit bitmaps, but its {left} bytes hold at most {most}")));
    }
    let mut cursor = std::io::Cursor::new(&vector[8..]);
    let mut bitmaps: Vec<(u32, RoaringBitmap)> = Vec::new();
    for i in 0..count {
        if cancel.load(Ordering::Relaxed) {
            return Err(Stop::Aborted);
        }
        let mut key = [0u8; 4];
        cursor.read_exact(&mut key).map_err(|_| Stop::Corrupt(format!("bitmap {i} of {count}: its key runs past the vector")))?;
        let key = u32::from_le_bytes(key);
        if let Some((previous, _)) = bitmaps.last() {
            if key <= *previous {
                let how = if key == *previous { "repeats" } else { "comes after" };
                return Err(Stop::Corrupt(format!(
                    "bitmap {i} of {count}: key {key} {how} key {previous}: the keys of a 64-bit Roaring bitmap must be strictly ascending"
                )));
            }
        }
        let bitmap = RoaringBitmap::deserialize_from(&mut cursor)
            .map_err(|e| Stop::Corrupt(format!("bitmap {i} of {count} (key {key}): bad Roaring bitmap: {e}")))?;
        bitmaps.push((key, bitmap));
    }
    let after = left - cursor.position() as usize;
    if after != 0 {
        return Err(Stop::Corrupt(format!("{after} bytes after the Roaring bitmap")));
    }
    Ok(RoaringTreemap::from_bitmaps(bitmaps))
}

/// Reads a Puffin footer: blob offset → its `referenced-data-file` and `cardinality` properties.
fn read_footer(file: &mut File, path: &Path, size: u64, limits: &ReadLimits) -> Result<HashMap<u64, BlobProps>> {
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
        let properties = blob.get("properties");
        let referenced = properties.and_then(|p| p.get("referenced-data-file")).and_then(|r| r.as_str()).map(str::to_string);
        // (Puffin properties are strings; a number is taken too)
        let cardinality = match properties.and_then(|p| p.get("cardinality")) {
            None | Some(serde_json::Value::Null) => None,
            Some(value) => Some(value.as_u64().or_else(|| value.as_str().and_then(|s| s.parse::<u64>().ok())).ok_or_else(|| {
                CompactError::corrupt(
                    path,
                    None,
                    format!("the Puffin footer's cardinality of the blob at offset {offset} is {value}, not a count"),
                )
            })?),
        };
        out.insert(offset, BlobProps { referenced, cardinality });
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

    /// A blob around a vector given as raw bytes.
    fn frame(vector: &[u8]) -> Vec<u8> {
        let mut body = BLOB_MAGIC.to_vec();
        body.extend_from_slice(vector);
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        out
    }

    /// A portable 64-bit vector of `entries` (key, 32-bit values) in the order given, each
    /// 32-bit bitmap serialized by the `roaring` crate.
    fn raw_vector(entries: &[(u32, &[u32])]) -> Vec<u8> {
        let mut out = (entries.len() as u64).to_le_bytes().to_vec();
        for (key, values) in entries {
            out.extend_from_slice(&key.to_le_bytes());
            values.iter().copied().collect::<RoaringBitmap>().serialize_into(&mut out).unwrap();
        }
        out
    }

    #[test]
    fn a_repeated_or_descending_key_is_corrupt_where_the_crates_treemap_reader_drops_rows() {
        for (entries, kept_by_the_crate, says) in [
            (vec![(0u32, &[1u32, 2, 3][..]), (0, &[5][..])], vec![5u64], "key 0 repeats key 0"),
            (vec![(0, &[5][..]), (0, &[1, 2, 3][..])], vec![1, 2, 3], "key 0 repeats key 0"),
            (vec![(1, &[5][..]), (0, &[1, 2, 3][..])], vec![1, 2, 3, (1 << 32) + 5], "key 0 comes after key 1"),
        ] {
            let vector = raw_vector(&entries);
            // the crate alone: the later bitmap of key 0 replaces the earlier (rows come back)
            let crate_reads = RoaringTreemap::deserialize_from(&vector[..]).unwrap();
            assert_eq!(crate_reads.iter().collect::<Vec<_>>(), kept_by_the_crate);
            let err = parse_blob(&frame(&vector)).unwrap_err();
            assert!(err.contains(says) && err.contains("strictly ascending"), "{err}");
        }
        // ascending keys: exactly what the crate reads
        let vector = raw_vector(&[(0, &[1, 2, 3]), (1, &[5]), (7, &[0, 65_536])]);
        let ours = parse_blob(&frame(&vector)).unwrap();
        assert_eq!(ours, RoaringTreemap::deserialize_from(&vector[..]).unwrap());
        assert_eq!(ours.len(), 6);
    }

    #[test]
    fn a_count_the_bytes_cannot_hold_is_refused_before_anything_is_sized_from_it() {
        for count in [u64::MAX, 1 << 40, 2] {
            let mut vector = count.to_le_bytes().to_vec();
            vector.extend_from_slice(&raw_vector(&[(0, &[1])])[8..]);
            let err = parse_blob(&frame(&vector)).unwrap_err();
            assert!(err.contains(&format!("declares {count} 32-bit bitmaps")), "{err}");
        }
        let mut trailing = raw_vector(&[(0, &[1])]);
        trailing.extend_from_slice(&[0; 3]);
        assert!(parse_blob(&frame(&trailing)).unwrap_err().contains("3 bytes after"));
        assert!(parse_blob(&frame(&[1, 2, 3])).unwrap_err().contains("shorter than the bitmap count"));
    }

    #[test]
    fn decoding_stops_at_the_cancel_flag() {
        let vector = raw_vector(&[(0, &[1]), (1, &[2])]);
        assert!(matches!(parse_blob_until(&frame(&vector), &AtomicBool::new(true)), Err(Stop::Aborted)));
    }

    #[test]
    fn the_heap_model_is_linear_in_containers_not_values() {
        let mut full = RoaringTreemap::new();
        full.insert_range(0..1 << 32);
        // 65,536 run containers of one run: 6 bytes serialized + 8 of header + the container each
        let bytes = heap_bytes(&full);
        assert!((65_536 * (6 + CONTAINER_BYTES)..65_536 * 100).contains(&bytes), "{bytes}");
        let sparse: RoaringTreemap = [0u64, u32::MAX as u64, 1 << 40].into_iter().collect();
        assert!(heap_bytes(&sparse) < 3 * (KEY_BYTES + CONTAINER_BYTES + 64), "{}", heap_bytes(&sparse));
        let dense: RoaringTreemap = (0..1_000_000u64).step_by(2).collect();
        assert!(heap_bytes(&dense) >= dense.serialized_size(), "at least what the values take");
    }
}
