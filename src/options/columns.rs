//! The options naming columns and what to do with them: `partitionBy`, `sortBy`, `divert`,
//! checked beyond their types (names present and unique, transforms known).
//! Memory: the options themselves.

use super::contract::{DivertOptions, PartitionFieldOptions, SortKeyOptions};
use super::{invalid, DivertSpec, SortKey};
use crate::error::Result;
use crate::iceberg::partition::{PartitionField, Transform};
use std::path::PathBuf;

/// `[{ column, transform?, name? }]`, transforms named as Iceberg does (`identity` by default).
pub(super) fn partition_by(items: Option<&[PartitionFieldOptions]>) -> Result<Option<Vec<PartitionField>>> {
    let Some(items) = items else { return Ok(None) };
    let mut fields = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if item.column.is_empty() {
            return Err(invalid(format!("'partitionBy[{i}].column' must be a column name, got an empty string")));
        }
        let transform = match &item.transform {
            None => Transform::Identity,
            Some(t) => Transform::parse(&t.to_ascii_lowercase()).ok_or_else(|| {
                invalid(format!(
                    "'partitionBy[{i}].transform' '{t}' is not one of identity, year, month, day, hour, bucket[N], truncate[W]"
                ))
            })?,
        };
        let name = match &item.name {
            Some(n) if n.is_empty() => {
                return Err(invalid(format!("'partitionBy[{i}].name' must be a non-empty string, got an empty string")))
            }
            Some(n) => n.clone(),
            None => transform.field_name(&item.column),
        };
        if fields.iter().any(|f: &PartitionField| f.name == name) {
            return Err(invalid(format!("'partitionBy' names partition field '{name}' twice")));
        }
        fields.push(PartitionField { column: item.column.clone(), transform, name });
    }
    Ok((!fields.is_empty()).then_some(fields))
}

/// `[{ column, descending?, nullsFirst? }]`.
pub(super) fn sort_by(items: Option<&[SortKeyOptions]>) -> Result<Option<Vec<SortKey>>> {
    let Some(items) = items else { return Ok(None) };
    let mut keys: Vec<SortKey> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if item.column.is_empty() {
            return Err(invalid(format!("'sortBy[{i}].column' must be a column name, got an empty string")));
        }
        if keys.iter().any(|k| k.column == item.column) {
            return Err(invalid(format!("'sortBy' names column '{}' twice", item.column)));
        }
        let descending = item.descending.unwrap_or(false);
        keys.push(SortKey { column: item.column.clone(), descending, nulls_first: item.nulls_first.unwrap_or(!descending) });
    }
    Ok((!keys.is_empty()).then_some(keys))
}

/// `divert: { column, path?, equals, to }`.
pub(super) fn divert(value: Option<&DivertOptions>) -> Result<Option<DivertSpec>> {
    let Some(d) = value else { return Ok(None) };
    if d.column.is_empty() {
        return Err(invalid("'divert.column' must be a column name, got an empty string".into()));
    }
    if d.to.is_empty() {
        return Err(invalid("'divert.to' must be a file path, got an empty string".into()));
    }
    let path = d.path.clone().unwrap_or_default();
    Ok(Some(DivertSpec { column: d.column.clone(), path, equals: d.equals.0.clone(), to: PathBuf::from(&d.to) }))
}
