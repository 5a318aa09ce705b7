//! Option values no plain Rust type parses as the contract wants: a `files` entry (a path or an
//! object), counts (number or BigInt), partition values, `divert.equals`, and the JS-only
//! `signal` and `onProgress`. Each is a serde `Deserialize` with its own visitor.
//! Memory: the values themselves.
//!
//! napi's serde deserializer visits a JS number as an `i64` when it is integral (saturating
//! beyond ±2^63) and as an `f64` otherwise; a BigInt as a `u64` (non-negative, one word), an
//! `i64` (negative, one word) or an `i128`/`u128` (two words; wider BigInts are cut to two
//! words by napi before any visitor sees them); a Buffer or Uint8Array as bytes; null and
//! undefined as unit. A function or symbol fails in the deserializer itself unless the field
//! ignores its value (`JsOnly`). So a number option (`Num`, `FieldId`, `Equals`) refuses the
//! BigInts it can tell (`u64`, `i128`, `u128`); a negative BigInt that fits 64 bits is visited as
//! a number is and cannot be told from one: it is taken as that number.

use super::contract::InputFile;
use super::files::Key;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Unexpected, Visitor};
use std::fmt;

/// `signal` and `onProgress`: JS values the N-API layer takes as they are (an AbortSignal, a
/// function). Parsing accepts any value here without reading it; the N-API layer checks it.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsOnly;

impl<'de> Deserialize<'de> for JsOnly {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::IgnoredAny::deserialize(d)?;
        Ok(JsOnly)
    }
}

/// A JS number (a BigInt is refused where napi's deserializer shows it as one: see above).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Num(pub f64);

/// The refusal of a BigInt where a number is expected.
fn bigint<E: de::Error>(n: impl fmt::Display, expected: &dyn de::Expected) -> E {
    E::invalid_type(Unexpected::Other(&format!("bigint {n}")), expected)
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Num, E> {
                Ok(Num(n as f64))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Num, E> {
                Ok(Num(n))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Num, E> {
                Err(bigint(n, &self))
            }
            fn visit_i128<E: de::Error>(self, n: i128) -> Result<Num, E> {
                Err(bigint(n, &self))
            }
            fn visit_u128<E: de::Error>(self, n: u128) -> Result<Num, E> {
                Err(bigint(n, &self))
            }
        }
        d.deserialize_any(V)
    }
}

/// An Iceberg field id: an integral number in the 32-bit range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldId(pub i32);

impl<'de> Deserialize<'de> for FieldId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Num(n) = Num::deserialize(d)?;
        if n.fract() == 0.0 && n >= f64::from(i32::MIN) && n <= f64::from(i32::MAX) {
            Ok(FieldId(n as i32))
        } else {
            Err(de::Error::invalid_value(Unexpected::Float(n), &"a field id (an integer in [-2^31, 2^31))"))
        }
    }
}

/// A size or count: a non-negative integer, as a number or a BigInt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative integer: a number up to 2^53 - 1 or a BigInt below 2^64")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Count, E> {
                Ok(Count(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Count, E> {
                // (A non-negative `i64` is a JS number, never a BigInt: held to the safe range.)
                match u64::try_from(n) {
                    Ok(c) if (c as f64) <= super::MAX_SAFE_INTEGER => Ok(Count(c)),
                    _ => Err(E::invalid_value(Unexpected::Signed(n), &self)),
                }
            }
            fn visit_u128<E: de::Error>(self, n: u128) -> Result<Count, E> {
                u64::try_from(n).map(Count).map_err(|_| E::invalid_value(Unexpected::Other(&format!("integer {n}")), &self))
            }
            fn visit_i128<E: de::Error>(self, n: i128) -> Result<Count, E> {
                u64::try_from(n).map(Count).map_err(|_| E::invalid_value(Unexpected::Other(&format!("integer {n}")), &self))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Count, E> {
                if n.fract() == 0.0 && (0.0..=super::MAX_SAFE_INTEGER).contains(&n) {
                    Ok(Count(n as u64))
                } else {
                    Err(E::invalid_value(Unexpected::Float(n), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A partition value as `dataFile.partition` gives it (or as the caller's manifests hold it):
/// null, boolean, number, BigInt, string or Buffer.
fn partition_key<'de, D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = Key;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string, number, bigint, boolean, Buffer or null")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
            Ok(Key::Null)
        }
        fn visit_none<E: de::Error>(self) -> Result<Key, E> {
            Ok(Key::Null)
        }
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<Key, E> {
            Ok(Key::Bool(b))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Key, E> {
            Ok(Key::Int(i128::from(n)))
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Key, E> {
            Ok(Key::Int(i128::from(n)))
        }
        fn visit_i128<E: de::Error>(self, n: i128) -> Result<Key, E> {
            Ok(Key::Int(n))
        }
        fn visit_u128<E: de::Error>(self, n: u128) -> Result<Key, E> {
            i128::try_from(n).map(Key::Int).map_err(|_| E::invalid_value(Unexpected::Other(&format!("integer {n}")), &self))
        }
        fn visit_f64<E: de::Error>(self, n: f64) -> Result<Key, E> {
            if n.is_finite() {
                Ok(Key::of_number(n))
            } else {
                Err(E::invalid_value(Unexpected::Float(n), &self))
            }
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
            Ok(Key::Text(s.to_string()))
        }
        fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Key, E> {
            Ok(Key::Text(b.iter().map(|x| format!("{x:02x}")).collect()))
        }
    }
    d.deserialize_any(V)
}

/// `files[i].partition`: by partition field name, in the object's key order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PartitionValues(pub Vec<(String, Key)>);

impl<'de> Deserialize<'de> for PartitionValues {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct One(Key);
        impl<'de> Deserialize<'de> for One {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                partition_key(d).map(One)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PartitionValues;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of partition values by field name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PartitionValues, A::Error> {
                let mut out = Vec::new();
                while let Some((name, One(key))) = map.next_entry::<String, One>()? {
                    out.push((name, key));
                }
                Ok(PartitionValues(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// `divert.equals`: a string, a finite number or a boolean, kept as the JSON value it is compared as.
#[derive(Debug, Clone, PartialEq)]
pub struct Equals(pub serde_json::Value);

impl<'de> Deserialize<'de> for Equals {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Equals;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, a finite number or a boolean")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Equals, E> {
                Ok(Equals(serde_json::Value::String(s.to_string())))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Equals, E> {
                Ok(Equals(serde_json::Value::Bool(b)))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Equals, E> {
                self.visit_f64(n as f64)
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Equals, E> {
                Err(bigint(n, &self))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Equals, E> {
                serde_json::Number::from_f64(n)
                    .map(|n| Equals(serde_json::Value::Number(n)))
                    .ok_or_else(|| E::invalid_value(Unexpected::Float(n), &self))
            }
        }
        d.deserialize_any(V)
    }
}

/// An option object `T`, read from a JS object only (not from an array of its fields in order,
/// which serde's derived structs also take).
#[derive(Debug, Clone)]
pub struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                // (the interface's name: the type's, without its module path)
                let name = std::any::type_name::<T>().rsplit("::").next().unwrap_or("");
                write!(f, "an object ({name} in index.d.ts)")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Obj)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// One `files` entry: a path, or `InputFile`.
#[derive(Debug, Clone)]
pub enum FileArg {
    Path(String),
    File(Box<InputFile>),
}

impl<'de> Deserialize<'de> for FileArg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FileArg;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a path or { path, location?, deletes?, … }")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<FileArg, E> {
                Ok(FileArg::Path(s.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<FileArg, A::Error> {
                InputFile::deserialize(de::value::MapAccessDeserializer::new(map)).map(|f| FileArg::File(Box::new(f)))
            }
        }
        d.deserialize_any(V)
    }
}

/// JSON as napi's deserializer shows JS numbers: integers above zero visit as `u64` in serde_json
/// (as BigInts do in napi), so unit tests turn every number into the `f64` a JS number is.
#[cfg(test)]
pub(crate) fn js_numbers(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) => n.as_f64().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number),
        Value::Array(items) => Value::Array(items.into_iter().map(js_numbers).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, js_numbers(v))).collect()),
        other => other,
    }
}
