//! Metrics: per top-level primitive column, the Iceberg lower/upper bounds of a written file —
//! typed values and Iceberg's single-value binary encoding, strings and binaries truncated to
//! 16 characters/bytes with the upper bound rounded up as Iceberg does — and NaN counts, all
//! derived from the statistics the writer put in the footer (no second pass over the data).
//! Memory: one bound pair per column.

use parquet::basic::{LogicalType, TimeUnit, Type as PhysicalType};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescriptor;
use std::cmp::Ordering;

/// Iceberg's default metrics mode, `truncate(16)`.
const TRUNCATE: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub enum BoundValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Bounds {
    pub lower: Option<(BoundValue, Vec<u8>)>,
    pub upper: Option<(BoundValue, Vec<u8>)>,
}

fn compare(a: &BoundValue, b: &BoundValue) -> Ordering {
    match (a, b) {
        (BoundValue::Bool(x), BoundValue::Bool(y)) => x.cmp(y),
        (BoundValue::Int(x), BoundValue::Int(y)) => x.cmp(y),
        (BoundValue::Float(x), BoundValue::Float(y)) => x.total_cmp(y),
        (BoundValue::String(x), BoundValue::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (BoundValue::Bytes(x), BoundValue::Bytes(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}

fn is_string(d: &ColumnDescriptor) -> bool {
    matches!(d.logical_type_ref(), Some(LogicalType::String | LogicalType::Json | LogicalType::Enum))
        || d.converted_type() == parquet::basic::ConvertedType::UTF8
}

/// The (min, max) of one chunk's statistics as typed values, if both are present.
fn chunk_min_max(d: &ColumnDescriptor, s: &Statistics) -> Option<(BoundValue, BoundValue)> {
    let millis = matches!(d.logical_type_ref(), Some(LogicalType::Timestamp(t)) if t.unit == TimeUnit::MILLIS)
        || d.converted_type() == parquet::basic::ConvertedType::TIMESTAMP_MILLIS;
    let bytes = |b: &[u8]| {
        if is_string(d) {
            std::str::from_utf8(b).ok().map(|s| BoundValue::String(s.to_string()))
        } else {
            Some(BoundValue::Bytes(b.to_vec()))
        }
    };
    Some(match s {
        Statistics::Boolean(v) => (BoundValue::Bool(*v.min_opt()?), BoundValue::Bool(*v.max_opt()?)),
        Statistics::Int32(v) => (BoundValue::Int(i64::from(*v.min_opt()?)), BoundValue::Int(i64::from(*v.max_opt()?))),
        Statistics::Int64(v) => {
            let scale = if millis { 1000 } else { 1 };
            (BoundValue::Int(v.min_opt()?.checked_mul(scale)?), BoundValue::Int(v.max_opt()?.checked_mul(scale)?))
        }
        Statistics::Float(v) => (BoundValue::Float(f64::from(*v.min_opt()?)), BoundValue::Float(f64::from(*v.max_opt()?))),
        Statistics::Double(v) => (BoundValue::Float(*v.min_opt()?), BoundValue::Float(*v.max_opt()?)),
        Statistics::ByteArray(v) => (bytes(v.min_opt()?.data())?, bytes(v.max_opt()?.data())?),
        Statistics::FixedLenByteArray(v) => {
            (BoundValue::Bytes(v.min_opt()?.data().to_vec()), BoundValue::Bytes(v.max_opt()?.data().to_vec()))
        }
        Statistics::Int96(_) => return None,
    })
}

/// Bounds and NaN count of leaf column `leaf` over all row groups of a file.
pub fn column_bounds(meta: &ParquetMetaData, leaf: usize) -> (Option<Bounds>, Option<u64>) {
    let descr = meta.file_metadata().schema_descr();
    let d = descr.column(leaf);
    let float = matches!(d.physical_type(), PhysicalType::FLOAT | PhysicalType::DOUBLE);
    let mut nan: Option<u64> = float.then_some(0);
    let mut acc: Option<(BoundValue, BoundValue)> = None;
    let mut complete = true;
    for rg in meta.row_groups() {
        let Some(col) = rg.columns().get(leaf) else { return (None, None) };
        let Some(stats) = col.statistics() else {
            complete = false;
            nan = None;
            continue;
        };
        nan = match (nan, stats.nan_count_opt()) {
            (Some(n), Some(c)) => Some(n + c),
            _ => None,
        };
        let values = col.num_values().max(0) as u64;
        if stats.null_count_opt() == Some(values) {
            continue; // all null: no bound to contribute
        }
        match chunk_min_max(&d, stats) {
            None => complete = false,
            Some((lo, hi)) => {
                acc = Some(match acc {
                    None => (lo, hi),
                    Some((a, b)) => (
                        if compare(&lo, &a) == Ordering::Less { lo } else { a },
                        if compare(&hi, &b) == Ordering::Greater { hi } else { b },
                    ),
                });
            }
        }
    }
    let bounds = match (complete, acc) {
        (true, Some((lo, hi))) => {
            Some(Bounds { lower: truncate_lower(lo).map(|v| encode(&d, v)), upper: truncate_upper(hi).map(|v| encode(&d, v)) })
        }
        _ => None,
    };
    (bounds, nan)
}

fn truncate_lower(v: BoundValue) -> Option<BoundValue> {
    Some(match v {
        BoundValue::String(s) => BoundValue::String(s.chars().take(TRUNCATE).collect()),
        BoundValue::Bytes(b) => BoundValue::Bytes(b[..b.len().min(TRUNCATE)].to_vec()),
        other => other,
    })
}

/// Iceberg's upper bound: the first 16 characters (bytes), the last one incremented when the
/// value was longer; `None` when no such bound exists.
fn truncate_upper(v: BoundValue) -> Option<BoundValue> {
    match v {
        BoundValue::String(s) => {
            let mut chars: Vec<char> = s.chars().collect();
            if chars.len() <= TRUNCATE {
                return Some(BoundValue::String(s));
            }
            chars.truncate(TRUNCATE);
            while let Some(last) = chars.pop() {
                let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
                if let Some(c) = next {
                    chars.push(c);
                    return Some(BoundValue::String(chars.into_iter().collect()));
                }
            }
            None
        }
        BoundValue::Bytes(mut b) => {
            if b.len() <= TRUNCATE {
                return Some(BoundValue::Bytes(b));
            }
            b.truncate(TRUNCATE);
            while let Some(last) = b.pop() {
                if last < u8::MAX {
                    b.push(last + 1);
                    return Some(BoundValue::Bytes(b));
                }
            }
            None
        }
        other => Some(other),
    }
}

/// Iceberg's single-value binary encoding of a bound of column `d`. Decimals become their
/// value as a string and the minimal big-endian two's-complement bytes of the unscaled value.
fn encode(d: &ColumnDescriptor, v: BoundValue) -> (BoundValue, Vec<u8>) {
    if let Some(LogicalType::Decimal(dec)) = d.logical_type_ref() {
        let unscaled = match &v {
            BoundValue::Int(i) => Some(i128::from(*i)),
            BoundValue::Bytes(b) if !b.is_empty() && b.len() <= 16 => {
                let fill = if b[0] & 0x80 != 0 { 0xff } else { 0x00 };
                let mut be = [fill; 16];
                be[16 - b.len()..].copy_from_slice(b);
                Some(i128::from_be_bytes(be))
            }
            _ => None,
        };
        if let Some(u) = unscaled {
            return (BoundValue::String(format_decimal(u, dec.scale)), crate::iceberg::partition::decimal_bytes(u));
        }
    }
    let bytes = match (&v, d.physical_type()) {
        (BoundValue::Bool(b), _) => vec![u8::from(*b)],
        (BoundValue::Int(i), PhysicalType::INT32) => (*i as i32).to_le_bytes().to_vec(),
        (BoundValue::Int(i), _) => i.to_le_bytes().to_vec(),
        (BoundValue::Float(f), PhysicalType::FLOAT) => (*f as f32).to_le_bytes().to_vec(),
        (BoundValue::Float(f), _) => f.to_le_bytes().to_vec(),
        (BoundValue::String(s), _) => s.as_bytes().to_vec(),
        (BoundValue::Bytes(b), _) => b.clone(),
    };
    (v, bytes)
}

fn format_decimal(unscaled: i128, scale: i32) -> String {
    if scale <= 0 {
        return format!("{}{}", unscaled, "0".repeat((-scale) as usize));
    }
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{}{int}.{frac}", if unscaled < 0 { "-" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iceberg_truncation() {
        let s = |x: &str| BoundValue::String(x.to_string());
        assert_eq!(truncate_lower(s("abcdefghijklmnopqrstuvwxyz")), Some(s("abcdefghijklmnop")));
        assert_eq!(truncate_upper(s("abcdefghijklmnopqrstuvwxyz")), Some(s("abcdefghijklmnoq")));
        assert_eq!(truncate_upper(s("short")), Some(s("short")));
        assert_eq!(truncate_upper(s("ééééééééééééééééé")), Some(s("éééééééééééééééê")));
        assert_eq!(truncate_upper(BoundValue::Bytes(vec![0xff; 20])), None);
        assert_eq!(format_decimal(1420, 2), "14.20");
        assert_eq!(format_decimal(-5, 3), "-0.005");
        assert_eq!(
            truncate_upper(BoundValue::Bytes([vec![1; 15], vec![0xff; 5]].concat())),
            Some(BoundValue::Bytes([vec![1; 14], vec![2]].concat()))
        );
    }
}
