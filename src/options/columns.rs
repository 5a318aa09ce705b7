//! The options naming columns and what to do with them: `partitionBy`, `sortBy`, `divert`.

use super::{invalid, DivertSpec, RawValue, SortKey};
use crate::error::Result;
use crate::iceberg::partition::{PartitionField, Transform};
use std::path::PathBuf;

/// `[{ column, transform?, name? }]`, transforms named as Iceberg does (`identity` by default).
pub(super) fn partition_by(value: &RawValue) -> Result<Option<Vec<PartitionField>>> {
    let items = match value {
        RawValue::Undefined | RawValue::Null => return Ok(None),
        RawValue::Array(items) => items,
        v => return Err(invalid(format!("'partitionBy' must be an array of {{ column, transform? }}, got {}", v.type_name()))),
    };
    let mut fields = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let RawValue::Object(entries) = item else {
            return Err(invalid(format!("'partitionBy'[{i}] must be an object {{ column, transform? }}, got {}", item.type_name())));
        };
        let mut column = None;
        let mut name = None;
        let mut transform = Transform::Identity;
        for (key, v) in entries {
            match (key.as_str(), v) {
                ("column", RawValue::String(c)) if !c.is_empty() => column = Some(c.clone()),
                ("name", RawValue::Undefined | RawValue::Null) => {}
                ("name", RawValue::String(n)) if !n.is_empty() => name = Some(n.clone()),
                ("transform", RawValue::Undefined | RawValue::Null) => {}
                ("transform", RawValue::String(t)) => {
                    transform = Transform::parse(&t.to_ascii_lowercase()).ok_or_else(|| {
                        invalid(format!(
                            "'partitionBy'[{i}].transform '{t}' is not one of identity, year, month, day, hour, bucket[N], truncate[W]"
                        ))
                    })?
                }
                _ => return Err(invalid(format!("'partitionBy'[{i}]: unexpected '{key}' ({})", v.type_name()))),
            }
        }
        let column: String = column.ok_or_else(|| invalid(format!("'partitionBy'[{i}].column must be a column name")))?;
        let name = name.unwrap_or_else(|| transform.field_name(&column));
        if fields.iter().any(|f: &PartitionField| f.name == name) {
            return Err(invalid(format!("'partitionBy' names partition field '{name}' twice")));
        }
        fields.push(PartitionField { column, transform, name });
    }
    Ok((!fields.is_empty()).then_some(fields))
}

/// `[{ column, descending?, nullsFirst? }]`.
pub(super) fn sort_by(value: &RawValue) -> Result<Option<Vec<SortKey>>> {
    let items = match value {
        RawValue::Undefined | RawValue::Null => return Ok(None),
        RawValue::Array(items) => items,
        v => return Err(invalid(format!("'sortBy' must be an array of {{ column, descending?, nullsFirst? }}, got {}", v.type_name()))),
    };
    let mut keys: Vec<SortKey> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let RawValue::Object(entries) = item else {
            return Err(invalid(format!(
                "'sortBy'[{i}] must be an object {{ column, descending?, nullsFirst? }}, got {}",
                item.type_name()
            )));
        };
        let (mut column, mut descending, mut nulls_first) = (None, false, None);
        for (key, v) in entries {
            match (key.as_str(), v) {
                ("column", RawValue::String(c)) if !c.is_empty() => column = Some(c.clone()),
                ("descending" | "nullsFirst", RawValue::Undefined | RawValue::Null) => {}
                ("descending", RawValue::Bool(b)) => descending = *b,
                ("nullsFirst", RawValue::Bool(b)) => nulls_first = Some(*b),
                _ => return Err(invalid(format!("'sortBy'[{i}]: unexpected '{key}' ({})", v.type_name()))),
            }
        }
        let column = column.ok_or_else(|| invalid(format!("'sortBy'[{i}].column must be a column name")))?;
        if keys.iter().any(|k| k.column == column) {
            return Err(invalid(format!("'sortBy' names column '{column}' twice")));
        }
        keys.push(SortKey { column, descending, nulls_first: nulls_first.unwrap_or(!descending) });
    }
    Ok((!keys.is_empty()).then_some(keys))
}

/// `divert: { column, path?, equals, to }`.
pub(super) fn divert(value: &RawValue) -> Result<Option<DivertSpec>> {
    let entries = match value {
        RawValue::Undefined | RawValue::Null => return Ok(None),
        RawValue::Object(entries) => entries,
        v => return Err(invalid(format!("'divert' must be an object {{ column, path?, equals, to }}, got {}", v.type_name()))),
    };
    let (mut column, mut path, mut equals, mut to) = (None, Vec::new(), None, None);
    for (key, v) in entries {
        match (key.as_str(), v) {
            ("column", RawValue::String(c)) if !c.is_empty() => column = Some(c.clone()),
            ("path", RawValue::Undefined | RawValue::Null) => {}
            ("path", RawValue::Array(items)) => {
                for (j, item) in items.iter().enumerate() {
                    match item {
                        RawValue::String(k) => path.push(k.clone()),
                        other => {
                            return Err(invalid(format!("'divert.path'[{j}] must be a string (an object key), got {}", other.type_name())))
                        }
                    }
                }
            }
            ("equals", RawValue::String(x)) => equals = Some(serde_json::Value::String(x.clone())),
            ("equals", RawValue::Bool(b)) => equals = Some(serde_json::Value::Bool(*b)),
            ("equals", RawValue::Number(n)) => {
                equals = Some(
                    serde_json::Number::from_f64(*n)
                        .map(serde_json::Value::Number)
                        .ok_or_else(|| invalid("'divert.equals' must be a finite number".into()))?,
                )
            }
            ("to", RawValue::String(t)) if !t.is_empty() => to = Some(PathBuf::from(t)),
            _ => return Err(invalid(format!("'divert': unexpected '{key}' ({})", v.type_name()))),
        }
    }
    let column = column.ok_or_else(|| invalid("'divert.column' must be a column name".into()))?;
    let equals = equals.ok_or_else(|| invalid("'divert.equals' must be a string, number or boolean".into()))?;
    let to = to.ok_or_else(|| invalid("'divert.to' must be a file path".into()))?;
    Ok(Some(DivertSpec { column, path, equals, to }))
}
