//! Partition: Iceberg partition transforms (`identity`, `year`, `month`, `day`, `hour`,
//! `bucket[N]`, `truncate[W]`) applied to Arrow columns, and the registry that numbers the
//! partition tuples of a call in order of first appearance.
//!
//! Memory: the transformed partition columns of one batch, plus one small key per distinct
//! tuple of the call.

use crate::error::{CompactError, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type, Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, LargeBinaryArray, LargeStringArray, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Schema, TimeUnit};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Identity,
    Year,
    Month,
    Day,
    Hour,
    Bucket(u32),
    Truncate(u32),
}

impl Transform {
    /// Parses Iceberg's transform names: `identity`, `year`, `bucket[16]`, `truncate[4]`…
    pub fn parse(s: &str) -> Option<Self> {
        let param = |prefix: &str| -> Option<u32> {
            let inner = s.strip_prefix(prefix)?.strip_prefix('[')?.strip_suffix(']')?;
            inner.trim().parse::<u32>().ok().filter(|n| *n > 0 && *n <= i32::MAX as u32)
        };
        match s {
            "identity" => Some(Transform::Identity),
            "year" => Some(Transform::Year),
            "month" => Some(Transform::Month),
            "day" => Some(Transform::Day),
            "hour" => Some(Transform::Hour),
            _ => param("bucket").map(Transform::Bucket).or_else(|| param("truncate").map(Transform::Truncate)),
        }
    }

    /// Iceberg's default partition field name for a source column.
    pub fn field_name(&self, column: &str) -> String {
        match self {
            Transform::Identity => column.to_string(),
            Transform::Year => format!("{column}_year"),
            Transform::Month => format!("{column}_month"),
            Transform::Day => format!("{column}_day"),
            Transform::Hour => format!("{column}_hour"),
            Transform::Bucket(_) => format!("{column}_bucket"),
            Transform::Truncate(_) => format!("{column}_trunc"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PartitionField {
    pub column: String,
    pub transform: Transform,
    /// The partition field's name (`partitionBy[].name`, default `Transform::field_name`).
    pub name: String,
}

/// A partition value, typed by the transform's result type (Iceberg's `int` and `long`,
/// `date` in days, `timestamp` in µs, decimals as their exact decimal string).
#[derive(Debug, Clone, PartialEq)]
pub enum PartitionValue {
    Null,
    Bool(bool),
    Int(i64),
    Long(i64),
    Float(f64),
    String(String),
    Bytes(Vec<u8>),
    Date(i64),
    Timestamp(i64),
    Decimal(String),
}

struct Bound {
    column: String,
    index: usize,
    name: String,
    transform: Transform,
}

/// A partition spec bound to the decode schema, numbering tuples as they are first seen.
pub struct Partitioner {
    fields: Vec<Bound>,
    converter: RowConverter,
    ids: HashMap<Box<[u8]>, usize>,
    /// Per tuple id: its (field name, value) pairs.
    pub tuples: Vec<Vec<(String, PartitionValue)>>,
}

impl Partitioner {
    pub fn new(schema: &Schema, spec: &[PartitionField]) -> Result<Self> {
        let mut fields = Vec::new();
        let mut sort_fields = Vec::new();
        for f in spec {
            let index = crate::unify::option_column(schema, "partitionBy", &f.column)?;
            let dt = schema.field(index).data_type();
            let out = output_type(dt, f.transform).ok_or_else(|| {
                CompactError::InvalidOptions(format!(
                    "'partitionBy': transform {:?} does not apply to column '{}' of type {dt}",
                    f.transform, f.column
                ))
            })?;
            sort_fields.push(SortField::new(out));
            fields.push(Bound { column: f.column.clone(), index, name: f.name.clone(), transform: f.transform });
        }
        let converter = RowConverter::new(sort_fields).map_err(|e| CompactError::InvalidOptions(format!("'partitionBy': {e}")))?;
        Ok(Partitioner { fields, converter, ids: HashMap::new(), tuples: Vec::new() })
    }

    /// Top-level column indices the spec reads (in the decode schema).
    pub fn source_roots(&self) -> Vec<usize> {
        let mut roots: Vec<usize> = self.fields.iter().map(|f| f.index).collect();
        roots.sort_unstable();
        roots.dedup();
        roots
    }

    /// The tuple id of every row of `batch` (all columns, or only the partition sources),
    /// registering tuples not seen before.
    pub fn tuple_ids(&mut self, batch: &RecordBatch) -> Result<Vec<usize>> {
        let columns = self
            .fields
            .iter()
            .map(|f| {
                let column = batch
                    .column_by_name(&f.column)
                    .ok_or_else(|| CompactError::Internal(format!("partition column '{}' not decoded", f.column)))?;
                apply(column, f.transform)
            })
            .collect::<Result<Vec<_>>>()?;
        let rows = self.converter.convert_columns(&columns).map_err(|e| CompactError::Internal(format!("partition keys: {e}")))?;
        let mut out = Vec::with_capacity(batch.num_rows());
        for (i, row) in rows.iter().enumerate() {
            if let Some(id) = self.ids.get(row.as_ref()) {
                out.push(*id);
                continue;
            }
            let id = self.tuples.len();
            let values = self.fields.iter().zip(&columns).map(|(f, c)| (f.name.clone(), value_at(c.as_ref(), i))).collect();
            self.tuples.push(values);
            self.ids.insert(row.as_ref().into(), id);
            out.push(id);
        }
        Ok(out)
    }
}

/// The result type of a transform on a column type, if Iceberg defines it.
fn output_type(dt: &DataType, t: Transform) -> Option<DataType> {
    use DataType::*;
    let temporal = matches!(dt, Date32 | Timestamp(TimeUnit::Microsecond, _));
    match t {
        Transform::Identity => Some(dt.clone()),
        Transform::Year | Transform::Month | Transform::Hour if temporal => {
            (t != Transform::Hour || matches!(dt, Timestamp(..))).then_some(Int32)
        }
        Transform::Day if temporal => Some(Date32),
        Transform::Bucket(_) => matches!(
            dt,
            Int32 | Int64 | Date32 | Timestamp(TimeUnit::Microsecond, _) | LargeUtf8 | LargeBinary | FixedSizeBinary(_) | Decimal128(..)
        )
        .then_some(Int32),
        Transform::Truncate(_) => matches!(dt, Int32 | Int64 | LargeUtf8 | LargeBinary | Decimal128(..)).then(|| dt.clone()),
        _ => None,
    }
}

fn floor_div(a: i64, b: i64) -> i64 {
    a.div_euclid(b)
}

const MICROS_PER_DAY: i64 = 86_400_000_000;
const MICROS_PER_HOUR: i64 = 3_600_000_000;

/// (year, month 1-12) of a day count since 1970-01-01 (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month)
}

fn days_of(column: &ArrayRef, i: usize) -> i64 {
    match column.data_type() {
        DataType::Date32 => i64::from(column.as_primitive::<Date32Type>().value(i)),
        _ => floor_div(column.as_primitive::<TimestampMicrosecondType>().value(i), MICROS_PER_DAY),
    }
}

/// Iceberg's 32-bit murmur3 bucket of a value's single-value hash bytes.
fn bucket_of(bytes: &[u8], n: u32) -> i32 {
    let hash = murmur3::murmur3_32(&mut std::io::Cursor::new(bytes), 0).unwrap_or(0) as i32;
    ((hash & i32::MAX) % n as i32) as i32
}

/// Minimal big-endian two's-complement bytes of a decimal's unscaled value.
pub(crate) fn decimal_bytes(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    bytes[start..].to_vec()
}

fn apply(column: &ArrayRef, t: Transform) -> Result<ArrayRef> {
    let n = column.len();
    let valid = |i: usize| column.is_valid(i);
    let unsupported = || CompactError::Internal(format!("transform {t:?} on {}", column.data_type()));
    Ok(match t {
        Transform::Identity => column.clone(),
        Transform::Year | Transform::Month => Arc::new(Int32Array::from_iter((0..n).map(|i| {
            valid(i).then(|| {
                let (y, m) = civil_from_days(days_of(column, i));
                (if t == Transform::Year { y - 1970 } else { (y - 1970) * 12 + m - 1 }) as i32
            })
        }))),
        Transform::Day => Arc::new(Date32Array::from_iter((0..n).map(|i| valid(i).then(|| days_of(column, i) as i32)))),
        Transform::Hour => {
            let ts = column.as_primitive::<TimestampMicrosecondType>();
            Arc::new(Int32Array::from_iter((0..n).map(|i| valid(i).then(|| floor_div(ts.value(i), MICROS_PER_HOUR) as i32))))
        }
        Transform::Bucket(b) => {
            let hash_bytes = |i: usize| -> Option<Vec<u8>> {
                Some(match column.data_type() {
                    DataType::Int32 => i64::from(column.as_primitive::<Int32Type>().value(i)).to_le_bytes().to_vec(),
                    DataType::Int64 => column.as_primitive::<Int64Type>().value(i).to_le_bytes().to_vec(),
                    DataType::Date32 => i64::from(column.as_primitive::<Date32Type>().value(i)).to_le_bytes().to_vec(),
                    DataType::Timestamp(..) => column.as_primitive::<TimestampMicrosecondType>().value(i).to_le_bytes().to_vec(),
                    DataType::LargeUtf8 => column.as_string::<i64>().value(i).as_bytes().to_vec(),
                    DataType::LargeBinary => column.as_binary::<i64>().value(i).to_vec(),
                    DataType::FixedSizeBinary(_) => column.as_fixed_size_binary().value(i).to_vec(),
                    DataType::Decimal128(..) => decimal_bytes(column.as_primitive::<Decimal128Type>().value(i)),
                    _ => return None,
                })
            };
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                out.push(if valid(i) { Some(bucket_of(&hash_bytes(i).ok_or_else(unsupported)?, b)) } else { None });
            }
            Arc::new(Int32Array::from(out))
        }
        Transform::Truncate(w) => match column.data_type() {
            DataType::Int32 => {
                let a = column.as_primitive::<Int32Type>();
                let w = w as i64;
                Arc::new(Int32Array::from_iter((0..n).map(|i| {
                    valid(i).then(|| {
                        let v = i64::from(a.value(i));
                        (v - v.rem_euclid(w)) as i32
                    })
                })))
            }
            DataType::Int64 => {
                let a = column.as_primitive::<Int64Type>();
                let w = w as i64;
                Arc::new(Int64Array::from_iter((0..n).map(|i| valid(i).then(|| a.value(i) - a.value(i).rem_euclid(w)))))
            }
            DataType::LargeUtf8 => {
                let a = column.as_string::<i64>();
                Arc::new(LargeStringArray::from_iter((0..n).map(|i| {
                    valid(i).then(|| {
                        let s = a.value(i);
                        match s.char_indices().nth(w as usize) {
                            Some((end, _)) => s[..end].to_string(),
                            None => s.to_string(),
                        }
                    })
                })))
            }
            DataType::LargeBinary => {
                let a = column.as_binary::<i64>();
                Arc::new(LargeBinaryArray::from_iter(
                    (0..n).map(|i| valid(i).then(|| a.value(i)[..a.value(i).len().min(w as usize)].to_vec())),
                ))
            }
            DataType::Decimal128(p, s) => {
                let a = column.as_primitive::<Decimal128Type>();
                let w = w as i128;
                let out = Decimal128Array::from_iter((0..n).map(|i| valid(i).then(|| a.value(i) - a.value(i).rem_euclid(w))));
                Arc::new(out.with_precision_and_scale(*p, *s).map_err(|e| CompactError::Internal(e.to_string()))?)
            }
            _ => return Err(unsupported()),
        },
    })
}

/// The value of row `i` of a transformed column, for the report.
fn value_at(column: &dyn Array, i: usize) -> PartitionValue {
    if column.is_null(i) {
        return PartitionValue::Null;
    }
    match column.data_type() {
        DataType::Boolean => PartitionValue::Bool(column.as_boolean().value(i)),
        DataType::Int8 => PartitionValue::Int(i64::from(column.as_primitive::<arrow_array::types::Int8Type>().value(i))),
        DataType::Int16 => PartitionValue::Int(i64::from(column.as_primitive::<arrow_array::types::Int16Type>().value(i))),
        DataType::Int32 => PartitionValue::Int(i64::from(column.as_primitive::<Int32Type>().value(i))),
        DataType::Int64 => PartitionValue::Long(column.as_primitive::<Int64Type>().value(i)),
        DataType::Date32 => PartitionValue::Date(i64::from(column.as_primitive::<Date32Type>().value(i))),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            PartitionValue::Timestamp(column.as_primitive::<TimestampMicrosecondType>().value(i))
        }
        DataType::Float32 => PartitionValue::Float(f64::from(column.as_primitive::<arrow_array::types::Float32Type>().value(i))),
        DataType::Float64 => PartitionValue::Float(column.as_primitive::<arrow_array::types::Float64Type>().value(i)),
        DataType::LargeUtf8 => PartitionValue::String(column.as_string::<i64>().value(i).to_string()),
        DataType::LargeBinary => PartitionValue::Bytes(column.as_binary::<i64>().value(i).to_vec()),
        DataType::FixedSizeBinary(_) => PartitionValue::Bytes(column.as_fixed_size_binary().value(i).to_vec()),
        DataType::Decimal128(..) => PartitionValue::Decimal(column.as_primitive::<Decimal128Type>().value_as_string(i)),
        other => PartitionValue::String(format!("<{other}>")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(column: ArrayRef, t: Transform) -> PartitionValue {
        value_at(apply(&column, t).unwrap().as_ref(), 0)
    }

    /// Values from the Iceberg specification's appendix (single-value hashes and transforms).
    #[test]
    fn transforms_match_the_iceberg_spec() {
        assert_eq!(Transform::parse("bucket[16]"), Some(Transform::Bucket(16)));
        assert_eq!(Transform::parse("truncate[4]"), Some(Transform::Truncate(4)));
        assert_eq!(Transform::parse("bucket[0]"), None);
        assert_eq!(Transform::parse("days"), None);
        // murmur3 hashes of the spec: int 34 and long 34 -> 2017239379, "iceberg" -> 1210000089,
        // date 2017-11-16 -> -653330422, decimal 14.20 -> -500754589.
        let spec_hash = |bytes: &[u8]| murmur3::murmur3_32(&mut std::io::Cursor::new(bytes), 0).unwrap() as i32;
        assert_eq!(spec_hash(&34i64.to_le_bytes()), 2017239379);
        assert_eq!(spec_hash(b"iceberg"), 1210000089);
        assert_eq!(spec_hash(&17486i64.to_le_bytes()), -653330422);
        assert_eq!(spec_hash(&decimal_bytes(1420)), -500754589);
        let n = 2017239379 % 16;
        assert_eq!(one(Arc::new(Int32Array::from(vec![34])), Transform::Bucket(16)), PartitionValue::Int(n));
        assert_eq!(one(Arc::new(Int64Array::from(vec![34])), Transform::Bucket(16)), PartitionValue::Int(n));
        assert_eq!(one(Arc::new(LargeStringArray::from(vec!["iceberg"])), Transform::Bucket(1000)), PartitionValue::Int(1210000089 % 1000));
        // truncate: 1 -> 0, -1 -> -10 (width 10); "iceberg" -> "ice" (width 3)
        assert_eq!(one(Arc::new(Int32Array::from(vec![-1])), Transform::Truncate(10)), PartitionValue::Int(-10));
        assert_eq!(one(Arc::new(Int64Array::from(vec![1])), Transform::Truncate(10)), PartitionValue::Long(0));
        assert_eq!(one(Arc::new(LargeStringArray::from(vec!["iceberg"])), Transform::Truncate(3)), PartitionValue::String("ice".into()));
        // 2017-11-16 is day 17486; year 47, month 574
        let date: ArrayRef = Arc::new(Date32Array::from(vec![17486]));
        assert_eq!(one(date.clone(), Transform::Year), PartitionValue::Int(47));
        assert_eq!(one(date.clone(), Transform::Month), PartitionValue::Int(47 * 12 + 10));
        assert_eq!(one(date, Transform::Day), PartitionValue::Date(17486));
        // before the epoch: 1969-12-31T23:59:59.999999 is hour -1, day -1, month -1, year -1
        let ts: ArrayRef = Arc::new(arrow_array::TimestampMicrosecondArray::from(vec![-1]).with_timezone("+00:00"));
        assert_eq!(one(ts.clone(), Transform::Hour), PartitionValue::Int(-1));
        assert_eq!(one(ts.clone(), Transform::Day), PartitionValue::Date(-1));
        assert_eq!(one(ts.clone(), Transform::Month), PartitionValue::Int(-1));
        assert_eq!(one(ts, Transform::Year), PartitionValue::Int(-1));
    }

    #[test]
    fn tuples_are_numbered_in_order_of_first_appearance() {
        let schema = Arc::new(Schema::new(vec![arrow_schema::Field::new("s", DataType::LargeUtf8, true)]));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(LargeStringArray::from(vec![Some("b"), Some("a"), None, Some("b")]))])
                .unwrap();
        let mut p =
            Partitioner::new(&schema, &[PartitionField { column: "s".into(), transform: Transform::Identity, name: "s".into() }]).unwrap();
        assert_eq!(p.tuple_ids(&batch).unwrap(), vec![0, 1, 2, 0]);
        assert_eq!(p.tuples[2], vec![("s".to_string(), PartitionValue::Null)]);
        assert!(
            Partitioner::new(&schema, &[PartitionField { column: "s".into(), transform: Transform::Day, name: "s_day".into() }]).is_err()
        );
    }
}
