//! Unify: the one Parquet schema the outputs are written with when the inputs of a generation
//! differ — a column added later, an optional column, a widened type (int → long, float →
//! double). Fields are matched by Parquet field id when both carry one, else by name; the
//! newest (last) input's fields come first, in its order, with their names, ids and logical
//! types; columns only older inputs have follow. A column that some input lacks must be
//! optional (its rows read as null); any other difference — and two output columns of one
//! name, sibling fields of one name, a top-level field id used twice in a file — is
//! `ERR_SCHEMA_CONFLICT` naming two files and the column.
//!
//! Memory: one schema per distinct input schema.

use crate::error::{CompactError, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int32Type};
use arrow_array::{ArrayRef, Float64Array, Int64Array};
use arrow_schema::DataType;
use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::schema::types::{SchemaDescriptor, Type, TypePtr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How fields of different inputs are matched.
pub fn same_field(a: &Type, b: &Type) -> bool {
    let (ia, ib) = (a.get_basic_info(), b.get_basic_info());
    if ia.has_id() && ib.has_id() {
        ia.id() == ib.id()
    } else {
        a.name() == b.name()
    }
}

struct Entry {
    ty: TypePtr,
    /// The file whose version of the field `ty` is.
    file: PathBuf,
}

/// The unified top-level fields of `schemas` (distinct schemas with a file having each, in
/// `files` order).
pub fn unify(schemas: &[(PathBuf, Arc<SchemaDescriptor>)]) -> Result<Vec<TypePtr>> {
    for (path, schema) in schemas {
        distinct_names(path, "", schema.root_schema().get_fields())?;
        distinct_ids(path, schema.root_schema().get_fields())?;
    }
    let Some((newest_path, newest)) = schemas.last() else { return Ok(Vec::new()) };
    let mut fields: Vec<Entry> =
        newest.root_schema().get_fields().iter().map(|f| Entry { ty: f.clone(), file: newest_path.clone() }).collect();
    for (path, schema) in schemas.iter().rev().skip(1) {
        let theirs = schema.root_schema().get_fields();
        for f in theirs {
            match fields.iter_mut().find(|e| same_field(&e.ty, f)) {
                Some(e) => e.ty = Arc::new(merge(&e.ty, f).map_err(|msg| conflict(&e.file, path, f.name(), msg))?),
                None => fields.push(Entry { ty: f.clone(), file: path.clone() }),
            }
        }
    }
    // A column some input lacks reads as null there: it must be optional.
    for (path, schema) in schemas {
        let theirs = schema.root_schema().get_fields();
        for e in &fields {
            if !theirs.iter().any(|f| same_field(&e.ty, f)) && e.ty.get_basic_info().repetition() == Repetition::REQUIRED {
                return Err(conflict(&e.file, path, e.ty.name(), "required column missing in the second file".into()));
            }
        }
    }
    // Two inputs' columns of one name but different field ids (a column dropped and another
    // added under its name) would be two output columns of one name: no reader could tell
    // them apart.
    for (i, e) in fields.iter().enumerate() {
        if let Some(other) = fields[..i].iter().find(|o| o.ty.name() == e.ty.name()) {
            let id = |t: &Type| if t.get_basic_info().has_id() { t.get_basic_info().id().to_string() } else { "none".into() };
            return Err(conflict(
                &other.file,
                &e.file,
                e.ty.name(),
                format!("two columns of this name with different field ids ({} and {})", id(&other.ty), id(&e.ty)),
            ));
        }
    }
    Ok(fields.into_iter().map(|e| e.ty).collect())
}

/// Sibling fields of one input share no name, at any depth: a reader resolves columns by name.
fn distinct_names(path: &Path, prefix: &str, fields: &[TypePtr]) -> Result<()> {
    for (i, f) in fields.iter().enumerate() {
        let name = if prefix.is_empty() { f.name().to_string() } else { format!("{prefix}.{}", f.name()) };
        if fields[..i].iter().any(|o| o.name() == f.name()) {
            return Err(conflict(path, path, &name, "two fields of one group in this file have this name".into()));
        }
        if let Type::GroupType { fields: children, .. } = f.as_ref() {
            distinct_names(path, &name, children)?;
        }
    }
    Ok(())
}

/// Top-level field ids of one input are distinct: columns of different inputs are matched by id.
fn distinct_ids(path: &Path, fields: &[TypePtr]) -> Result<()> {
    for (i, f) in fields.iter().enumerate() {
        let info = f.get_basic_info();
        if info.has_id() && fields[..i].iter().any(|o| o.get_basic_info().has_id() && o.get_basic_info().id() == info.id()) {
            return Err(conflict(path, path, f.name(), format!("field id {} is also another column's in this file", info.id())));
        }
    }
    Ok(())
}

fn conflict(first: &Path, second: &Path, column: &str, msg: String) -> CompactError {
    CompactError::SchemaConflict {
        first: first.display().to_string(),
        second: second.display().to_string(),
        column: column.to_string(),
        msg,
    }
}

fn is_plain_integer(t: &Type) -> bool {
    match t.get_basic_info().logical_type_ref() {
        None => true,
        Some(LogicalType::Integer(i)) => i.is_signed,
        _ => false,
    }
}

/// `a` (newer) and `b` (older) as one field: equal, or `b` widens into `a`.
fn merge(a: &Type, b: &Type) -> std::result::Result<Type, String> {
    let optional = a.get_basic_info().repetition() == Repetition::OPTIONAL || b.get_basic_info().repetition() == Repetition::OPTIONAL;
    let describe = |t: &Type| super::plan::describe(t);
    match (a, b) {
        (Type::PrimitiveType { physical_type: pa, .. }, Type::PrimitiveType { physical_type: pb, .. }) => {
            let same_kind = || {
                a.get_basic_info().logical_type_ref() == b.get_basic_info().logical_type_ref()
                    && a.get_basic_info().converted_type() == b.get_basic_info().converted_type()
            };
            // Whichever side is wider wins (manifest order need not be schema order).
            let wider = match (pa, pb) {
                _ if pa == pb && same_kind() => Some(a),
                (PhysicalType::INT64, PhysicalType::INT32) if is_plain_integer(a) && is_plain_integer(b) => Some(a),
                (PhysicalType::INT32, PhysicalType::INT64) if is_plain_integer(a) && is_plain_integer(b) => Some(b),
                (PhysicalType::DOUBLE, PhysicalType::FLOAT) => Some(a),
                (PhysicalType::FLOAT, PhysicalType::DOUBLE) => Some(b),
                _ => None,
            };
            match wider {
                Some(t) => rebuild(t, optional),
                None => Err(format!("{} vs {}", describe(a), describe(b))),
            }
        }
        (Type::GroupType { fields: fa, .. }, Type::GroupType { fields: fb, .. }) => {
            if fa != fb || a.get_basic_info().logical_type_ref() != b.get_basic_info().logical_type_ref() {
                return Err(format!("{} vs {}", describe(a), describe(b)));
            }
            rebuild(a, optional)
        }
        _ => Err(format!("{} vs {}", describe(a), describe(b))),
    }
}

/// `t`, made optional when `optional`.
fn rebuild(t: &Type, optional: bool) -> std::result::Result<Type, String> {
    let info = t.get_basic_info();
    if !optional || info.repetition() == Repetition::OPTIONAL {
        return Ok(t.clone());
    }
    let id = info.has_id().then(|| info.id());
    let built = match t {
        Type::PrimitiveType { physical_type, type_length, scale, precision, .. } => Type::primitive_type_builder(t.name(), *physical_type)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(info.logical_type_ref().cloned())
            .with_converted_type(info.converted_type())
            .with_length(*type_length)
            .with_scale(*scale)
            .with_precision(*precision)
            .with_id(id)
            .build(),
        Type::GroupType { fields, .. } => Type::group_type_builder(t.name())
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(info.logical_type_ref().cloned())
            .with_converted_type(info.converted_type())
            .with_fields(fields.clone())
            .with_id(id)
            .build(),
    };
    built.map_err(|e| e.to_string())
}

/// The same column in a wider type as schema evolution allows (int → long, float → double),
/// or unchanged; `None` for any other pair.
pub(crate) fn widen_array(a: &ArrayRef, to: &DataType) -> Option<ArrayRef> {
    Some(match (a.data_type(), to) {
        (from, to) if from == to => a.clone(),
        (DataType::Int32, DataType::Int64) => {
            Arc::new(Int64Array::from_iter(a.as_primitive::<Int32Type>().iter().map(|v| v.map(i64::from))))
        }
        (DataType::Float32, DataType::Float64) => {
            Arc::new(Float64Array::from_iter(a.as_primitive::<Float32Type>().iter().map(|v| v.map(f64::from))))
        }
        _ => return None,
    })
}

/// The index of the top-level column `column` that option `option` names, or an
/// `ERR_INVALID_OPTIONS` error saying the inputs do not have it.
pub fn option_column(schema: &arrow_schema::Schema, option: &str, column: &str) -> Result<usize> {
    schema
        .index_of(column)
        .map_err(|_| CompactError::InvalidOptions(format!("'{option}' names column '{column}', which the inputs do not have")))
}
