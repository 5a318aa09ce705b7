//! The `files` argument: each entry a path, or an object naming the file, its location and
//! the deletes that apply to it.

use super::{integer, invalid, RawValue, MAX_SAFE_INTEGER};
use crate::error::Result;
use crate::iceberg::input::{DeleteSource, InputFile};
use std::path::PathBuf;

/// `files`: each a path string, or `{ path, location?, deletes? }` with `deletes` a list of
/// `{ kind: 'position', path }`, `{ kind: 'deletion-vector', path, offset, length }` or
/// `{ kind: 'equality', path, fieldIds }`.
pub fn input_files(items: &[RawValue]) -> Result<Vec<InputFile>> {
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let entries = match item {
            RawValue::String(s) if !s.is_empty() => {
                out.push(InputFile::plain(s.as_str()));
                continue;
            }
            RawValue::Object(entries) => entries,
            v => return Err(invalid(format!("files[{i}] must be a path or {{ path, location?, deletes? }}, got {}", v.type_name()))),
        };
        let (mut path, mut location, mut deletes) = (None, None, Vec::new());
        for (key, v) in entries {
            match (key.as_str(), v) {
                ("path", RawValue::String(p)) if !p.is_empty() => path = Some(p.clone()),
                ("location" | "deletes", RawValue::Undefined | RawValue::Null) => {}
                ("location", RawValue::String(l)) if !l.is_empty() => location = Some(l.clone()),
                ("deletes", RawValue::Array(list)) => {
                    for (j, d) in list.iter().enumerate() {
                        deletes.push(delete_source(d, &format!("files[{i}].deletes[{j}]"))?);
                    }
                }
                _ => return Err(invalid(format!("files[{i}]: unexpected '{key}' ({})", v.type_name()))),
            }
        }
        let path: String = path.ok_or_else(|| invalid(format!("files[{i}].path must be a non-empty string")))?;
        out.push(InputFile { location: location.unwrap_or_else(|| path.clone()), path: PathBuf::from(path), deletes });
    }
    Ok(out)
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
