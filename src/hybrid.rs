//! Hybrid: Parquet's RLE / bit-packed hybrid encoding (of definition levels and dictionary
//! indices), decoded and, for levels of bit width 1, encoded, for `streamed`, which writes the
//! levels of the pages it cuts a large page into. parquet-rs keeps its own codec of this
//! encoding private (public only under its `experimental` feature, whose interface may change
//! in any release).
//!
//! Memory: none beyond the caller's buffers.

/// Reads a ULEB128 varint at `*at`, moving past it.
pub fn varint(input: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *input.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Decodes `n` values of `width` bits (at most 32) from `data`, handing each to `each`, which
/// may stop the decoding with an error.
pub fn decode(data: &[u8], width: u8, n: usize, mut each: impl FnMut(u32) -> Result<(), String>) -> Result<(), String> {
    if width > 32 {
        return Err(format!("bit width {width} is more than 32"));
    }
    let short = || "encoded values end early".to_string();
    let mask = if width == 32 { u64::from(u32::MAX) } else { (1u64 << width) - 1 };
    let mut done = 0;
    let mut at = 0;
    while done < n {
        let header = varint(data, &mut at).ok_or_else(short)?;
        let count = usize::try_from(header >> 1).map_err(|_| short())?;
        if header & 1 == 1 {
            // `count` groups of 8 values, packed from the least significant bit.
            let bytes = count.checked_mul(usize::from(width)).ok_or_else(short)?;
            let end = at.checked_add(bytes).filter(|e| *e <= data.len()).ok_or_else(short)?;
            let values = count.saturating_mul(8).min(n - done);
            if width == 0 {
                (0..values).try_for_each(|_| each(0))?;
            } else {
                let (mut acc, mut bits, mut produced) = (0u64, 0u8, 0);
                for &byte in &data[at..end] {
                    acc |= u64::from(byte) << bits;
                    bits += 8;
                    while bits >= width && produced < values {
                        each((acc & mask) as u32)?;
                        produced += 1;
                        acc >>= width;
                        bits -= width;
                    }
                }
            }
            done += values;
            at = end;
        } else {
            let len = usize::from(width).div_ceil(8);
            let end = at.checked_add(len).filter(|e| *e <= data.len()).ok_or_else(short)?;
            let value = data[at..end].iter().rev().fold(0u32, |v, b| (v << 8) | u32::from(*b));
            at = end;
            let values = count.min(n - done);
            (0..values).try_for_each(|_| each(value))?;
            done += values;
            if count == 0 && at >= data.len() {
                return Err(short());
            }
        }
    }
    Ok(())
}

/// Definition levels of a flat column (at most 1), `n` of them.
pub fn decode_levels(data: &[u8], n: usize) -> Result<Vec<bool>, String> {
    let mut out = Vec::with_capacity(n);
    decode(data, 1, n, |v| {
        out.push(v == 1);
        Ok(())
    })?;
    Ok(out)
}

/// `levels` as one bit-packed run of bit width 1.
pub fn encode_levels(levels: &[bool]) -> Vec<u8> {
    let groups = levels.len().div_ceil(8);
    let mut out = Vec::with_capacity(groups + 10);
    let mut header = (groups as u64) << 1 | 1;
    while header >= 0x80 {
        out.push(header as u8 | 0x80);
        header >>= 7;
    }
    out.push(header as u8);
    out.extend(levels.chunks(8).map(|group| group.iter().enumerate().fold(0u8, |b, (i, l)| b | u8::from(*l) << i)));
    out
}

/// The most bytes `encode_levels` writes for `n` levels.
pub fn max_levels_len(n: usize) -> usize {
    10 + n.div_ceil(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_runs_and_packed_groups_of_every_width() {
        // RLE: 5 × 3 (width 2, one byte); bit-packed: one group of 8 values of width 3.
        let values = [1u32, 2, 3, 4, 5, 6, 7, 0];
        let mut packed = 0u32;
        for (i, v) in values.iter().enumerate() {
            packed |= v << (3 * i);
        }
        let mut data = vec![5 << 1, 3, 1 << 1 | 1];
        data.extend_from_slice(&packed.to_le_bytes()[..3]);
        let mut got = Vec::new();
        decode(&data, 3, 13, |v| {
            got.push(v);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, [3, 3, 3, 3, 3, 1, 2, 3, 4, 5, 6, 7, 0]);
        assert!(decode(&data[..4], 3, 13, |_| Ok(())).is_err(), "a cut run is an error");
        assert!(decode(&[0, 0], 1, 5, |_| Ok(())).is_err(), "empty runs past the end are an error, not a loop");
    }

    #[test]
    fn levels_round_trip_through_the_bit_packed_run() {
        for n in [0usize, 1, 7, 8, 9, 1000, 20_000] {
            let levels: Vec<bool> = (0..n).map(|i| i % 3 != 1 && i % 11 != 0).collect();
            let encoded = encode_levels(&levels);
            assert!(encoded.len() <= max_levels_len(n));
            assert_eq!(decode_levels(&encoded, n).unwrap(), levels, "{n} levels");
        }
    }
}
