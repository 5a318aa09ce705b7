//! The differential fuzz targets of gencompact's hand-written parsers, shared by the cargo-fuzz
//! targets (`fuzz/fuzz_targets/*.rs`, coverage-guided) and the bounded run in `npm test`
//! (`tests/differential.rs`, seeds plus seeded mutations): each takes the fuzzer's bytes,
//! builds an input from them, runs our reader and an independent one, and panics where they
//! disagree or where ours takes more memory than the input can justify.
//!
//! - `snappy`: `snappy::SnappyReader` against `snap`'s raw decoder: the same bytes out, or both
//!   reject. Inputs: the bytes as a raw stream; a 4–6 MiB text encoded by `snap` (above the
//!   4 MiB streaming threshold) with the fuzzer's edits; or a stream built element by element
//!   (long runs, back-references near and past the reader's window, a lying preamble).
//! - `lz4`: `lz4::Lz4Reader` against `lz4_flex`'s block decoder, likewise.
//! - `spill_frames`: the spill frame reader (`frames`, `readback`) on arbitrary bytes (never
//!   panics) and on runs the writer wrote (reads back what was written), with the fuzzer's edits.
//! - `puffin`: `iceberg::puffin::parse_blob` against the `roaring` crate's 32-bit reader plus the
//!   spec's rule for the 64-bit map (keys strictly ascending, one bitmap per key): ours rejects
//!   what breaks the rule and otherwise returns the same set.
//!
//! Every target checks memory the same way (`bounded`): the process's peak virtual size may not
//! grow by more than the bytes the input could decode to (a mapping counts even untouched, so an
//! allocation sized from a length field is seen before anything is written to it).

use bytes::Bytes;
use gencompact::iceberg::puffin::parse_blob;
use gencompact::lz4::Lz4Reader;
use gencompact::snappy::SnappyReader;
use roaring::{RoaringBitmap, RoaringTreemap};
use std::cell::RefCell;
use std::io::{Cursor, Read};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Shared pieces

/// Growth of the peak virtual size allowed beside what an input justifies: a thread's malloc
/// arena, libFuzzer's own buffers. The allocations this catches are GiB (a length field).
const SLACK: u64 = 512 << 20;

/// The process's peak virtual size (`VmPeak`), in bytes.
fn vm_peak() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmPeak:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb << 10)
}

/// `f`, checked not to grow the process's peak virtual size by more than `justified` bytes
/// (and `SLACK`).
fn bounded<T>(what: &str, justified: u64, f: impl FnOnce() -> T) -> T {
    let before = vm_peak();
    let out = f();
    let grew = vm_peak().saturating_sub(before);
    assert!(
        grew <= justified.saturating_add(SLACK),
        "{what}: the process's peak virtual size grew by {grew} bytes; the input justifies {justified}"
    );
    out
}

/// splitmix64: the generators' randomness, from a seed the fuzzer gives (and the bounded run's
/// mutations, `tests/differential.rs`).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    /// An index below `n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}

/// The fuzzer's bytes read front to back; missing bytes are zeros.
struct Bytes8<'a>(&'a [u8]);

impl Bytes8<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        let mut v = [0u8; 8];
        for b in &mut v {
            *b = self.u8();
        }
        u64::from_le_bytes(v)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Text with back-references near and far, `len` bytes, the same for the same seed.
fn text(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Rng(seed);
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        match r.below(4) {
            0 => {
                for _ in 0..=r.below(40) {
                    out.push(b'a' + r.below(26) as u8);
                }
            }
            1 | 2 if out.len() > 16 => {
                let back = if r.below(2) == 0 { r.below(4096) } else { r.below(out.len() as u64) } as usize + 1;
                let back = back.min(out.len());
                let start = out.len() - back;
                for i in 0..(r.below(200) + 4) as usize {
                    out.push(out[start + i % back]);
                }
            }
            _ => out.extend_from_slice(format!("{{\"turn\":{},\"role\":\"user\"}},", r.below(100_000)).as_bytes()),
        }
    }
    out.truncate(len);
    out
}

/// The fuzzer's edits, 5 bytes each (a position and a byte): a zero byte cuts the stream
/// there, any other is XORed in.
fn apply_edits(stream: &mut Vec<u8>, edits: &[u8]) {
    for e in edits.chunks_exact(5).take(16) {
        if stream.is_empty() {
            return;
        }
        let at = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize % stream.len();
        match e[4] {
            0 => stream.truncate(at),
            x => stream[at] ^= x,
        }
    }
}

/// Everything `r` reads, `chunk` bytes a read.
fn read_all(mut r: impl Read, chunk: usize) -> std::io::Result<Vec<u8>> {
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

/// The read sizes a target reads its decoder in.
const READ_SIZES: [usize; 8] = [1, 3, 64, 4096, 65536, 1 << 20, 7, 1000];

/// A large stream (`encode` of `text(seed, len)`) made once for a seed and size and reused while
/// the fuzzer mutates only the edits.
fn cached(slot: &'static std::thread::LocalKey<RefCell<Option<Large>>>, seed: u64, len: usize, encode: fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    slot.with(|c| {
        let mut c = c.borrow_mut();
        match c.as_ref() {
            Some((s, l, stream)) if *s == seed && *l == len => stream.clone(),
            _ => {
                let stream = encode(&text(seed, len));
                *c = Some((seed, len, stream.clone()));
                stream
            }
        }
    })
}

/// A large stream made: its seed, its decoded size, its bytes.
type Large = (u64, usize, Vec<u8>);

thread_local! {
    static SNAPPY_LARGE: RefCell<Option<Large>> = const { RefCell::new(None) };
    static LZ4_LARGE: RefCell<Option<Large>> = const { RefCell::new(None) };
}

/// Where two decodings first differ.
fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()))
}

/// A size above the 4 MiB streaming threshold (`streamed::LARGE_PAGE`): 4 MiB to 6 MiB.
fn large_size(knob: u8) -> usize {
    (4 << 20) + usize::from(knob) * (8 << 10)
}

// ---------------------------------------------------------------------------------------------
// Snappy

/// The snappy target: byte 0 picks the input's shape (bits 0–1) and the read size (bits 2–4).
pub fn snappy(data: &[u8]) -> Option<usize> {
    let (&mode, rest) = data.split_first()?;
    let chunk = READ_SIZES[usize::from(mode >> 2) & 7];
    let stream = match mode & 3 {
        0 | 1 => rest.to_vec(),
        2 => {
            let mut b = Bytes8(rest);
            let len = large_size(b.u8());
            let seed = b.u64();
            let mut s = cached(&SNAPPY_LARGE, seed, len, |d| snap::raw::Encoder::new().compress_vec(d).unwrap_or_default());
            apply_edits(&mut s, b.0);
            s
        }
        _ => snappy_program(rest),
    };
    check_snappy(&stream, chunk)
}

/// Our reader's output and `snap`'s agree: the same bytes (their length), or both reject (`None`).
pub fn check_snappy(stream: &[u8], chunk: usize) -> Option<usize> {
    // The densest element: a 3-byte copy of 64 bytes.
    let most = stream.len() as u64 * 22 + 64;
    let ours = bounded("snappy", most, || SnappyReader::new(Bytes::copy_from_slice(stream)).and_then(|r| read_all(r, chunk)));
    let theirs = match snap::raw::decompress_len(stream) {
        Ok(n) if n as u64 <= most => snap::raw::Decoder::new().decompress_vec(stream).map_err(|e| e.to_string()),
        Ok(n) => Err(format!("declares {n} bytes, more than the stream can hold")),
        Err(e) => Err(e.to_string()),
    };
    match (ours, theirs) {
        (Ok(a), Ok(b)) => {
            assert!(
                a == b,
                "snappy: {} bytes decoded, snap decodes {}; first difference at byte {}",
                a.len(),
                b.len(),
                first_difference(&a, &b)
            );
            Some(a.len())
        }
        (Err(_), Err(_)) => None,
        (Ok(a), Err(e)) => panic!("snappy: our reader decodes {} bytes of a stream snap rejects ({e})", a.len()),
        (Err(e), Ok(b)) => panic!("snappy: our reader rejects a stream snap decodes to {} bytes: {e}", b.len()),
    }
}

/// A Snappy stream built an element a time from 3-byte operations: literals, copies of 1, 2
/// and 4 offset bytes (the last scaled to reach anywhere back), and runs of 64-byte copies
/// that make megabytes; the preamble declares what the elements make, or a lie.
fn snappy_program(rest: &[u8]) -> Vec<u8> {
    let mut b = Bytes8(rest);
    let mut r = Rng(u64::from(b.u16()));
    let lie = b.u8();
    let mut body = Vec::new();
    let mut produced: usize = 0;
    while !b.is_empty() {
        let (op, x, y) = (b.u8(), b.u8(), b.u8());
        match op % 5 {
            0 => {
                let len = usize::from(x) * 4 + 1 + usize::from(y & 3);
                if len <= 60 {
                    body.push(((len - 1) as u8) << 2);
                } else {
                    body.push(60 << 2);
                    body.push((len - 1) as u8);
                    if len - 1 > 255 {
                        body.pop();
                        body.pop();
                        body.push(61 << 2);
                        body.extend_from_slice(&((len - 1) as u16).to_le_bytes());
                    }
                }
                body.extend((0..len).map(|_| b'a' + r.below(26) as u8));
                produced += len;
            }
            1 => {
                let len = 4 + usize::from((op >> 3) & 7);
                body.push(1 | (((len - 4) as u8) << 2) | ((x & 7) << 5));
                body.push(y);
                produced += len;
            }
            2 => {
                let len = 1 + usize::from(op >> 3) % 64;
                body.push(2 | (((len - 1) as u8) << 2));
                body.extend_from_slice(&u16::from_le_bytes([x, y]).to_le_bytes());
                produced += len;
            }
            3 => {
                let len = 1 + usize::from(op >> 3) % 64;
                // (an offset from 1 to everything produced, by the fraction x/y of 65536)
                let offset = ((u64::from(u16::from_le_bytes([x, y])) * produced as u64) >> 16) + 1;
                body.push(3 | (((len - 1) as u8) << 2));
                body.extend_from_slice(&(offset as u32).to_le_bytes());
                produced += len;
            }
            _ => {
                let offset = 1 + u16::from(x % 8);
                for _ in 0..(usize::from(y) + 1) * 256 {
                    body.push(2 | (63 << 2));
                    body.extend_from_slice(&offset.to_le_bytes());
                }
                produced += (usize::from(y) + 1) * 256 * 64;
            }
        }
    }
    let declared: u64 = match lie {
        0 => produced as u64,
        1..=127 => produced as u64 + u64::from(lie),
        128..=254 => (produced as u64).saturating_sub(u64::from(lie - 127)),
        255 => 0xFFFF_FFFF,
    };
    let mut s = Vec::with_capacity(body.len() + 10);
    let mut n = declared;
    while n >= 0x80 {
        s.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    s.push(n as u8);
    s.extend_from_slice(&body);
    s
}

// ---------------------------------------------------------------------------------------------
// LZ4

/// The lz4 target: byte 0 picks the input's shape (bits 0–1) and the read size (bits 2–4).
pub fn lz4(data: &[u8]) -> Option<usize> {
    let (&mode, rest) = data.split_first()?;
    let chunk = READ_SIZES[usize::from(mode >> 2) & 7];
    let mut b = Bytes8(rest);
    let (block, declared) = match mode & 3 {
        0 | 1 => {
            // a declared length of up to 2^24, then the block
            let declared = usize::from(b.u16()) | usize::from(b.u8()) << 16;
            (b.0.to_vec(), declared)
        }
        2 => {
            let len = large_size(b.u8());
            let seed = b.u64();
            let mut s = cached(&LZ4_LARGE, seed, len, lz4_flex::block::compress);
            apply_edits(&mut s, b.0);
            (s, len)
        }
        _ => lz4_program(rest),
    };
    check_lz4(&block, declared, chunk)
}

/// Our reader's output and `lz4_flex`'s agree: the same `declared` bytes (their length), or both
/// reject (`None`).
pub fn check_lz4(block: &[u8], declared: usize, chunk: usize) -> Option<usize> {
    // The densest sequence: a match length byte of 255 adds 255 bytes.
    let most = block.len() as u64 * 255 + 64;
    let ours = bounded("lz4", most, || read_all(Lz4Reader::new(Bytes::copy_from_slice(block), declared), chunk));
    let theirs = if block.is_empty() && declared == 0 {
        // (an empty block is not LZ4 — a block holds at least its last sequence's token — and
        // `lz4_flex` rejects it; our reader reads it as the 0 bytes declared. A streamed page
        // is never empty: harmless, and left as it is.)
        Ok(Vec::new())
    } else if declared as u64 > most {
        Err(format!("declares {declared} bytes, more than the block can hold"))
    } else {
        match lz4_flex::block::decompress(block, declared) {
            Ok(v) if v.len() == declared => Ok(v),
            Ok(v) => Err(format!("decodes to {} bytes, {declared} declared", v.len())),
            Err(e) => Err(e.to_string()),
        }
    };
    match (ours, theirs) {
        (Ok(a), Ok(b)) => {
            assert!(
                a == b,
                "lz4: {} bytes decoded, lz4_flex decodes {}; first difference at byte {}",
                a.len(),
                b.len(),
                first_difference(&a, &b)
            );
            Some(a.len())
        }
        (Err(_), Err(_)) => None,
        (Ok(a), Err(e)) => panic!("lz4: our reader decodes {} bytes of a block lz4_flex rejects ({e})", a.len()),
        (Err(e), Ok(b)) => panic!("lz4: our reader rejects a block lz4_flex decodes to {} bytes: {e}", b.len()),
    }
}

/// An LZ4 block built a sequence at a time from 4-byte operations (literals, a match with the
/// fuzzer's offset, lengths from a few bytes to half a megabyte), ending with literals or not,
/// and the length it declares (what the sequences make, or a lie).
fn lz4_program(rest: &[u8]) -> (Vec<u8>, usize) {
    let mut b = Bytes8(rest);
    let mut r = Rng(u64::from(b.u16()));
    let flags = b.u8();
    let mut s = Vec::new();
    let mut produced: usize = 0;
    let length = |s: &mut Vec<u8>, mut n: usize| {
        while n >= 255 {
            s.push(255);
            n -= 255;
        }
        s.push(n as u8);
    };
    let sequence = |s: &mut Vec<u8>, r: &mut Rng, literals: usize, matched: Option<(u16, usize)>| {
        let lit_nibble = literals.min(15) as u8;
        let match_nibble = matched.map_or(0, |(_, len)| (len - 4).min(15) as u8);
        s.push((lit_nibble << 4) | match_nibble);
        if literals >= 15 {
            length(s, literals - 15);
        }
        s.extend((0..literals).map(|_| b'a' + r.below(26) as u8));
        if let Some((offset, len)) = matched {
            s.extend_from_slice(&offset.to_le_bytes());
            if len - 4 >= 15 {
                length(s, len - 4 - 15);
            }
        }
    };
    while !b.is_empty() {
        let (a, l, o1, o2) = (b.u8(), b.u8(), b.u8(), b.u8());
        let literals = if a & 1 == 1 { usize::from(l) * 64 } else { usize::from(l & 15) };
        let len = 4 + usize::from(a >> 2) * if a & 2 == 2 { 8192 } else { 1 };
        let offset = u16::from_le_bytes([o1, o2]);
        sequence(&mut s, &mut r, literals, Some((offset, len)));
        produced += literals + len;
    }
    if flags & 1 == 0 {
        let last = 5 + usize::from(flags >> 4);
        sequence(&mut s, &mut r, last, None);
        produced += last;
    }
    let declared = match flags & 6 {
        0 | 2 => produced,
        4 => produced + 1,
        _ => produced.saturating_sub(1),
    };
    (s, declared)
}

// ---------------------------------------------------------------------------------------------
// Spill frames

/// The spill_frames target: byte 0 even, the rest is a run file read as such (byte 0 / 2 the
/// rows it declares); odd, the rest gives a run's values and chunks (written by the writer and
/// read back whole) and edits to its bytes (bits 1–4: how many, 5 bytes each from the end).
pub fn spill_frames(data: &[u8]) -> Option<bool> {
    let (&mode, rest) = data.split_first()?;
    if mode & 1 == 0 {
        return Some(read_arbitrary_run(rest, u64::from(mode >> 1)));
    }
    let edits = (usize::from(mode >> 1) & 15) * 5;
    let (content, edits) = rest.split_at(rest.len().saturating_sub(edits));
    let (schema, chunks, chunk_bytes) = run_of(content);
    let rows: u64 = chunks.iter().map(|c| c.num_rows() as u64).sum();
    let bytes = gencompact::fuzzing::write_run(&schema, &chunks, chunk_bytes).expect("the writer writes a run");
    let back = bounded("spill frames", justified_by_frames(bytes.len()), || gencompact::fuzzing::read_run(&bytes, rows))
        .unwrap_or_else(|e| panic!("the run written does not read back: {e}"));
    let written: Vec<_> = chunks.iter().filter(|c| c.num_rows() > 0).collect();
    assert_eq!(back.len(), written.len(), "chunks read back");
    for (i, (a, b)) in back.iter().zip(&written).enumerate() {
        assert!(a == *b, "chunk {i} reads back different from what was written");
    }
    if edits.is_empty() {
        return Some(true);
    }
    let mut damaged = bytes;
    apply_edits(&mut damaged, edits);
    Some(read_arbitrary_run(&damaged, rows))
}

/// The most a run file of `len` bytes can decompress to: zstd's densest block (an RLE block, a
/// 3-byte header for up to 128 KiB).
fn justified_by_frames(len: usize) -> u64 {
    len as u64 * ((128 << 10) / 3) + (1 << 20)
}

/// A run file's bytes read back: an error (`false`) or the rows it declares (`true`), never a
/// panic, never more memory than the file can decompress to.
fn read_arbitrary_run(bytes: &[u8], rows: u64) -> bool {
    let out = bounded("spill frames", justified_by_frames(bytes.len()), || gencompact::fuzzing::read_run(bytes, rows));
    let Ok(chunks) = out else { return false };
    let read: u64 = chunks.iter().map(|c| c.num_rows() as u64).sum();
    assert_eq!(read, rows, "a run read back whole holds the rows it was written with");
    true
}

/// A schema (an id, a nullable string, a dictionary-encoded string) and chunks whose values
/// the fuzzer's bytes give (separated by commas; the first byte sets the chunks' sizes).
fn run_of(content: &[u8]) -> (arrow_schema::SchemaRef, Vec<arrow_array::RecordBatch>, usize) {
    use arrow_array::builder::StringDictionaryBuilder;
    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    let (knob, values) = content.split_first().map_or((0, &[][..]), |(k, v)| (*k, v));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
        Field::new("d", DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), true),
    ]));
    let values: Vec<&[u8]> = values.split(|b| *b == b',').collect();
    let per_chunk = 1 + usize::from(knob & 15);
    let chunk_bytes = 64 << (knob >> 4);
    let mut chunks = Vec::new();
    for (c, part) in values.chunks(per_chunk).enumerate() {
        let ids = Int64Array::from_iter_values((0..part.len()).map(|i| (c * per_chunk + i) as i64));
        let s: StringArray = part.iter().map(|v| (!v.is_empty()).then(|| String::from_utf8_lossy(v).into_owned())).collect();
        let mut d = StringDictionaryBuilder::<Int32Type>::new();
        for v in part {
            match v.first() {
                Some(x) => d.append_value(format!("k{}", x % 7)),
                None => d.append_null(),
            }
        }
        let columns: Vec<ArrayRef> = vec![Arc::new(ids), Arc::new(s), Arc::new(d.finish())];
        chunks.push(RecordBatch::try_new(schema.clone(), columns).expect("a chunk of the schema"));
    }
    (schema, chunks, chunk_bytes)
}

// ---------------------------------------------------------------------------------------------
// Puffin deletion vectors

/// The puffin target (the positions read, `None` where both reject): byte 0 bit 0 clear, the rest is the vector (a portable 64-bit Roaring
/// map) as it stands; set, the rest builds one a bitmap at a time (`vector_of`). The blob
/// around it is made valid (length, magic, CRC-32), except where bits 1–2 are both set: then
/// bits 3–4 pick one of them to break.
pub fn puffin(data: &[u8]) -> Option<u64> {
    let (&mode, rest) = data.split_first()?;
    let vector = if mode & 1 == 0 { rest.to_vec() } else { vector_of(rest) };
    let mut body = vec![0xD1, 0xD3, 0x39, 0x64];
    body.extend_from_slice(&vector);
    let mut blob = (body.len() as u32).to_be_bytes().to_vec();
    blob.extend_from_slice(&body);
    blob.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    let broken = mode & 6 == 6;
    if broken {
        let at = match (mode >> 3) & 3 {
            0 => 3,              // the length
            1 => 5,              // the magic
            _ => blob.len() - 1, // the CRC
        };
        blob[at] ^= 1;
    }
    // (a run container of 4 bytes holds 65,536 positions: memory is checked against the
    // bitmaps' own size in memory, not their serialized size)
    let ours = bounded("puffin", vector.len() as u64 * 64, || parse_blob(&blob));
    let theirs = if broken { Err("the blob's envelope is broken".to_string()) } else { reference_vector(&vector) };
    match (ours, theirs) {
        (Ok(a), Ok(b)) => {
            assert!((&a ^ &b).is_empty(), "puffin: {} positions read, the reference reads {}", a.len(), b.len());
            Some(a.len())
        }
        (Err(_), Err(_)) => None,
        (Ok(a), Err(e)) => panic!("puffin: {} positions read from a vector the spec rejects: {e}", a.len()),
        (Err(e), Ok(b)) => panic!("puffin: rejects a vector of {} positions the spec allows: {e}", b.len()),
    }
}

/// A portable 64-bit Roaring map read as the spec writes it: a count, then per bitmap a key
/// (strictly ascending, so one bitmap per key) and a 32-bit Roaring bitmap (`roaring`'s reader);
/// nothing after the last.
fn reference_vector(vector: &[u8]) -> Result<RoaringTreemap, String> {
    let mut c = Cursor::new(vector);
    let mut word = [0u8; 8];
    c.read_exact(&mut word).map_err(|e| format!("count: {e}"))?;
    let count = u64::from_le_bytes(word);
    let mut bitmaps = Vec::new();
    let mut last: Option<u32> = None;
    for _ in 0..count {
        let mut key = [0u8; 4];
        c.read_exact(&mut key).map_err(|e| format!("key: {e}"))?;
        let key = u32::from_le_bytes(key);
        if last.is_some_and(|l| key <= l) {
            return Err(format!("key {key} after key {}: keys must be strictly ascending", last.unwrap_or(0)));
        }
        last = Some(key);
        let bitmap = RoaringBitmap::deserialize_from(&mut c).map_err(|e| format!("bitmap of key {key}: {e}"))?;
        bitmaps.push((key, bitmap));
    }
    if c.position() as usize != vector.len() {
        return Err(format!("{} bytes after the last bitmap", vector.len() - c.position() as usize));
    }
    Ok(RoaringTreemap::from_bitmaps(bitmaps))
}

/// A 64-bit Roaring map from 4-byte operations: the key (the last one plus a signed step, so
/// keys may repeat or go down), and a bitmap of scattered values, a range, or both; the count
/// in front is the bitmaps' unless the first byte says otherwise.
fn vector_of(rest: &[u8]) -> Vec<u8> {
    let mut b = Bytes8(rest);
    let lie = b.u8();
    let mut r = Rng(u64::from(b.u8()));
    let mut key: u32 = 0;
    let mut parts = Vec::new();
    while !b.is_empty() {
        let (step, kind, x, y) = (b.u8() as i8, b.u8(), b.u8(), b.u8());
        key = key.wrapping_add_signed(i32::from(step));
        let mut bitmap = RoaringBitmap::new();
        if kind & 1 == 1 {
            for _ in 0..=x {
                bitmap.insert(r.next() as u32 >> (u32::from(y) % 32));
            }
        }
        if kind & 2 == 2 {
            let start = u32::from(x) << (kind >> 3);
            bitmap.insert_range(start..start.saturating_add(u32::from(y) << 8));
        }
        if kind & 4 == 4 {
            bitmap.optimize();
        }
        parts.push((key, bitmap));
    }
    let count = match lie {
        0..=250 => parts.len() as u64,
        251 => parts.len() as u64 + 1,
        252 => (parts.len() as u64).saturating_sub(1),
        253 => u64::MAX,
        _ => u64::from(u32::MAX) + 1,
    };
    let mut out = count.to_le_bytes().to_vec();
    for (key, bitmap) in parts {
        out.extend_from_slice(&key.to_le_bytes());
        bitmap.serialize_into(&mut out).unwrap_or_default();
    }
    out
}
