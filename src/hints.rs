//! Hints: the `ARROW:schema` value an output carries. Readers that honour it (pyarrow, Arrow
//! C++, parquet-rs) take from it the Arrow types Parquet cannot say (a duration stored as INT64,
//! a timestamp's time zone, a dictionary, large offsets), so it must describe the output's own
//! columns, never one input's. Each input's reading is what such a reader makes of it: its
//! Parquet schema with its own `ARROW:schema` applied — or without it where that value is absent,
//! does not decode or does not fit the file's columns (a value that does not decode is never
//! carried). Only where every input reads the same (columns, types, field and schema metadata)
//! and some input carried a value that decoded does an output carry one: the inputs' own value
//! where every input carries the same bytes (what their writer put there, names and metadata that
//! parquet-rs does not read included), else regenerated — the output's Parquet schema read through
//! the agreed schema, encoded afresh — and either only if it reads, over the output's columns, as
//! the inputs did. Anything else leaves the output
//! to be read from its Parquet schema alone. (Column by column is not an option: a reader takes
//! the embedded schema whole, and a column it does not name is read differently by each reader —
//! a UTC timestamp is `UTC` to pyarrow, `+00:00` to parquet-rs.)
//!
//! Memory: the first input's reading and `ARROW:schema` value.

use crate::contain::contain;
use arrow_schema::Schema;
use parquet::arrow::{encode_arrow_schema, parquet_to_arrow_schema, ARROW_SCHEMA_META_KEY};
use parquet::file::metadata::KeyValue;
use parquet::schema::types::{SchemaDescriptor, TypePtr};

/// The key-value metadata key of the embedded Arrow schema.
pub const KEY: &str = ARROW_SCHEMA_META_KEY;

/// What the inputs so far agree on.
#[derive(Debug, Default)]
pub enum Readings {
    /// No input yet.
    #[default]
    Empty,
    /// Every input so far reads as this; `embedded`: some carried a value that decoded; `value`:
    /// the value every input so far carried, byte for byte (`None` once two differ or one has none).
    Agreed { reading: Schema, embedded: bool, value: Option<String>, last: Option<(TypePtr, Option<String>)> },
    /// Two inputs read differently (or one could not be read at all).
    Differ,
}

/// `schema` read with `value` as its `ARROW:schema` (`None`: read from Parquet alone); `None`
/// where the value does not decode or does not fit the columns (a panic in the decoder counts
/// as not decoding).
fn read_with(schema: &SchemaDescriptor, value: Option<&str>) -> Option<Schema> {
    let kv = value.map(|v| vec![KeyValue::new(KEY.to_string(), v.to_string())]);
    contain(|| parquet_to_arrow_schema(schema, kv.as_ref())).ok()?.ok()
}

/// The value of `key` in `kv` as a reader takes it (the last occurrence).
pub fn value_of<'a>(kv: Option<&'a Vec<KeyValue>>, key: &str) -> Option<&'a str> {
    kv.into_iter().flatten().rev().find(|e| e.key == key).and_then(|e| e.value.as_deref())
}

impl Readings {
    /// Adds the reading of an input of Parquet schema `schema` and key-value metadata `kv`.
    pub fn add(&mut self, schema: &SchemaDescriptor, kv: Option<&Vec<KeyValue>>) {
        let raw = value_of(kv, KEY);
        // (an input like the one before — same Parquet schema, same value — reads the same: most
        // generations' inputs are; and once two differ, nothing changes it)
        match self {
            Readings::Differ => return,
            Readings::Agreed { last: Some((root, last_raw)), .. }
                if last_raw.as_deref() == raw && root.get_fields() == schema.root_schema().get_fields() =>
            {
                return
            }
            _ => {}
        }
        let last = Some((schema.root_schema_ptr(), raw.map(str::to_string)));
        let embedded = raw.and_then(|v| read_with(schema, Some(v)));
        let decoded = embedded.is_some();
        let raw = raw.filter(|_| decoded);
        let Some(reading) = embedded.or_else(|| read_with(schema, None)) else {
            *self = Readings::Differ;
            return;
        };
        *self = match std::mem::take(self) {
            Readings::Empty => Readings::Agreed { reading, embedded: decoded, value: raw.map(str::to_string), last },
            Readings::Agreed { reading: agreed, embedded, value, .. } if agreed == reading => {
                let value = value.filter(|v| raw == Some(v.as_str()));
                Readings::Agreed { reading: agreed, embedded: embedded || decoded, value, last }
            }
            _ => Readings::Differ,
        };
    }

    /// The `ARROW:schema` value for outputs of Parquet schema `output` (see the module doc), or
    /// `None` when none is to be written.
    pub fn output_value(&self, output: &SchemaDescriptor) -> Option<String> {
        let Readings::Agreed { reading, embedded: true, value, .. } = self else { return None };
        if let Some(value) = value.as_ref().filter(|v| read_with(output, Some(v)).as_ref() == Some(reading)) {
            return Some(value.clone());
        }
        let resolved = read_with(output, Some(&encode_arrow_schema(reading)))?;
        (resolved == *reading).then(|| encode_arrow_schema(&resolved))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field, TimeUnit};
    use parquet::arrow::ArrowSchemaConverter;
    use std::sync::Arc;

    fn parquet_of(schema: &Schema) -> SchemaDescriptor {
        ArrowSchemaConverter::new().convert(schema).unwrap()
    }

    fn kv(schema: &Schema) -> Vec<KeyValue> {
        vec![KeyValue::new(KEY.to_string(), encode_arrow_schema(schema))]
    }

    /// What parquet-rs's reader makes of an output with `value` as its ARROW:schema.
    fn decoded(output: &SchemaDescriptor, value: &str) -> Schema {
        parquet_to_arrow_schema(output, Some(&vec![KeyValue::new(KEY.to_string(), value.to_string())])).unwrap()
    }

    fn two(x: DataType) -> Schema {
        let paris = DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("Europe/Paris")));
        Schema::new(vec![Field::new("x", x, true), Field::new("t", paris, true)])
    }

    #[test]
    fn inputs_that_read_differently_give_no_value_agreeing_ones_give_theirs() {
        let durations = two(DataType::Duration(TimeUnit::Microsecond));
        let ints = two(DataType::Int64);
        let (a, b) = (parquet_of(&ints), parquet_of(&durations));
        assert_eq!(a.root_schema(), b.root_schema(), "the same Parquet columns");
        let mut r = Readings::default();
        r.add(&a, Some(&kv(&ints)));
        r.add(&b, Some(&kv(&durations)));
        assert_eq!(r.output_value(&b), None, "int64 in one, duration in the other");
        // every input agreeing: the duration and the time zone are kept
        let mut r = Readings::default();
        r.add(&b, Some(&kv(&durations)));
        r.add(&b, Some(&kv(&durations)));
        let out = decoded(&b, &r.output_value(&b).unwrap());
        assert_eq!(out, durations);
        assert_eq!(r.output_value(&b), Some(encode_arrow_schema(&durations)), "the same bytes: carried as they are");
        // the same reading from other bytes (nullability is the Parquet schema's either way):
        // regenerated from the reading
        let required = Schema::new(durations.fields().iter().map(|f| f.as_ref().clone().with_nullable(false)).collect::<Vec<_>>());
        assert_ne!(encode_arrow_schema(&required), encode_arrow_schema(&durations));
        let mut r = Readings::default();
        r.add(&b, Some(&kv(&durations)));
        r.add(&b, Some(&kv(&required)));
        let value = r.output_value(&b).unwrap();
        assert_eq!(decoded(&b, &value), durations);
        assert_ne!(value, encode_arrow_schema(&required));
        // one input without a value reads from Parquet alone (int64, a UTC timestamp): no agreement
        r.add(&b, None);
        assert_eq!(r.output_value(&b), None);
    }

    #[test]
    fn a_value_that_does_not_decode_is_not_carried() {
        let durations = two(DataType::Duration(TimeUnit::Microsecond));
        let p = parquet_of(&durations);
        let corrupt = vec![KeyValue::new(KEY.to_string(), "/////wAAAAA=not an arrow schema".to_string())];
        let mut r = Readings::default();
        r.add(&p, Some(&corrupt));
        assert_eq!(r.output_value(&p), None, "nothing decoded: nothing written");
        r.add(&p, Some(&kv(&durations)));
        assert_eq!(r.output_value(&p), None, "the corrupt input reads as Parquet says: no agreement");
        // no input with a value: none written
        let mut r = Readings::default();
        r.add(&p, None);
        r.add(&p, None);
        assert_eq!(r.output_value(&p), None);
    }

    #[test]
    fn a_value_that_does_not_fit_the_output_is_not_carried() {
        // Agreed on by the inputs, but the outputs' columns are another schema.
        let durations = two(DataType::Duration(TimeUnit::Microsecond));
        let p = parquet_of(&durations);
        let mut r = Readings::default();
        r.add(&p, Some(&kv(&durations)));
        let wider = parquet_of(&Schema::new(vec![Field::new("x", DataType::Int64, true), Field::new("y", DataType::Int64, true)]));
        assert_eq!(r.output_value(&wider), None);
    }
}
