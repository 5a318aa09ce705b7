//! The `files` argument, parsed as `Array<string | InputFile>` (`values::FileArg`): each entry a
//! path, or an object naming the file, its location, the deletes that apply to it and the
//! planning facts its caller's manifests record. Checked here beyond its types.
//! Memory: the entries themselves.

use super::contract::{self as js, DeleteKind};
use super::values::{FileArg, Num};
use super::{integer, invalid, MAX_SAFE_INTEGER};
use crate::error::Result;
use crate::iceberg::input::{DeleteSource, InputFile};
use crate::iceberg::partition::PartitionValue;
use std::path::PathBuf;

/// `files` without their planning facts (see `plan_inputs`).
pub fn input_files(items: &[FileArg]) -> Result<Vec<InputFile>> {
    Ok(plan_inputs(items)?.into_iter().map(|p| p.file).collect())
}

/// `files`: each a path string, or `{ path, location?, deletes?, fileSizeInBytes?,
/// recordCount?, partition?, sortOrderId?, rewrite? }` with `deletes` a list of
/// `{ kind: 'position', path }`, `{ kind: 'deletion-vector', path, offset, length }` or
/// `{ kind: 'equality', path, fieldIds }`. A path listed twice is refused: its rows would be
/// written twice (here the same string; the same file under two names — a link, `..` — when the
/// plan opens it: `plan::fold_plan`). No file is touched here: this runs on the event loop.
pub fn plan_inputs(items: &[FileArg]) -> Result<Vec<PlanInput>> {
    let mut out: Vec<PlanInput> = Vec::with_capacity(items.len());
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let input = match item {
            FileArg::Path(s) if !s.is_empty() => PlanInput::of(InputFile::plain(s.as_str())),
            FileArg::Path(_) => {
                return Err(invalid(format!("'files[{i}]' must be a path or {{ path, location?, deletes? }}, got an empty string")))
            }
            FileArg::File(f) => entry(i, f)?,
        };
        let named = match item {
            FileArg::Path(s) => s.as_str(),
            FileArg::File(f) => f.path.as_str(),
        };
        if let Some(first) = seen.insert(named, i) {
            return Err(invalid(listed_twice(i, first, &input.file.path)));
        }
        out.push(input);
    }
    Ok(out)
}

/// Why `files[i]` is refused as `files[first]` again.
pub fn listed_twice(i: usize, first: usize, path: &std::path::Path) -> String {
    format!("files[{i}] ({}) is files[{first}] again: each input may be listed once", path.display())
}

fn entry(i: usize, f: &js::InputFile) -> Result<PlanInput> {
    if f.path.is_empty() {
        return Err(invalid(format!("'files[{i}].path' must be a non-empty string, got an empty string")));
    }
    let location = match &f.location {
        Some(l) if l.is_empty() => return Err(invalid(format!("'files[{i}].location' must be a non-empty string, got an empty string"))),
        Some(l) => l.clone(),
        None => f.path.clone(),
    };
    let mut deletes = Vec::new();
    for (j, d) in f.deletes.iter().flatten().enumerate() {
        deletes.push(delete_source(d, &format!("files[{i}].deletes[{j}]"))?);
    }
    let sort_order_id = integer(f.sort_order_id, &format!("files[{i}].sortOrderId"), 0.0, i32::MAX as f64)?.map(|n| n as i32);
    let file = InputFile { location, path: PathBuf::from(&f.path), deletes };
    Ok(PlanInput {
        file,
        bytes: f.file_size_in_bytes.map(|c| c.0),
        partition: f.partition.clone().map(|p| p.0),
        sort_order_id,
        rewrite: f.rewrite.unwrap_or(false),
    })
}

fn delete_source(d: &js::DeleteSource, at: &str) -> Result<DeleteSource> {
    let given = |key: &'static str, present: bool| -> Option<&'static str> { present.then_some(key) };
    let extra = match d.kind {
        DeleteKind::Position => {
            given("offset", d.offset.is_some()).or(given("length", d.length.is_some())).or(given("fieldIds", d.field_ids.is_some()))
        }
        DeleteKind::DeletionVector => given("fieldIds", d.field_ids.is_some()),
        DeleteKind::Equality => given("offset", d.offset.is_some()).or(given("length", d.length.is_some())),
    };
    let kind = match d.kind {
        DeleteKind::Position => "position",
        DeleteKind::DeletionVector => "deletion-vector",
        DeleteKind::Equality => "equality",
    };
    if let Some(key) = extra {
        return Err(invalid(format!("'{at}': unexpected '{key}' for kind '{kind}'")));
    }
    if d.path.is_empty() {
        return Err(invalid(format!("'{at}.path' must be a non-empty string, got an empty string")));
    }
    let path = PathBuf::from(&d.path);
    Ok(match d.kind {
        DeleteKind::Position => DeleteSource::Position { path },
        DeleteKind::DeletionVector => {
            let number = |key: &str, value: Option<Num>| -> Result<u64> {
                integer(value, &format!("{at}.{key}"), 0.0, MAX_SAFE_INTEGER)?
                    .map(|n| n as u64)
                    .ok_or_else(|| invalid(format!("'{at}.{key}' is required for a deletion vector")))
            };
            DeleteSource::Vector { path, offset: number("offset", d.offset)?, length: number("length", d.length)? }
        }
        DeleteKind::Equality => match &d.field_ids {
            Some(ids) if !ids.is_empty() => DeleteSource::Equality { path, field_ids: ids.iter().map(|id| id.0).collect() },
            _ => return Err(invalid(format!("'{at}.fieldIds' must name at least one field id"))),
        },
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
