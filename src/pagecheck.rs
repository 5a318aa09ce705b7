//! Pagecheck: every page a column reader hands to parquet-rs's decoders, checked after it is
//! decompressed and before it is decoded, against what parquet-rs turns into allocations and
//! against the rows its row group declares.
//!
//! parquet-rs sizes buffers from counts inside a page before it reads the values they count:
//! a dictionary page's `num_values` (its decoded dictionary: 16 GiB of offsets for a string
//! dictionary declaring i32::MAX values in a few bytes), and the value counts in the headers of
//! DELTA_BINARY_PACKED streams (DELTA_LENGTH_BYTE_ARRAY's lengths and DELTA_BYTE_ARRAY's prefix
//! and suffix lengths are decoded whole into vectors of that count: 4 TiB for a header counting
//! 2^40). A failed allocation aborts the process, so these are refused here first:
//! - a dictionary page's values must fit in its bytes at the least a value of the column's
//!   physical type takes (1 bit for BOOLEAN, 4 bytes for INT32, FLOAT and a BYTE_ARRAY's length
//!   prefix, 8 for INT64 and DOUBLE, 12 for INT96, `type_length` for FIXED_LEN_BYTE_ARRAY);
//! - a DELTA stream's total count may not exceed the values the page holds (its `num_values`;
//!   in a v2 page, less its `num_nulls`): the values section is found behind the levels (v1:
//!   each level stream's 4-byte length, or its bit-packed size; v2: the lengths its header
//!   gives), and for DELTA_BYTE_ARRAY the first stream is skipped block by block to reach the
//!   second's header;
//! - a v2 page's `num_nulls` and `num_rows` may not exceed its `num_values`, nor its level
//!   lengths its bytes; v1 levels may not run past the page.
//!
//! And the rows: in a flat column (no repetition) a page's values are its rows, so the values
//! of the data pages read or skipped may never pass the row group's `num_rows`, and when the
//! chunk ends they must add up to it; a v2 page's `num_rows` must equal its `num_values`. A
//! reading that would lose rows (a page header declaring fewer values than it holds) is an
//! error, not a smaller output.
//!
//! A refused page is a `ParquetError::General` naming the column; the first refusal of a row
//! group is also kept (`Faults`), so that the caller reports the file and column without
//! decoding anything again.
//!
//! Memory: nothing beyond the page being checked (the checks only read it).

use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::schema::types::ColumnDescPtr;
use std::sync::{Arc, OnceLock};

/// A page refused, with the column it is in.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// The column's dotted path.
    pub column: String,
    pub msg: String,
}

/// The first page refused among a row group's columns, shared by their readers.
pub type Faults = Arc<OnceLock<Fault>>;

/// The pages of one column chunk, each checked before it is handed on.
pub struct Checked {
    pages: Box<dyn PageReader>,
    column: ColumnDescPtr,
    /// The rows its row group declares.
    rows: u64,
    /// Values of the data pages read or skipped so far (rows, in a flat column).
    seen: u64,
    /// A skipped page whose values were not known: the chunk is not counted at its end.
    uncounted: bool,
    faults: Faults,
    /// The most bytes a page may hold here (`GuardedInput::page_cap`): what a DELTA stream's
    /// lengths decode into is held to it too.
    cap: u64,
}

impl Checked {
    pub fn new(pages: Box<dyn PageReader>, column: ColumnDescPtr, rows: u64, faults: Faults, cap: u64) -> Self {
        Checked { pages, column, rows, seen: 0, uncounted: false, faults, cap }
    }

    fn flat(&self) -> bool {
        self.column.max_rep_level() == 0
    }

    fn fail(&self, msg: String) -> ParquetError {
        let column = self.column.path().string();
        let _ = self.faults.set(Fault { column: column.clone(), msg: msg.clone() });
        ParquetError::General(format!("column '{column}': {msg}"))
    }

    /// Counts a data page's `values` (its rows, in a flat column).
    fn count(&mut self, values: u64) -> Result<()> {
        self.seen = self.seen.saturating_add(values);
        if self.flat() && self.seen > self.rows {
            return Err(
                self.fail(format!("data pages hold {} values (one per row) where the row group declares {} rows", self.seen, self.rows))
            );
        }
        Ok(())
    }

    /// The chunk has ended: in a flat column its pages held one value per row.
    fn end(&self) -> Result<()> {
        if self.flat() && !self.uncounted && self.seen != self.rows {
            return Err(self.fail(format!(
                "the column chunk's data pages hold {} values (one per row) where the row group declares {} rows",
                self.seen, self.rows
            )));
        }
        Ok(())
    }

    fn check(&mut self, page: &Page) -> Result<()> {
        check_page(&self.column, page, self.cap).map_err(|msg| self.fail(msg))?;
        match page {
            Page::DictionaryPage { .. } => Ok(()),
            Page::DataPage { num_values, .. } => self.count(u64::from(*num_values)),
            Page::DataPageV2 { num_values, num_rows, .. } => {
                if self.flat() && num_rows != num_values {
                    return Err(self.fail(format!("a v2 data page of a flat column declares {num_rows} rows and {num_values} values")));
                }
                self.count(u64::from(*num_values))
            }
        }
    }
}

impl Iterator for Checked {
    type Item = Result<Page>;
    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for Checked {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        match self.pages.get_next_page()? {
            None => {
                self.end()?;
                Ok(None)
            }
            Some(page) => {
                self.check(&page)?;
                Ok(Some(page))
            }
        }
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        let next = self.pages.peek_next_page()?;
        if next.is_none() {
            self.end()?;
        }
        Ok(next)
    }

    fn skip_next_page(&mut self) -> Result<()> {
        match self.pages.peek_next_page()? {
            Some(PageMetadata { is_dict: true, .. }) | None => {}
            Some(PageMetadata { num_levels, num_rows, .. }) => match num_levels.or(num_rows) {
                Some(values) => self.count(values as u64)?,
                None => self.uncounted = true,
            },
        }
        self.pages.skip_next_page()
    }
}

/// The least bits a value of `column` takes in a PLAIN dictionary page.
fn least_bits(column: &ColumnDescPtr) -> u64 {
    match column.physical_type() {
        PhysicalType::BOOLEAN => 1,
        PhysicalType::INT32 | PhysicalType::FLOAT | PhysicalType::BYTE_ARRAY => 32,
        PhysicalType::INT64 | PhysicalType::DOUBLE => 64,
        PhysicalType::INT96 => 96,
        PhysicalType::FIXED_LEN_BYTE_ARRAY => (column.type_length().max(0) as u64 * 8).max(1),
    }
}

/// What is wrong with `page` of `column`, if anything (the row count aside); `cap`: the most
/// bytes a page may hold here.
pub fn check_page(column: &ColumnDescPtr, page: &Page, cap: u64) -> std::result::Result<(), String> {
    match page {
        Page::DictionaryPage { buf, num_values, .. } => {
            let need = u64::from(*num_values).saturating_mul(least_bits(column));
            let have = (buf.len() as u64).saturating_mul(8);
            if need > have {
                return Err(format!(
                    "a dictionary page declares {num_values} values in {} bytes (a {} value takes at least {} bits)",
                    buf.len(),
                    column.physical_type(),
                    least_bits(column)
                ));
            }
            Ok(())
        }
        Page::DataPage { buf, num_values, encoding, def_level_encoding, rep_level_encoding, .. } => {
            let mut offset = 0usize;
            for (max, level_encoding, what) in
                [(column.max_rep_level(), *rep_level_encoding, "repetition"), (column.max_def_level(), *def_level_encoding, "definition")]
            {
                if max > 0 {
                    let rest = buf.get(offset..).unwrap_or_default();
                    let len =
                        v1_levels_len(rest, max, *num_values, level_encoding).map_err(|e| format!("a data page's {what} levels: {e}"))?;
                    offset += len;
                }
            }
            let values = buf.get(offset..).unwrap_or_default();
            check_delta(*encoding, values, u64::from(*num_values), cap)
        }
        Page::DataPageV2 { buf, num_values, encoding, num_nulls, num_rows, def_levels_byte_len, rep_levels_byte_len, .. } => {
            if num_nulls > num_values {
                return Err(format!("a v2 data page declares {num_nulls} nulls among {num_values} values"));
            }
            if num_rows > num_values {
                return Err(format!("a v2 data page declares {num_rows} rows in {num_values} values"));
            }
            let levels = u64::from(*def_levels_byte_len) + u64::from(*rep_levels_byte_len);
            if levels > buf.len() as u64 {
                return Err(format!("a v2 data page's levels take {levels} bytes of its {}", buf.len()));
            }
            let values = buf.get(levels as usize..).unwrap_or_default();
            check_delta(*encoding, values, u64::from(num_values - num_nulls), cap)
        }
    }
}

/// The bytes a v1 page's level stream takes at its start `rest`, refused where they run past it.
fn v1_levels_len(rest: &[u8], max: i16, num_values: u32, encoding: Encoding) -> std::result::Result<usize, String> {
    match encoding {
        Encoding::RLE => {
            let Some(prefix) = rest.get(..4) else { return Err("no room for their length".into()) };
            let len = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as u64;
            if 4 + len > rest.len() as u64 {
                return Err(format!("{len} bytes declared where {} are left", rest.len().saturating_sub(4)));
            }
            Ok(4 + len as usize)
        }
        #[allow(deprecated)]
        Encoding::BIT_PACKED => {
            let width = u64::from(16 - (max as u16).leading_zeros());
            let len = (u64::from(num_values) * width).div_ceil(8);
            if len > rest.len() as u64 {
                return Err(format!("{num_values} bit-packed levels take {len} bytes where {} are left", rest.len()));
            }
            Ok(len as usize)
        }
        other => Err(format!("levels encoded as {other}")),
    }
}

/// DELTA streams in a page's values section `values`: each stream's count at most `most`.
fn check_delta(encoding: Encoding, values: &[u8], most: u64, cap: u64) -> std::result::Result<(), String> {
    let within = |header: &DeltaHeader, what: &str| {
        if header.total > most {
            return Err(format!("a {encoding} page's {what} header counts {} values where the page holds at most {most}", header.total));
        }
        // parquet-rs decodes a byte array page's lengths whole, 4 bytes each, before any value:
        // a repeated column's page may declare billions of values in a few bytes of levels.
        let lengths = header.total.saturating_mul(4);
        if encoding != Encoding::DELTA_BINARY_PACKED && lengths > cap {
            return Err(format!(
                "a {encoding} page's {what} header counts {} values: {lengths} bytes of lengths, more than the {cap} a page may hold here",
                header.total
            ));
        }
        Ok(())
    };
    match encoding {
        Encoding::DELTA_BINARY_PACKED => match DeltaHeader::parse(values)? {
            Some(h) => within(&h, "values"),
            None => Ok(()),
        },
        Encoding::DELTA_LENGTH_BYTE_ARRAY => match DeltaHeader::parse(values)? {
            Some(h) => within(&h, "lengths"),
            None => Ok(()),
        },
        Encoding::DELTA_BYTE_ARRAY => {
            let Some(prefixes) = DeltaHeader::parse(values)? else { return Ok(()) };
            within(&prefixes, "prefix lengths")?;
            // (a first stream parquet-rs cannot walk is refused by it before the second is read)
            let Some(end) = prefixes.stream_end(values) else { return Ok(()) };
            match DeltaHeader::parse(values.get(end..).unwrap_or_default())? {
                Some(suffixes) => within(&suffixes, "suffix lengths"),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The header of a DELTA_BINARY_PACKED stream: `<block size> <miniblocks per block> <total
/// count> <first value>`, ULEB128 varints (the first value zigzag-encoded).
#[derive(Debug, PartialEq)]
struct DeltaHeader {
    block_size: u64,
    miniblocks: u64,
    total: u64,
    /// Where the first block begins.
    end: usize,
}

/// parquet-rs's limit on a varint (`MAX_VLQ_BYTE_LEN`): it asserts on a longer one.
const MAX_VARINT: usize = 10;

/// The ULEB128 varint at `pos`, read as parquet-rs reads it (bits past the 64th dropped), and
/// where it ends; `None` when it runs past `buf`.
fn varint(buf: &[u8], pos: usize) -> std::result::Result<Option<(u64, usize)>, String> {
    let mut v = 0u64;
    for i in 0..MAX_VARINT {
        let Some(&b) = buf.get(pos + i) else { return Ok(None) };
        v |= u64::from(b & 0x7f).checked_shl(7 * i as u32).unwrap_or(0);
        if b & 0x80 == 0 {
            return Ok(Some((v, pos + i + 1)));
        }
    }
    Err(format!("a DELTA stream's varint runs past {MAX_VARINT} bytes"))
}

impl DeltaHeader {
    /// The header at the start of `buf`; `None` where parquet-rs refuses it before counting
    /// anything (too short, a count that is negative as an i64, zero miniblocks).
    fn parse(buf: &[u8]) -> std::result::Result<Option<DeltaHeader>, String> {
        let mut pos = 0;
        let mut fields = [0u64; 4];
        for f in fields.iter_mut() {
            let Some((v, next)) = varint(buf, pos)? else { return Ok(None) };
            *f = v;
            pos = next;
        }
        let [block_size, miniblocks, total, _first] = fields;
        if [block_size, miniblocks, total].iter().any(|&v| (v as i64) < 0) || miniblocks == 0 {
            return Ok(None);
        }
        Ok(Some(DeltaHeader { block_size, miniblocks, total, end: pos }))
    }

    /// Where the stream of this header ends in `buf`, found as parquet-rs finds it: block by
    /// block (`<min delta> <a bit width per miniblock> <the miniblocks>`), the miniblocks past
    /// the last value taking no bytes whatever their width; `None` where parquet-rs refuses the
    /// stream (sizes that are not multiples of 128 and 32, a width past 32 bits, too short).
    fn stream_end(&self, buf: &[u8]) -> Option<usize> {
        let block = self.block_size;
        if block == 0
            || !block.is_multiple_of(128)
            || !block.is_multiple_of(self.miniblocks)
            || !(block / self.miniblocks).is_multiple_of(32)
        {
            return None;
        }
        let per_miniblock = block / self.miniblocks;
        let mut remaining = self.total.saturating_sub(1);
        let mut pos = self.end;
        while remaining > 0 {
            let (_, next) = varint(buf, pos).ok()??;
            let widths = buf.get(next..next.checked_add(usize::try_from(self.miniblocks).ok()?)?)?;
            let mut end = next + widths.len();
            for &width in widths {
                if remaining == 0 {
                    break;
                }
                if width > 32 {
                    return None;
                }
                end = end.checked_add(usize::try_from(u64::from(width) * per_miniblock / 8).ok()?)?;
                remaining = remaining.saturating_sub(per_miniblock);
            }
            if end > buf.len() {
                return None;
            }
            pos = end;
        }
        Some(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray};
    use bytes::Bytes;
    use parquet::basic::Type as T;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::schema::types::{ColumnDescriptor, ColumnPath, Type};

    fn column(physical: T, optional: bool) -> ColumnDescPtr {
        let ty = Type::primitive_type_builder("c", physical).build().unwrap();
        Arc::new(ColumnDescriptor::new(Arc::new(ty), i16::from(optional), 0, ColumnPath::from("c")))
    }

    /// The first data page's bytes of a required column holding `array`, written by parquet-rs
    /// with `encoding` (no levels: the page is its values section).
    fn encoded(array: ArrayRef, encoding: Encoding) -> Vec<u8> {
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new("c", array.data_type().clone(), false)]));
        let props = parquet::file::properties::WriterProperties::builder().set_dictionary_enabled(false).set_encoding(encoding).build();
        let mut out = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, schema.clone(), Some(props)).unwrap();
        w.write(&RecordBatch::try_new(schema, vec![array]).unwrap()).unwrap();
        w.close().unwrap();
        let reader = SerializedFileReader::new(Bytes::from(out)).unwrap();
        let page = reader.get_row_group(0).unwrap().get_column_page_reader(0).unwrap().next().unwrap().unwrap();
        assert!(page.is_data_page() && page.encoding() == encoding);
        page.buffer().to_vec()
    }

    fn strings(encoding: Encoding, values: &[&str]) -> Vec<u8> {
        encoded(Arc::new(StringArray::from(values.to_vec())), encoding)
    }

    fn ints(values: &[i32]) -> Vec<u8> {
        encoded(Arc::new(Int32Array::from(values.to_vec())), Encoding::DELTA_BINARY_PACKED)
    }

    fn v1(encoding: Encoding, num_values: u32, buf: Vec<u8>) -> Page {
        Page::DataPage {
            buf: Bytes::from(buf),
            num_values,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    }

    #[test]
    fn walking_both_streams_of_a_delta_byte_array_page_reaches_its_suffix_bytes() {
        // (DELTA_BYTE_ARRAY as parquet-rs writes it: the prefix lengths' stream, the suffix
        // lengths' stream, then the suffixes; the streams walked here must end where the
        // suffixes, known from the values, begin)
        let words: Vec<String> = (0..1000).map(|i| format!("key-{:06}-{}", i * 7919 % 100_003, "x".repeat(i % 13))).collect();
        for n in [1usize, 2, 33, 128, 129, 1000] {
            let refs: Vec<&str> = words[..n].iter().map(String::as_str).collect();
            let page = strings(Encoding::DELTA_BYTE_ARRAY, &refs);
            let prefixes = DeltaHeader::parse(&page).unwrap().unwrap();
            assert_eq!(prefixes.total, n as u64);
            let end = prefixes.stream_end(&page).unwrap();
            let suffixes = DeltaHeader::parse(&page[end..]).unwrap().unwrap();
            assert_eq!(suffixes.total, n as u64);
            let data = end + suffixes.stream_end(&page[end..]).unwrap();
            let mut expected = Vec::new();
            let mut last: &[u8] = b"";
            for w in &refs {
                let shared = last.iter().zip(w.as_bytes()).take_while(|(a, b)| a == b).count();
                expected.extend_from_slice(&w.as_bytes()[shared..]);
                last = w.as_bytes();
            }
            assert_eq!(&page[data..], expected.as_slice(), "{n} values");
        }
    }

    #[test]
    fn counts_within_the_page_pass_and_counts_past_it_are_refused() {
        let d = column(T::BYTE_ARRAY, false);
        let dlba = strings(Encoding::DELTA_LENGTH_BYTE_ARRAY, &["a", "bb", "ccc"]);
        assert_eq!(check_page(&d, &v1(Encoding::DELTA_LENGTH_BYTE_ARRAY, 3, dlba.clone()), u64::MAX), Ok(()));
        // the lengths of 3 values take 12 bytes: within a cap of 12, past one of 11
        assert_eq!(check_page(&d, &v1(Encoding::DELTA_LENGTH_BYTE_ARRAY, 3, dlba.clone()), 12), Ok(()));
        let e = check_page(&d, &v1(Encoding::DELTA_LENGTH_BYTE_ARRAY, 3, dlba.clone()), 11).unwrap_err();
        assert!(e.contains("12 bytes of lengths, more than the 11"), "{e}");
        let e = check_page(&d, &v1(Encoding::DELTA_LENGTH_BYTE_ARRAY, 2, dlba), u64::MAX).unwrap_err();
        assert!(e.contains("lengths header counts 3 values where the page holds at most 2"), "{e}");
        let dba = strings(Encoding::DELTA_BYTE_ARRAY, &["abc", "abd", "abe", "x"]);
        assert_eq!(check_page(&d, &v1(Encoding::DELTA_BYTE_ARRAY, 4, dba.clone()), u64::MAX), Ok(()));
        assert!(check_page(&d, &v1(Encoding::DELTA_BYTE_ARRAY, 3, dba), u64::MAX).unwrap_err().contains("prefix lengths"));
        let i = column(T::INT32, false);
        let dbp = ints(&[5, 6, 7, 100, -3]);
        assert_eq!(check_page(&i, &v1(Encoding::DELTA_BINARY_PACKED, 5, dbp.clone()), u64::MAX), Ok(()));
        assert!(check_page(&i, &v1(Encoding::DELTA_BINARY_PACKED, 4, dbp), u64::MAX).is_err());
    }

    #[test]
    fn a_suffix_header_past_the_page_is_refused_when_the_prefixes_are_within_it() {
        let d = column(T::BYTE_ARRAY, false);
        // one value: the prefix stream is its header alone (block 128, 4 miniblocks, 1 value, 0)
        let mut page = strings(Encoding::DELTA_BYTE_ARRAY, &["hello"]);
        assert_eq!(&page[..5], &[0x80, 0x01, 0x04, 0x01, 0x00]);
        // the suffix stream's count: 1 → 2^40
        assert_eq!(page[8], 0x01);
        page.splice(8..9, [0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
        let e = check_page(&d, &v1(Encoding::DELTA_BYTE_ARRAY, 1, page), u64::MAX).unwrap_err();
        assert!(e.contains("suffix lengths header counts 1099511627776 values"), "{e}");
    }

    #[test]
    fn a_dictionary_page_declaring_more_values_than_its_bytes_hold_is_refused() {
        let dict = |n: u32, len: usize| Page::DictionaryPage {
            buf: Bytes::from(vec![0u8; len]),
            num_values: n,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let s = column(T::BYTE_ARRAY, false);
        assert_eq!(check_page(&s, &dict(3, 12), u64::MAX), Ok(()));
        assert!(check_page(&s, &dict(i32::MAX as u32, 12), u64::MAX).unwrap_err().contains("declares 2147483647 values in 12 bytes"));
        let i = column(T::INT32, false);
        assert_eq!(check_page(&i, &dict(3, 12), u64::MAX), Ok(()));
        assert!(check_page(&i, &dict(1 << 30, 400), u64::MAX).is_err());
        assert!(check_page(&column(T::INT64, false), &dict(2, 12), u64::MAX).is_err());
        assert_eq!(check_page(&column(T::BOOLEAN, false), &dict(16, 2), u64::MAX), Ok(()));
    }

    #[test]
    fn levels_and_nulls_past_the_page_are_refused() {
        let o = column(T::INT32, true);
        // RLE levels declaring 100 bytes in a page of 10
        let mut buf = 100u32.to_le_bytes().to_vec();
        buf.extend([0; 6]);
        assert!(check_page(&o, &v1(Encoding::PLAIN, 1, buf), u64::MAX).unwrap_err().contains("definition levels"));
        let v2 = |nulls: u32, rows: u32, def: u32| Page::DataPageV2 {
            buf: Bytes::from(vec![0u8; 8]),
            num_values: 4,
            encoding: Encoding::PLAIN,
            num_nulls: nulls,
            num_rows: rows,
            def_levels_byte_len: def,
            rep_levels_byte_len: 0,
            is_compressed: false,
            statistics: None,
        };
        assert_eq!(check_page(&o, &v2(1, 4, 2), u64::MAX), Ok(()));
        assert!(check_page(&o, &v2(5, 4, 2), u64::MAX).is_err());
        assert!(check_page(&o, &v2(1, 5, 2), u64::MAX).is_err());
        assert!(check_page(&o, &v2(1, 4, 9), u64::MAX).is_err());
    }
}
