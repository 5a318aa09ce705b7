//! The `files` argument: each entry a path, or an object naming the file, its location, the
//! deletes that apply to it and the planning facts its caller's manifests record.

use super::{integer, invalid, RawValue, MAX_SAFE_INTEGER};
use crate::error::Result;
use crate::iceberg::input::{DeleteSource, InputFile};
use crate::iceberg::partition::PartitionValue;
use std::path::PathBuf;

/// `files` without their planning facts (see `plan_inputs`).
pub fn input_files(items: &[RawValue]) -> Result<Vec<InputFile>> {
    Ok(plan_inputs(items)?.into_iter().map(|p| p.file).collect())
}

/// `files`: each a path string, or `{ path, location?, deletes?, fileSizeInBytes?,
/// recordCount?, partition?, sortOrderId?, rewrite? }` with `deletes` a list of
/// `{ kind: 'position', path }`, `{ kind: 'deletion-vector', path, offset, length }` or
/// `{ kind: 'equality', path, fieldIds }`. A path listed twice is refused: its rows would be
/// written twice.
pub fn plan_inputs(items: &[RawValue]) -> Result<Vec<PlanInput>> {
    let mut out: Vec<PlanInput> = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let input = match item {
            RawValue::String(s) if !s.is_empty() => PlanInput::of(InputFile::plain(s.as_str())),
            RawValue::Object(entries) => entry(i, entries)?,
            v => return Err(invalid(format!("files[{i}] must be a path or {{ path, location?, deletes? }}, got {}", v.type_name()))),
        };
        let path = &input.file.path;
        let same = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if let Some(first) = seen.insert(same, i) {
            return Err(invalid(format!("files[{i}] ({}) is files[{first}] again: each input may be listed once", path.display())));
        }
        out.push(input);
    }
    Ok(out)
}

fn entry(i: usize, entries: &[(String, RawValue)]) -> Result<PlanInput> {
    let (mut path, mut location, mut deletes) = (None, None, Vec::new());
    let (mut bytes, mut partition, mut sort_order_id, mut rewrite) = (None, None, None, false);
    let at = |key: &str| format!("files[{i}].{key}");
    for (key, v) in entries {
        match (key.as_str(), v) {
            (_, RawValue::Undefined) => {}
            ("path", RawValue::String(p)) if !p.is_empty() => path = Some(p.clone()),
            ("location" | "deletes" | "partition", RawValue::Null) => {}
            ("location", RawValue::String(l)) if !l.is_empty() => location = Some(l.clone()),
            ("deletes", RawValue::Array(list)) => {
                for (j, d) in list.iter().enumerate() {
                    deletes.push(delete_source(d, &format!("files[{i}].deletes[{j}]"))?);
                }
            }
            ("fileSizeInBytes", v) => bytes = count(v, &at(key))?,
            ("recordCount", v) => {
                count(v, &at(key))?;
            }
            ("sortOrderId", v) => sort_order_id = integer(v, &at(key), 0.0, i32::MAX as f64)?.map(|n| n as i32),
            ("rewrite", RawValue::Bool(b)) => rewrite = *b,
            ("rewrite", RawValue::Null) => {}
            ("partition", RawValue::Object(values)) => {
                let mut keys = Vec::with_capacity(values.len());
                for (name, value) in values {
                    keys.push((name.clone(), partition_key(value, &format!("files[{i}].partition.{name}"))?));
                }
                partition = Some(keys);
            }
            _ => return Err(invalid(format!("files[{i}]: unexpected '{key}' ({})", v.type_name()))),
        }
    }
    let path: String = path.ok_or_else(|| invalid(format!("files[{i}].path must be a non-empty string")))?;
    let file = InputFile { location: location.unwrap_or_else(|| path.clone()), path: PathBuf::from(path), deletes };
    Ok(PlanInput { file, bytes, partition, sort_order_id, rewrite })
}

/// A size or count: a non-negative integer number or BigInt.
fn count(v: &RawValue, at: &str) -> Result<Option<u64>> {
    match v {
        RawValue::BigInt(n) => {
            u64::try_from(*n).map(Some).map_err(|_| invalid(format!("'{at}' must be a non-negative 64-bit integer, got {n}")))
        }
        v => Ok(integer(v, at, 0.0, MAX_SAFE_INTEGER)?.map(|n| n as u64)),
    }
}

/// A partition value as `dataFile.partition` gives it (or as the caller's manifests hold it).
fn partition_key(v: &RawValue, at: &str) -> Result<Key> {
    Ok(match v {
        RawValue::Null | RawValue::Undefined => Key::Null,
        RawValue::Bool(b) => Key::Bool(*b),
        RawValue::Number(n) if n.is_finite() => Key::of_number(*n),
        RawValue::BigInt(n) => Key::Int(*n),
        RawValue::String(s) => Key::Text(s.clone()),
        RawValue::Bytes(b) => Key::Text(b.iter().map(|x| format!("{x:02x}")).collect()),
        v => return Err(invalid(format!("'{at}' must be a string, number, bigint, boolean, Buffer or null, got {}", v.type_name()))),
    })
}

fn delete_source(value: &RawValue, at: &str) -> Result<DeleteSource> {
    let RawValue::Object(entries) = value else {
        return Err(invalid(format!("{at} must be an object {{ kind, path, … }}, got {}", value.type_name())));
    };
    let get = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or(RawValue::Undefined);
    let kind = match get("kind") {
        RawValue::String(k) => k,
        v => return Err(invalid(format!("{at}.kind must be 'position', 'deletion-vector' or 'equality', got {}", v.type_name()))),
    };
    let allowed: &[&str] = match kind.as_str() {
        "position" => &["kind", "path"],
        "deletion-vector" => &["kind", "path", "offset", "length"],
        "equality" => &["kind", "path", "fieldIds"],
        other => return Err(invalid(format!("{at}.kind must be 'position', 'deletion-vector' or 'equality', got '{other}'"))),
    };
    if let Some((key, _)) = entries.iter().find(|(k, v)| !allowed.contains(&k.as_str()) && *v != RawValue::Undefined) {
        return Err(invalid(format!("{at}: unexpected '{key}' for kind '{kind}'")));
    }
    let path = match get("path") {
        RawValue::String(p) if !p.is_empty() => PathBuf::from(p),
        v => return Err(invalid(format!("{at}.path must be a non-empty string, got {}", v.type_name()))),
    };
    Ok(match kind.as_str() {
        "position" => DeleteSource::Position { path },
        "deletion-vector" => {
            let number = |key: &str| -> Result<u64> {
                integer(&get(key), &format!("{at}.{key}"), 0.0, MAX_SAFE_INTEGER)?
                    .map(|n| n as u64)
                    .ok_or_else(|| invalid(format!("{at}.{key} is required for a deletion vector")))
            };
            DeleteSource::Vector { path, offset: number("offset")?, length: number("length")? }
        }
        _ => {
            let RawValue::Array(ids) = get("fieldIds") else {
                return Err(invalid(format!("{at}.fieldIds must be a non-empty array of field ids")));
            };
            let mut field_ids = Vec::with_capacity(ids.len());
            for (k, id) in ids.iter().enumerate() {
                let n = integer(id, &format!("{at}.fieldIds[{k}]"), i32::MIN as f64, i32::MAX as f64)?
                    .ok_or_else(|| invalid(format!("{at}.fieldIds[{k}] must be a field id")))?;
                field_ids.push(n as i32);
            }
            if field_ids.is_empty() {
                return Err(invalid(format!("{at}.fieldIds must name at least one field id")));
            }
            DeleteSource::Equality { path, field_ids }
        }
    })
}

/// A partition value as planning compares it: numbers whatever their JS or Iceberg type,
/// strings (bytes as lowercase hex, as `dataFile.partition` gives them), booleans, null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Null,
    Bool(bool),
    Int(i128),
    /// A number that is not an integer, by its bits.
    Float(u64),
    Text(String),
}

impl Key {
    pub fn of_number(n: f64) -> Key {
        if n.fract() == 0.0 && n.abs() < 1e30 {
            Key::Int(n as i128)
        } else {
            Key::Float(n.to_bits())
        }
    }

    pub fn of(v: &PartitionValue) -> Key {
        match v {
            PartitionValue::Null => Key::Null,
            PartitionValue::Bool(b) => Key::Bool(*b),
            PartitionValue::Int(i) | PartitionValue::Long(i) | PartitionValue::Date(i) | PartitionValue::Timestamp(i) => {
                Key::Int(i128::from(*i))
            }
            PartitionValue::Float(f) => Key::of_number(*f),
            PartitionValue::String(s) | PartitionValue::Decimal(s) => Key::Text(s.clone()),
            PartitionValue::Bytes(b) => Key::Text(b.iter().map(|x| format!("{x:02x}")).collect()),
        }
    }
}

/// One file to plan, with the facts its caller passed.
#[derive(Debug, Clone)]
pub struct PlanInput {
    pub file: InputFile,
    pub bytes: Option<u64>,
    /// By partition field name.
    pub partition: Option<Vec<(String, Key)>>,
    pub sort_order_id: Option<i32>,
    pub rewrite: bool,
}

impl PlanInput {
    /// A file the caller passed no facts for.
    pub fn of(file: InputFile) -> PlanInput {
        PlanInput { file, bytes: None, partition: None, sort_order_id: None, rewrite: false }
    }
}
