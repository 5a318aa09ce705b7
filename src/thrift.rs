//! Thrift: a strict, bounded reader of Thrift's compact protocol for the Parquet structures a
//! footer and a page header hold (`FileMetaData`, `PageHeader` and what they nest), written from
//! the Parquet format's Thrift definitions. `guard` runs it over every footer and every page
//! header before parquet-rs parses them (parquet-rs keeps its own parser crate-private), so that
//! what parquet-rs then reads has one reading:
//! - a field id repeated in a struct (parquet-rs keeps the last), a known field under another
//!   wire type (parquet-rs reads a known id by its expected type whatever the wire says), an
//!   integer outside its field's type (parquet-rs truncates it), a varint longer than 10 bytes,
//!   a union of other than one field, a list whose element type is not its field's, or a wire
//!   type the protocol does not define are refused;
//! - lengths and counts are checked against the bytes left before anything is skipped or counted,
//!   nesting is bounded (parquet-rs's own skip limit), and fields of ids the definitions do not
//!   know are skipped as parquet-rs skips them.
//!
//! What the guard needs of a page header or a footer's schema is handed out as it is read
//! (`page_header`, `file_metadata`); everything else is only checked.
//!
//! Memory: none beyond the reader it reads from and, for a footer, one count per open schema
//! group (at most `MAX_SCHEMA_DEPTH`).

use std::io::Read;

/// Deepest thrift nesting followed (parquet-rs's own skip limit).
const MAX_THRIFT_DEPTH: usize = 64;

/// Deepest schema accepted (real schemas nest a handful of levels; parquet-rs builds the schema
/// tree recursively, a level per frame: a deep enough one overflows the stack).
pub const MAX_SCHEMA_DEPTH: usize = 64;

pub type TResult<T> = std::result::Result<T, String>;

/// Compact protocol wire types.
mod wire {
    pub const TRUE: u8 = 1;
    pub const FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const SET: u8 = 10;
    pub const MAP: u8 = 11;
    pub const STRUCT: u8 = 12;
}

/// What a field of a definition holds.
#[derive(Clone, Copy)]
enum Kind {
    Bool,
    Byte,
    I16,
    I32,
    I64,
    Double,
    Binary,
    List(&'static Kind),
    Struct(&'static Def),
    /// A struct holding exactly one of its fields.
    Union(&'static Def),
}

impl Kind {
    /// The wire type a field of this kind is written with.
    fn wire(self) -> u8 {
        match self {
            Kind::Bool => wire::TRUE,
            Kind::Byte => wire::BYTE,
            Kind::I16 => wire::I16,
            Kind::I32 => wire::I32,
            Kind::I64 => wire::I64,
            Kind::Double => wire::DOUBLE,
            Kind::Binary => wire::BINARY,
            Kind::List(_) => wire::LIST,
            Kind::Struct(_) | Kind::Union(_) => wire::STRUCT,
        }
    }

    /// Whether a field header's wire type `w` is this kind's.
    fn written_as(self, w: u8) -> bool {
        match self {
            Kind::Bool => w == wire::TRUE || w == wire::FALSE,
            k => k.wire() == w,
        }
    }
}

/// A Thrift struct's definition: its name (for messages and `Event`s) and its fields by id.
pub struct Def {
    pub name: &'static str,
    fields: &'static [(i16, &'static str, Kind)],
}

impl Def {
    fn field(&self, id: i16) -> Option<(&'static str, Kind)> {
        self.fields.iter().find(|f| f.0 == id).map(|f| (f.1, f.2))
    }
}

const EMPTY: &[(i16, &str, Kind)] = &[];
static EMPTY_STRUCT: Def = Def { name: "(empty struct)", fields: EMPTY };

static KEY_VALUE: Def = Def { name: "KeyValue", fields: &[(1, "key", Kind::Binary), (2, "value", Kind::Binary)] };

static TIME_UNIT: Def = Def {
    name: "TimeUnit",
    fields: &[
        (1, "MILLIS", Kind::Struct(&EMPTY_STRUCT)),
        (2, "MICROS", Kind::Struct(&EMPTY_STRUCT)),
        (3, "NANOS", Kind::Struct(&EMPTY_STRUCT)),
    ],
};
static DECIMAL: Def = Def { name: "DecimalType", fields: &[(1, "scale", Kind::I32), (2, "precision", Kind::I32)] };
static TIMESTAMP: Def = Def { name: "TimestampType", fields: &[(1, "isAdjustedToUTC", Kind::Bool), (2, "unit", Kind::Union(&TIME_UNIT))] };
static INT_TYPE: Def = Def { name: "IntType", fields: &[(1, "bitWidth", Kind::Byte), (2, "isSigned", Kind::Bool)] };
static VARIANT: Def = Def { name: "VariantType", fields: &[(1, "specification_version", Kind::Byte)] };
static GEOMETRY: Def = Def { name: "GeometryType", fields: &[(1, "crs", Kind::Binary)] };
static GEOGRAPHY: Def = Def { name: "GeographyType", fields: &[(1, "crs", Kind::Binary), (2, "algorithm", Kind::I32)] };
static LOGICAL_TYPE: Def = Def {
    name: "LogicalType",
    fields: &[
        (1, "STRING", Kind::Struct(&EMPTY_STRUCT)),
        (2, "MAP", Kind::Struct(&EMPTY_STRUCT)),
        (3, "LIST", Kind::Struct(&EMPTY_STRUCT)),
        (4, "ENUM", Kind::Struct(&EMPTY_STRUCT)),
        (5, "DECIMAL", Kind::Struct(&DECIMAL)),
        (6, "DATE", Kind::Struct(&EMPTY_STRUCT)),
        (7, "TIME", Kind::Struct(&TIMESTAMP)),
        (8, "TIMESTAMP", Kind::Struct(&TIMESTAMP)),
        (10, "INTEGER", Kind::Struct(&INT_TYPE)),
        (11, "UNKNOWN", Kind::Struct(&EMPTY_STRUCT)),
        (12, "JSON", Kind::Struct(&EMPTY_STRUCT)),
        (13, "BSON", Kind::Struct(&EMPTY_STRUCT)),
        (14, "UUID", Kind::Struct(&EMPTY_STRUCT)),
        (15, "FLOAT16", Kind::Struct(&EMPTY_STRUCT)),
        (16, "VARIANT", Kind::Struct(&VARIANT)),
        (17, "GEOMETRY", Kind::Struct(&GEOMETRY)),
        (18, "GEOGRAPHY", Kind::Struct(&GEOGRAPHY)),
        (19, "FILE", Kind::Struct(&EMPTY_STRUCT)),
    ],
};

pub static SCHEMA_ELEMENT: Def = Def {
    name: "SchemaElement",
    fields: &[
        (1, "type", Kind::I32),
        (2, "type_length", Kind::I32),
        (3, "repetition_type", Kind::I32),
        (4, "name", Kind::Binary),
        (5, "num_children", Kind::I32),
        (6, "converted_type", Kind::I32),
        (7, "scale", Kind::I32),
        (8, "precision", Kind::I32),
        (9, "field_id", Kind::I32),
        (10, "logicalType", Kind::Union(&LOGICAL_TYPE)),
    ],
};

static STATISTICS: Def = Def {
    name: "Statistics",
    fields: &[
        (1, "max", Kind::Binary),
        (2, "min", Kind::Binary),
        (3, "null_count", Kind::I64),
        (4, "distinct_count", Kind::I64),
        (5, "max_value", Kind::Binary),
        (6, "min_value", Kind::Binary),
        (7, "is_max_value_exact", Kind::Bool),
        (8, "is_min_value_exact", Kind::Bool),
        (9, "nan_count", Kind::I64),
    ],
};
static PAGE_ENCODING_STATS: Def =
    Def { name: "PageEncodingStats", fields: &[(1, "page_type", Kind::I32), (2, "encoding", Kind::I32), (3, "count", Kind::I32)] };
static SIZE_STATISTICS: Def = Def {
    name: "SizeStatistics",
    fields: &[
        (1, "unencoded_byte_array_data_bytes", Kind::I64),
        (2, "repetition_level_histogram", Kind::List(&Kind::I64)),
        (3, "definition_level_histogram", Kind::List(&Kind::I64)),
    ],
};
static BOUNDING_BOX: Def = Def {
    name: "BoundingBox",
    fields: &[
        (1, "xmin", Kind::Double),
        (2, "xmax", Kind::Double),
        (3, "ymin", Kind::Double),
        (4, "ymax", Kind::Double),
        (5, "zmin", Kind::Double),
        (6, "zmax", Kind::Double),
        (7, "mmin", Kind::Double),
        (8, "mmax", Kind::Double),
    ],
};
static GEOSPATIAL_STATISTICS: Def = Def {
    name: "GeospatialStatistics",
    fields: &[(1, "bbox", Kind::Struct(&BOUNDING_BOX)), (2, "geospatial_types", Kind::List(&Kind::I32))],
};
pub static COLUMN_META_DATA: Def = Def {
    name: "ColumnMetaData",
    fields: &[
        (1, "type", Kind::I32),
        (2, "encodings", Kind::List(&Kind::I32)),
        (3, "path_in_schema", Kind::List(&Kind::Binary)),
        (4, "codec", Kind::I32),
        (5, "num_values", Kind::I64),
        (6, "total_uncompressed_size", Kind::I64),
        (7, "total_compressed_size", Kind::I64),
        (8, "key_value_metadata", Kind::List(&Kind::Struct(&KEY_VALUE))),
        (9, "data_page_offset", Kind::I64),
        (10, "index_page_offset", Kind::I64),
        (11, "dictionary_page_offset", Kind::I64),
        (12, "statistics", Kind::Struct(&STATISTICS)),
        (13, "encoding_stats", Kind::List(&Kind::Struct(&PAGE_ENCODING_STATS))),
        (14, "bloom_filter_offset", Kind::I64),
        (15, "bloom_filter_length", Kind::I32),
        (16, "size_statistics", Kind::Struct(&SIZE_STATISTICS)),
        (17, "geospatial_statistics", Kind::Struct(&GEOSPATIAL_STATISTICS)),
    ],
};
static COLUMN_KEY: Def =
    Def { name: "EncryptionWithColumnKey", fields: &[(1, "path_in_schema", Kind::List(&Kind::Binary)), (2, "key_metadata", Kind::Binary)] };
static COLUMN_CRYPTO: Def = Def {
    name: "ColumnCryptoMetaData",
    fields: &[(1, "ENCRYPTION_WITH_FOOTER_KEY", Kind::Struct(&EMPTY_STRUCT)), (2, "ENCRYPTION_WITH_COLUMN_KEY", Kind::Struct(&COLUMN_KEY))],
};
static COLUMN_CHUNK: Def = Def {
    name: "ColumnChunk",
    fields: &[
        (1, "file_path", Kind::Binary),
        (2, "file_offset", Kind::I64),
        (3, "meta_data", Kind::Struct(&COLUMN_META_DATA)),
        (4, "offset_index_offset", Kind::I64),
        (5, "offset_index_length", Kind::I32),
        (6, "column_index_offset", Kind::I64),
        (7, "column_index_length", Kind::I32),
        (8, "crypto_metadata", Kind::Union(&COLUMN_CRYPTO)),
        (9, "encrypted_column_metadata", Kind::Binary),
    ],
};
static SORTING_COLUMN: Def =
    Def { name: "SortingColumn", fields: &[(1, "column_idx", Kind::I32), (2, "descending", Kind::Bool), (3, "nulls_first", Kind::Bool)] };
pub static ROW_GROUP: Def = Def {
    name: "RowGroup",
    fields: &[
        (1, "columns", Kind::List(&Kind::Struct(&COLUMN_CHUNK))),
        (2, "total_byte_size", Kind::I64),
        (3, "num_rows", Kind::I64),
        (4, "sorting_columns", Kind::List(&Kind::Struct(&SORTING_COLUMN))),
        (5, "file_offset", Kind::I64),
        (6, "total_compressed_size", Kind::I64),
        (7, "ordinal", Kind::I16),
    ],
};
static COLUMN_ORDER: Def = Def {
    name: "ColumnOrder",
    fields: &[
        (1, "TYPE_ORDER", Kind::Struct(&EMPTY_STRUCT)),
        (2, "IEEE_754_TOTAL_ORDER", Kind::Struct(&EMPTY_STRUCT)),
        (3, "INT96_TIMESTAMP_ORDER", Kind::Struct(&EMPTY_STRUCT)),
    ],
};
static AES_GCM: Def = Def {
    name: "AesGcm",
    fields: &[(1, "aad_prefix", Kind::Binary), (2, "aad_file_unique", Kind::Binary), (3, "supply_aad_prefix", Kind::Bool)],
};
static ENCRYPTION_ALGORITHM: Def = Def {
    name: "EncryptionAlgorithm",
    fields: &[(1, "AES_GCM_V1", Kind::Struct(&AES_GCM)), (2, "AES_GCM_CTR_V1", Kind::Struct(&AES_GCM))],
};
pub static FILE_META_DATA: Def = Def {
    name: "FileMetaData",
    fields: &[
        (1, "version", Kind::I32),
        (2, "schema", Kind::List(&Kind::Struct(&SCHEMA_ELEMENT))),
        (3, "num_rows", Kind::I64),
        (4, "row_groups", Kind::List(&Kind::Struct(&ROW_GROUP))),
        (5, "key_value_metadata", Kind::List(&Kind::Struct(&KEY_VALUE))),
        (6, "created_by", Kind::Binary),
        (7, "column_orders", Kind::List(&Kind::Union(&COLUMN_ORDER))),
        (8, "encryption_algorithm", Kind::Union(&ENCRYPTION_ALGORITHM)),
        (9, "footer_signing_key_metadata", Kind::Binary),
    ],
};

pub static DATA_PAGE_HEADER: Def = Def {
    name: "DataPageHeader",
    fields: &[
        (1, "num_values", Kind::I32),
        (2, "encoding", Kind::I32),
        (3, "definition_level_encoding", Kind::I32),
        (4, "repetition_level_encoding", Kind::I32),
        (5, "statistics", Kind::Struct(&STATISTICS)),
    ],
};
pub static DICTIONARY_PAGE_HEADER: Def =
    Def { name: "DictionaryPageHeader", fields: &[(1, "num_values", Kind::I32), (2, "encoding", Kind::I32), (3, "is_sorted", Kind::Bool)] };
pub static DATA_PAGE_HEADER_V2: Def = Def {
    name: "DataPageHeaderV2",
    fields: &[
        (1, "num_values", Kind::I32),
        (2, "num_nulls", Kind::I32),
        (3, "num_rows", Kind::I32),
        (4, "encoding", Kind::I32),
        (5, "definition_levels_byte_length", Kind::I32),
        (6, "repetition_levels_byte_length", Kind::I32),
        (7, "is_compressed", Kind::Bool),
        (8, "statistics", Kind::Struct(&STATISTICS)),
    ],
};
pub static PAGE_HEADER: Def = Def {
    name: "PageHeader",
    fields: &[
        (1, "type", Kind::I32),
        (2, "uncompressed_page_size", Kind::I32),
        (3, "compressed_page_size", Kind::I32),
        (4, "crc", Kind::I32),
        (5, "data_page_header", Kind::Struct(&DATA_PAGE_HEADER)),
        (6, "index_page_header", Kind::Struct(&EMPTY_STRUCT)),
        (7, "dictionary_page_header", Kind::Struct(&DICTIONARY_PAGE_HEADER)),
        (8, "data_page_header_v2", Kind::Struct(&DATA_PAGE_HEADER_V2)),
    ],
};

/// What the reader tells its visitor, in the order the bytes hold it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// A struct of this definition begins.
    Begin(&'static str),
    /// It ends.
    End(&'static str),
    /// A known integer field of the innermost struct: (struct, field id, value).
    Int(&'static str, i16, i64),
    /// A known list field of the innermost struct is `n` elements long: (struct, field id, n).
    List(&'static str, i16, u64),
}

/// What a page header declares, as `guard` uses it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PageSizes {
    /// The `PageType` (0 data, 1 index, 2 dictionary, 3 data v2).
    pub page_type: i32,
    pub uncompressed: u64,
    pub compressed: u64,
}

impl PageSizes {
    pub fn dictionary(&self) -> bool {
        self.page_type == 2
    }
}

/// A strict, bounded reader of Thrift's compact protocol.
pub struct Thrift<R: Read> {
    input: R,
    pub left: u64,
}

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

    /// A ULEB128 varint of at most 10 bytes whose value fits in 64 bits.
    fn varint(&mut self) -> TResult<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return Err("varint overflows 64 bits".into());
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn zigzag(&mut self) -> TResult<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A zigzag integer that must fit the range of `kind`.
    fn integer(&mut self, kind: Kind) -> TResult<i64> {
        let v = self.zigzag()?;
        let fits = match kind {
            Kind::I16 => i16::try_from(v).is_ok(),
            Kind::I32 => i32::try_from(v).is_ok(),
            _ => true,
        };
        if !fits {
            return Err(format!("{v} does not fit the field's type"));
        }
        Ok(v)
    }

    /// The next field header of a struct: `None` at its stop byte, else (field id, wire type).
    fn field(&mut self, last: i16) -> TResult<Option<(i16, u8)>> {
        let b = self.byte()?;
        let ty = b & 0x0f;
        if ty == 0 {
            if b != 0 {
                return Err(format!("stop byte {b:#04x} carries a field delta"));
            }
            return Ok(None);
        }
        if ty > wire::STRUCT {
            return Err(format!("unknown wire type {ty}"));
        }
        let delta = i16::from(b >> 4);
        let id = if delta == 0 {
            i16::try_from(self.zigzag()?).map_err(|_| "field id out of range".to_string())?
        } else {
            last.checked_add(delta).ok_or("field id out of range")?
        };
        Ok(Some((id, ty)))
    }

    /// A list or set header: (element type, count), the count checked against the bytes left
    /// (every element takes at least a byte).
    fn list_header(&mut self) -> TResult<(u8, u64)> {
        let h = self.byte()?;
        if h == 0 {
            // an empty list some writers mark with element type 0 (parquet-rs accepts it)
            return Ok((0, 0));
        }
        let n = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        let et = h & 0x0f;
        if !(wire::TRUE..=wire::STRUCT).contains(&et) {
            return Err(format!("unknown list element type {et}"));
        }
        if n > i32::MAX as u64 || n > self.left {
            return Err(format!("declares {n} elements, only {} bytes left", self.left));
        }
        Ok((et, n))
    }

    /// Skips a value of wire type `ty` whose field the definitions do not know.
    fn skip(&mut self, ty: u8, depth: usize) -> TResult<()> {
        if depth > MAX_THRIFT_DEPTH {
            return Err("nested too deep".into());
        }
        match ty {
            wire::TRUE | wire::FALSE => Ok(()),
            wire::BYTE => self.byte().map(|_| ()),
            wire::I16..=wire::I64 => self.varint().map(|_| ()),
            wire::DOUBLE => self.skip_bytes(8),
            wire::BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            wire::LIST | wire::SET => {
                let (et, n) = self.list_header()?;
                for _ in 0..n {
                    self.skip_element(et, depth + 1)?;
                }
                Ok(())
            }
            wire::MAP => {
                let n = self.varint()?;
                if n > self.left {
                    return Err(format!("declares {n} entries, only {} bytes left", self.left));
                }
                if n > 0 {
                    let kv = self.byte()?;
                    for _ in 0..n {
                        self.skip_element(kv >> 4, depth + 1)?;
                        self.skip_element(kv & 0x0f, depth + 1)?;
                    }
                }
                Ok(())
            }
            wire::STRUCT => {
                let mut last = 0;
                let mut seen = Seen::default();
                while let Some((id, t)) = self.field(last)? {
                    seen.insert(id)?;
                    self.skip(t, depth + 1)?;
                    last = id;
                }
                Ok(())
            }
            t => Err(format!("unknown wire type {t}")),
        }
    }

    /// Skips a list, set or map element of wire type `ty` (booleans there take a byte each).
    fn skip_element(&mut self, ty: u8, depth: usize) -> TResult<()> {
        match ty {
            wire::TRUE | wire::FALSE => self.boolean_element().map(|_| ()),
            0 => Err("element type 0".into()),
            t => self.skip(t, depth),
        }
    }

    fn boolean_element(&mut self) -> TResult<bool> {
        match self.byte()? {
            1 => Ok(true),
            0 | 2 => Ok(false),
            b => Err(format!("boolean element {b}")),
        }
    }

    /// A value of `kind` (its field header, if any, already read).
    fn value(&mut self, kind: Kind, on: &'static Def, id: i16, depth: usize, visit: &mut dyn FnMut(Event) -> TResult<()>) -> TResult<()> {
        match kind {
            Kind::Bool => Ok(()),
            Kind::Byte => self.byte().map(|_| ()),
            Kind::I16 | Kind::I32 | Kind::I64 => {
                let v = self.integer(kind)?;
                visit(Event::Int(on.name, id, v))
            }
            Kind::Double => self.skip_bytes(8),
            Kind::Binary => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            Kind::List(element) => {
                let (et, n) = self.list_header()?;
                if n > 0 && !element.written_as(et) {
                    return Err(format!("{}.{}: list of wire type {et}, expected {}", on.name, id, element.wire()));
                }
                visit(Event::List(on.name, id, n))?;
                for _ in 0..n {
                    match element {
                        Kind::Bool => self.boolean_element().map(|_| ())?,
                        k => self.value(*k, on, id, depth + 1, visit)?,
                    }
                }
                Ok(())
            }
            Kind::Struct(def) => self.structure(def, false, depth + 1, visit),
            Kind::Union(def) => self.structure(def, true, depth + 1, visit),
        }
    }

    /// A struct of `def` (a union: exactly one field).
    fn structure(&mut self, def: &'static Def, union: bool, depth: usize, visit: &mut dyn FnMut(Event) -> TResult<()>) -> TResult<()> {
        if depth > MAX_THRIFT_DEPTH {
            return Err("nested too deep".into());
        }
        visit(Event::Begin(def.name))?;
        let mut last = 0;
        let mut seen = Seen::default();
        let mut fields = 0;
        while let Some((id, ty)) = self.field(last)? {
            seen.insert(id).map_err(|e| format!("{}: {e}", def.name))?;
            fields += 1;
            match def.field(id) {
                Some((name, kind)) => {
                    if !kind.written_as(ty) {
                        return Err(format!("{}.{name} (field {id}) has wire type {ty}, expected {}", def.name, kind.wire()));
                    }
                    self.value(kind, def, id, depth, visit).map_err(|e| prefix(def, name, e))?;
                }
                None if std::ptr::eq(def, &EMPTY_STRUCT) => return Err("an empty struct holds a field".into()),
                None => self.skip(ty, depth + 1)?,
            }
            last = id;
        }
        if union && fields != 1 {
            return Err(format!("{} is a union of {fields} fields, not one", def.name));
        }
        visit(Event::End(def.name))
    }

    /// Reads a whole struct of `def`, telling `visit` what it holds.
    pub fn read(&mut self, def: &'static Def, visit: &mut dyn FnMut(Event) -> TResult<()>) -> TResult<()> {
        self.structure(def, false, 0, visit)
    }

    /// A PageHeader, checked whole: its type and sizes (required, non-negative).
    pub fn page_header(&mut self) -> TResult<PageSizes> {
        let (mut ty, mut uncompressed, mut compressed) = (None, None, None);
        self.read(&PAGE_HEADER, &mut |e| {
            if let Event::Int("PageHeader", id, v) = e {
                match id {
                    1 => ty = Some(v),
                    2 => uncompressed = Some(v),
                    3 => compressed = Some(v),
                    _ => {}
                }
            }
            Ok(())
        })?;
        match (ty, uncompressed, compressed) {
            (Some(t), Some(u), Some(c)) if u >= 0 && c >= 0 => {
                Ok(PageSizes { page_type: t as i32, uncompressed: u as u64, compressed: c as u64 })
            }
            _ => Err("page type or sizes missing or negative".into()),
        }
    }

    /// A FileMetaData, checked whole, its schema list checked as the tree it encodes (every
    /// group's `num_children` within the elements left, every element inside the root, no group
    /// left short of children): the schema's depth.
    pub fn file_metadata(&mut self) -> TResult<usize> {
        let mut schema = SchemaTree::default();
        let mut in_schema = false;
        let mut saw_schema = false;
        self.read(&FILE_META_DATA, &mut |e| match e {
            Event::List("FileMetaData", 2, n) => {
                schema.elements = n;
                in_schema = true;
                saw_schema = true;
                Ok(())
            }
            Event::Begin("SchemaElement") if in_schema => schema.begin(),
            Event::Int("SchemaElement", 5, v) if in_schema => {
                schema.children = Some(v);
                Ok(())
            }
            Event::End("SchemaElement") if in_schema => schema.end(),
            Event::List("FileMetaData", ..) => {
                in_schema = false;
                Ok(())
            }
            _ => Ok(()),
        })?;
        if !saw_schema {
            return Err("no schema".into());
        }
        schema.finish()
    }
}

fn prefix(def: &Def, name: &str, e: String) -> String {
    if e.starts_with(def.name) {
        e
    } else {
        format!("{}.{name}: {e}", def.name)
    }
}

/// The field ids a struct has held so far (ids are i16; the format's are below 64: a bit each,
/// no allocation per struct; others in a list).
#[derive(Default)]
struct Seen(u64, Vec<i16>);

impl Seen {
    fn insert(&mut self, id: i16) -> TResult<()> {
        let repeated = match u32::try_from(id) {
            Ok(bit) if bit < 64 => {
                let before = self.0;
                self.0 |= 1 << bit;
                before & (1 << bit) != 0
            }
            _ if self.1.contains(&id) => true,
            _ => {
                self.1.push(id);
                false
            }
        };
        if repeated {
            return Err(format!("field {id} appears twice"));
        }
        Ok(())
    }
}

/// A footer's schema list checked as the depth-first tree it encodes.
#[derive(Default)]
struct SchemaTree {
    /// Elements the list declares, and how many have begun.
    elements: u64,
    seen: u64,
    /// Children still expected by each open group, root first.
    open: Vec<u64>,
    deepest: usize,
    /// The current element's `num_children`.
    children: Option<i64>,
}

impl SchemaTree {
    fn begin(&mut self) -> TResult<()> {
        if self.seen > 0 {
            while self.open.last() == Some(&0) {
                self.open.pop();
            }
            match self.open.last_mut() {
                Some(left) => *left -= 1,
                None => return Err(format!("schema element {} is outside the root's children", self.seen)),
            }
        }
        self.seen += 1;
        self.children = None;
        Ok(())
    }

    fn end(&mut self) -> TResult<()> {
        let i = self.seen - 1;
        let children = self.children.unwrap_or(0);
        let left = self.elements - self.seen;
        if children < 0 || children as u64 > left {
            return Err(format!("schema element {i} declares {children} children, only {left} elements follow"));
        }
        if children > 0 {
            self.open.push(children as u64);
            self.deepest = self.deepest.max(self.open.len());
            if self.open.len() > MAX_SCHEMA_DEPTH {
                return Err(format!("schema nests more than {MAX_SCHEMA_DEPTH} levels deep"));
            }
        }
        Ok(())
    }

    fn finish(mut self) -> TResult<usize> {
        while self.open.last() == Some(&0) {
            self.open.pop();
        }
        if let Some(left) = self.open.last() {
            return Err(format!("a schema group declares {left} more children than the schema holds"));
        }
        Ok(self.deepest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(bytes: &[u8]) -> TResult<PageSizes> {
        Thrift::new(bytes, bytes.len() as u64).page_header()
    }

    #[test]
    fn page_sizes_and_bounds() {
        // type=DATA_PAGE(0), uncompressed=300, compressed=120, then a crc and stop
        let header = [0x15, 0x00, 0x15, 0xd8, 0x04, 0x15, 0xf0, 0x01, 0x15, 0x02, 0x00];
        assert_eq!(page(&header), Ok(PageSizes { page_type: 0, uncompressed: 300, compressed: 120 }));
        // the same as a dictionary page (type 2)
        let dictionary = [0x15, 0x04, 0x15, 0xd8, 0x04, 0x15, 0xf0, 0x01, 0x00];
        assert!(page(&dictionary).unwrap().dictionary());
        // an unknown field (id 9) holding a binary claiming more bytes than are left
        let lying = [0x15, 0x00, 0x15, 0xd8, 0x04, 0x15, 0xf0, 0x01, 0x68, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
        assert!(page(&lying).unwrap_err().contains("only"));
        // a stream that ends inside the header
        assert!(page(&header[..4]).is_err());
    }

    #[test]
    fn a_field_has_one_reading() {
        // uncompressed size (field 2) twice, the second typed i64 (the last would win in parquet-rs)
        let twice = [0x15, 0x00, 0x15, 0xd8, 0x04, 0x15, 0xf0, 0x01, 0x06, 0x04, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x00];
        assert!(page(&twice).unwrap_err().contains("twice"));
        // the same field only once, but typed i64
        let typed = [0x15, 0x00, 0x16, 0xd8, 0x04, 0x15, 0xf0, 0x01, 0x00];
        assert!(page(&typed).unwrap_err().contains("wire type"));
        // an i32 field holding a value past i32 (parquet-rs truncates it)
        let wide = [0x15, 0x00, 0x15, 0x80, 0x80, 0x80, 0x80, 0x20, 0x15, 0xf0, 0x01, 0x00];
        assert!(page(&wide).unwrap_err().contains("fit"));
        // a varint longer than 10 bytes
        let long = [0x15, 0x00, 0x15, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00];
        assert!(page(&long).unwrap_err().contains("varint"));
        // a stop byte with a delta, and wire type 13
        assert!(page(&[0x15, 0x00, 0x10]).is_err());
        assert!(page(&[0x1d, 0x00]).unwrap_err().contains("wire type"));
    }

    /// FileMetaData with `schema` as given (field 2's header and list), version 1, 0 rows and
    /// no row groups.
    fn footer(schema: &[u8]) -> Vec<u8> {
        let mut f = vec![0x15, 0x02];
        f.extend_from_slice(schema);
        f.extend_from_slice(&[0x16, 0x00, 0x19, 0x0c, 0x00]);
        f
    }

    /// A SchemaElement named `n` with `children` (or a leaf of type INT32).
    fn element(children: Option<u8>) -> Vec<u8> {
        match children {
            Some(c) => vec![0x48, 0x01, b'n', 0x15, c << 1, 0x00],
            None => vec![0x15, 0x02, 0x38, 0x01, b'n', 0x00],
        }
    }

    /// FileMetaData's field 2 header (a list, or another wire type) and its schema elements.
    fn schema(elements: &[Option<u8>], list_type: u8) -> Vec<u8> {
        let mut out = vec![0x10 | list_type, ((elements.len() as u8) << 4) | 0x0c];
        for e in elements {
            out.extend(element(*e));
        }
        out
    }

    fn metadata(bytes: &[u8]) -> TResult<usize> {
        Thrift::new(bytes, bytes.len() as u64).file_metadata()
    }

    #[test]
    fn the_schema_is_the_tree_it_declares() {
        // root { a, g { b } }
        let good = footer(&schema(&[Some(2), None, Some(1), None], 9));
        assert_eq!(metadata(&good), Ok(2));
        // the same list typed as a set: parquet-rs would read it by id
        assert!(metadata(&footer(&schema(&[Some(2), None, Some(1), None], 10))).unwrap_err().contains("wire type"));
        // a root declaring more children than the list holds
        assert!(metadata(&footer(&schema(&[Some(5), None], 9))).unwrap_err().contains("children"));
        // an element after the root's subtree
        assert!(metadata(&footer(&schema(&[Some(1), None, None], 9))).unwrap_err().contains("outside"));
    }

    #[test]
    fn a_deep_schema_is_refused() {
        let mut chain = vec![Some(1u8); MAX_SCHEMA_DEPTH + 1];
        chain.push(None);
        let mut list = vec![0x19, 0xfc];
        list.extend(encode_varint(chain.len() as u64));
        for e in &chain {
            list.extend(element(*e));
        }
        assert!(metadata(&footer(&list)).unwrap_err().contains("deep"));
    }

    fn encode_varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }
}
