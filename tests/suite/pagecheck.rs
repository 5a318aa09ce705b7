//! Pages whose counts parquet-rs would allocate by, or whose values are not the rows their
//! row group declares (`pagecheck`, `read`): small files written by parquet-rs, uncompressed,
//! then one page header or values section edited. Each edit keeps the page's length (the page
//! body is cut or padded at its end to make room), so the footer, and any page index, stay true.
//! Each call must end in `ERR_INPUT_CORRUPT` naming the file and the column, and leave nothing
//! in `outDir`; the process must live (a 16 GiB or 4 TiB request would abort it).

use crate::common;

use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Schema};
use common::*;
use parquet::arrow::ArrowWriter;
use parquet::basic::Encoding;
use parquet::file::metadata::ParquetMetaDataReader;
use parquet::file::properties::{WriterProperties, WriterVersion};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// A Thrift compact value, as much of it as a page header holds.
#[derive(Debug, Clone)]
enum V {
    /// An integer and its wire type (i8/i16/i32/i64: zigzag varints).
    Int(u8, i64),
    Bool(bool),
    /// Anything else, kept as its bytes with its wire type (binaries, lists).
    Raw(u8, Vec<u8>),
    Struct(Vec<(i16, V)>),
}

fn read_varint(b: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[*pos];
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

fn zigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

fn parse_struct(b: &[u8], pos: &mut usize) -> Vec<(i16, V)> {
    let mut fields = Vec::new();
    let mut last = 0i16;
    loop {
        let head = b[*pos];
        *pos += 1;
        if head == 0 {
            return fields;
        }
        let ty = head & 0x0f;
        let id = if head >> 4 == 0 { zigzag(read_varint(b, pos)) as i16 } else { last + i16::from(head >> 4) };
        last = id;
        let value = match ty {
            1 | 2 => V::Bool(ty == 1),
            3 => {
                *pos += 1;
                V::Int(3, i64::from(b[*pos - 1] as i8))
            }
            4..=6 => V::Int(ty, zigzag(read_varint(b, pos))),
            8 => {
                let start = *pos;
                let len = read_varint(b, pos) as usize;
                *pos += len;
                V::Raw(8, b[start..*pos].to_vec())
            }
            12 => V::Struct(parse_struct(b, pos)),
            other => panic!("a page header field of wire type {other}"),
        };
        fields.push((id, value));
    }
}

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn write_struct(out: &mut Vec<u8>, fields: &[(i16, V)]) {
    let mut last = 0i16;
    for (id, value) in fields {
        let ty = match value {
            V::Int(t, _) | V::Raw(t, _) => *t,
            V::Bool(true) => 1,
            V::Bool(false) => 2,
            V::Struct(_) => 12,
        };
        assert!(*id > last && id - last <= 15);
        out.push((((id - last) as u8) << 4) | ty);
        last = *id;
        match value {
            V::Int(3, v) => out.push(*v as u8),
            V::Int(_, v) => write_varint(out, ((v << 1) ^ (v >> 63)) as u64),
            V::Raw(_, bytes) => out.extend_from_slice(bytes),
            V::Bool(_) => {}
            V::Struct(inner) => write_struct(out, inner),
        }
    }
    out.push(0);
}

fn field_mut(fields: &mut [(i16, V)], id: i16) -> &mut V {
    &mut fields.iter_mut().find(|(i, _)| *i == id).unwrap_or_else(|| panic!("no field {id}")).1
}

fn set_int(fields: &mut [(i16, V)], id: i16, value: i64) {
    match field_mut(fields, id) {
        V::Int(_, v) => *v = value,
        other => panic!("field {id} is {other:?}"),
    }
}

fn sub(fields: &mut [(i16, V)], id: i16) -> &mut Vec<(i16, V)> {
    match field_mut(fields, id) {
        V::Struct(s) => s,
        other => panic!("field {id} is {other:?}"),
    }
}

/// Edits the page of the uncompressed file `path` whose header starts at `start`: `edit` gets
/// its header's fields and its body. The page keeps its length: the body is cut or padded with
/// zeros at its end, and the header's sizes follow it.
fn edit_page(path: &Path, start: usize, edit: impl FnOnce(&mut Vec<(i16, V)>, &mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    let mut pos = start;
    let mut header = parse_struct(&bytes, &mut pos);
    let size = |h: &mut Vec<(i16, V)>| match field_mut(h, 3) {
        V::Int(_, v) => *v as usize,
        _ => unreachable!(),
    };
    let body_len = size(&mut header);
    let total = pos - start + body_len;
    let mut body = bytes[pos..pos + body_len].to_vec();
    edit(&mut header, &mut body);
    let encoded = loop {
        set_int(&mut header, 2, body.len() as i64);
        set_int(&mut header, 3, body.len() as i64);
        let mut out = Vec::new();
        write_struct(&mut out, &header);
        let now = out.len() + body.len();
        if now == total {
            out.extend_from_slice(&body);
            break out;
        }
        if now > total {
            body.truncate(body.len() - (now - total));
        } else {
            body.resize(body.len() + (total - now), 0);
        }
    };
    bytes.splice(start..start + total, encoded);
    std::fs::write(path, bytes).unwrap();
}

/// Writes `columns` as one row group of one uncompressed file `path`.
fn write(path: &Path, columns: Vec<(&str, ArrayRef)>, props: WriterProperties) {
    let fields: Vec<_> = columns.iter().enumerate().map(|(i, (name, a))| field(name, a.data_type().clone(), false, i as i32 + 1)).collect();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), columns.into_iter().map(|(_, a)| a).collect()).unwrap();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn plain() -> parquet::file::properties::WriterPropertiesBuilder {
    WriterProperties::builder().set_compression(parquet::basic::Compression::UNCOMPRESSED).set_dictionary_enabled(false)
}

/// Where leaf `leaf`'s dictionary page (if any) and first data page start.
fn pages_of(path: &Path, leaf: usize) -> (Option<usize>, usize) {
    let meta = ParquetMetaDataReader::new().parse_and_finish(&File::open(path).unwrap()).unwrap();
    let c = meta.row_group(0).column(leaf);
    (c.dictionary_page_offset().map(|o| o as usize), c.data_page_offset() as usize)
}

fn ids(n: i32) -> ArrayRef {
    Arc::new(Int32Array::from_iter_values(0..n))
}

fn words(n: usize) -> ArrayRef {
    Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("word-{:04}", i % 7))))
}

/// Compacts `file` (after `good.parquet`, its copy before the edit) and expects `ERR_INPUT_CORRUPT` naming it and `column`,
/// with `says` in the message, and nothing in outDir.
fn refused(s: &Scratch, file: &Path, column: &str, says: &str) -> String {
    let good = s.path().join("good.parquet");
    let out = s.path().join("out");
    let files = vec![good.display().to_string(), file.display().to_string()];
    let err = match run(&files, &opts(&out)) {
        Ok(r) => panic!("the call succeeded with {} rows written", r.rows_written),
        Err(e) => e,
    };
    let text = err.to_string();
    assert_eq!(err.code(), "ERR_INPUT_CORRUPT", "{text}");
    assert_eq!(err.path(), Some(file.display().to_string().as_str()), "{text}");
    assert_eq!(err.column(), Some(column), "{text}");
    assert!(text.contains(says), "{text}");
    assert_eq!(entries(&out), Vec::<String>::new(), "nothing left in outDir");
    text
}

#[test]
fn a_string_dictionary_page_declaring_i32_max_values_is_refused_before_parquet_rs_sizes_it() {
    let s = Scratch::new("pagecheck-dict-str");
    let path = s.path().join("dict.parquet");
    write(&path, vec![("id", ids(50)), ("s", words(50))], plain().set_dictionary_enabled(true).build());
    let (dictionary, _) = pages_of(&path, 1);
    std::fs::copy(&path, s.path().join("good.parquet")).unwrap();
    // (i32::MAX values: 16 GiB of offsets for a page of 7 values)
    edit_page(&path, dictionary.unwrap(), |h, _| set_int(sub(h, 7), 1, i64::from(i32::MAX)));
    refused(&s, &path, "s", "a dictionary page declares 2147483647 values in");
}

#[test]
fn an_int32_dictionary_page_declaring_2_30_values_is_refused() {
    let s = Scratch::new("pagecheck-dict-int");
    let path = s.path().join("dict.parquet");
    let n: ArrayRef = Arc::new(Int32Array::from_iter_values((0..50).map(|i| i % 5)));
    write(&path, vec![("id", ids(50)), ("n", n)], plain().set_dictionary_enabled(true).build());
    let (dictionary, _) = pages_of(&path, 1);
    std::fs::copy(&path, s.path().join("good.parquet")).unwrap();
    edit_page(&path, dictionary.unwrap(), |h, _| set_int(sub(h, 7), 1, 1 << 30));
    refused(&s, &path, "n", "a dictionary page declares 1073741824 values in 16 bytes");
}

/// 2^40 as a ULEB128 varint.
const TWO_40: [u8; 6] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x20];

#[test]
fn a_delta_length_byte_array_page_counting_2_40_lengths_is_refused() {
    let s = Scratch::new("pagecheck-dlba");
    let path = s.path().join("dlba.parquet");
    write(
        &path,
        vec![("id", ids(50)), ("s", words(50))],
        plain().set_column_encoding("s".into(), Encoding::DELTA_LENGTH_BYTE_ARRAY).build(),
    );
    let (_, data) = pages_of(&path, 1);
    std::fs::copy(&path, s.path().join("good.parquet")).unwrap();
    edit_page(&path, data, |_, body| {
        // the lengths' header: block 128, 4 miniblocks, 50 values (a required column: no levels)
        assert_eq!(&body[..4], &[0x80, 0x01, 0x04, 50]);
        body.splice(3..4, TWO_40);
    });
    refused(&s, &path, "s", "lengths header counts 1099511627776 values where the page holds at most 50");
}

#[test]
fn a_delta_byte_array_page_counting_2_40_prefixes_or_suffixes_is_refused() {
    for (what, at) in [("prefix", 3), ("suffix", 8)] {
        let s = Scratch::new("pagecheck-dba");
        let path = s.path().join(format!("dba-{what}.parquet"));
        let one: ArrayRef = Arc::new(StringArray::from(vec!["hello"]));
        write(&path, vec![("id", ids(1)), ("s", one)], plain().set_column_encoding("s".into(), Encoding::DELTA_BYTE_ARRAY).build());
        let (_, data) = pages_of(&path, 1);
        std::fs::copy(&path, s.path().join("good.parquet")).unwrap();
        edit_page(&path, data, |_, body| {
            // one value: the prefix stream is its header alone, the suffix stream's follows
            assert_eq!(&body[..10], &[0x80, 0x01, 0x04, 0x01, 0x00, 0x80, 0x01, 0x04, 0x01, 0x0a]);
            body.splice(at..at + 1, TWO_40);
        });
        refused(&s, &path, "s", &format!("{what} lengths header counts 1099511627776 values where the page holds at most 1"));
    }
}

#[test]
fn a_delta_binary_packed_page_counting_more_values_than_it_holds_is_refused() {
    let s = Scratch::new("pagecheck-dbp");
    let path = s.path().join("dbp.parquet");
    write(&path, vec![("id", ids(50))], plain().set_column_encoding("id".into(), Encoding::DELTA_BINARY_PACKED).build());
    let (_, data) = pages_of(&path, 0);
    std::fs::copy(&path, s.path().join("good.parquet")).unwrap();
    edit_page(&path, data, |_, body| {
        assert_eq!(&body[..4], &[0x80, 0x01, 0x04, 50]);
        body[3] = 51;
    });
    refused(&s, &path, "id", "values header counts 51 values where the page holds at most 50");
}

#[test]
fn a_data_page_declaring_fewer_values_than_its_row_group_rows_is_refused_not_read_as_fewer_rows() {
    let s = Scratch::new("pagecheck-fewer");
    let path = s.path().join("fewer.parquet");
    write(&path, vec![("id", ids(100))], plain().build());
    let (_, data) = pages_of(&path, 0);
    std::fs::copy(&path, s.path().join("good.parquet")).unwrap();
    edit_page(&path, data, |h, _| set_int(sub(h, 5), 1, 60));
    refused(&s, &path, "id", "data pages hold 60 values (one per row) where the row group declares 100 rows");
}

#[test]
fn a_data_page_declaring_more_values_than_its_row_group_rows_is_refused() {
    let s = Scratch::new("pagecheck-more");
    let path = s.path().join("more.parquet");
    write(&path, vec![("id", ids(100)), ("s", words(100))], plain().build());
    let (_, data) = pages_of(&path, 1);
    std::fs::copy(&path, s.path().join("good.parquet")).unwrap();
    edit_page(&path, data, |h, _| set_int(sub(h, 5), 1, 150));
    refused(&s, &path, "s", "data pages hold 150 values (one per row) where the row group declares 100 rows");
}

#[test]
fn a_v2_page_of_a_flat_column_whose_rows_are_not_its_values_is_refused() {
    let s = Scratch::new("pagecheck-v2");
    let path = s.path().join("v2.parquet");
    write(&path, vec![("id", ids(100)), ("s", words(100))], plain().set_writer_version(WriterVersion::PARQUET_2_0).build());
    let (_, data) = pages_of(&path, 1);
    std::fs::copy(&path, s.path().join("good.parquet")).unwrap();
    // DataPageHeaderV2: 1 num_values, 2 num_nulls, 3 num_rows
    edit_page(&path, data, |h, _| set_int(sub(h, 8), 3, 40));
    refused(&s, &path, "s", "a v2 data page of a flat column declares 40 rows and 100 values");
}

#[test]
fn files_the_checks_pass_compact_to_the_rows_parquet_rs_own_reader_reads() {
    // every encoding the checks parse, v1 and v2 pages, with nulls: all pass, every row kept
    let s = Scratch::new("pagecheck-valid");
    let mut files = Vec::new();
    for (i, version) in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0].into_iter().enumerate() {
        for (j, encoding) in [Encoding::DELTA_LENGTH_BYTE_ARRAY, Encoding::DELTA_BYTE_ARRAY, Encoding::PLAIN].into_iter().enumerate() {
            let path = s.path().join(format!("valid-{i}-{j}.parquet"));
            let n = 3000;
            let strings: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|r| (r % 9 != 4).then(|| format!("k{:05}", r * 31 % 997)))));
            let props = plain()
                .set_writer_version(version)
                .set_data_page_row_count_limit(700)
                .set_write_batch_size(100)
                .set_column_encoding("s".into(), encoding)
                .set_column_encoding("id".into(), Encoding::DELTA_BINARY_PACKED)
                .build();
            let fields = vec![field("id", DataType::Int32, false, 1), field("s", DataType::Utf8, true, 2)];
            let schema = Arc::new(Schema::new(fields));
            let batch = RecordBatch::try_new(schema.clone(), vec![ids(n), strings]).unwrap();
            let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema, Some(props)).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            files.push(path.display().to_string());
        }
    }
    let r = run(&files, &opts(&s.path().join("out"))).unwrap();
    assert_eq!(r.rows_written, 6 * 3000);
    let mut expected = 0usize;
    for f in &files {
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(File::open(f).unwrap()).unwrap().build().unwrap();
        expected += reader.map(|b| b.unwrap().num_rows()).sum::<usize>();
    }
    assert_eq!(r.rows_written as usize, expected);
}
