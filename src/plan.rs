//! Plan: open every input read-only, parse its footer, check that all inputs share one
//! Parquet schema, and sum what the later stages need (rows, bytes, per-column encodings,
//! key-value metadata). Footers are dropped after planning; only a small summary per input
//! is kept, so memory grows with the number of inputs by a few dozen bytes each, not by
//! their metadata.

use crate::error::{CompactError, Result};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::metadata::{KeyValue, ParquetMetaData};
use parquet::schema::types::{SchemaDescriptor, Type};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the plan keeps of one input.
#[derive(Debug, Clone)]
pub struct InputSummary {
    pub path: PathBuf,
    pub rows: u64,
    /// Compressed bytes of the row groups' column chunks (what the file holds of data).
    pub data_bytes: u64,
    pub file_bytes: u64,
    pub row_groups: usize,
}

#[derive(Debug)]
pub struct Plan {
    pub inputs: Vec<InputSummary>,
    /// The Parquet schema every input shares; outputs are written through it.
    pub parquet_schema: Arc<SchemaDescriptor>,
    /// The Arrow schema batches are decoded into (byte arrays with 64-bit offsets).
    pub arrow_schema: SchemaRef,
    /// Key-value metadata of the inputs, the later file's value winning per key.
    pub key_value: Vec<KeyValue>,
    /// Per leaf column: did any input dictionary-encode it?
    pub dictionary_leaves: Vec<bool>,
    /// Per leaf column: may any input hold a null in it (statistics say so, or are missing)?
    pub nullable_leaves: Vec<bool>,
    pub total_rows: u64,
    pub total_data_bytes: u64,
    pub total_file_bytes: u64,
}

/// Reader options shared by plan and read: ignore an embedded Arrow schema so the decoded
/// types depend on the Parquet schema alone; page indexes are not needed to read whole
/// row groups.
pub fn base_reader_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new().with_skip_arrow_metadata(true)
}

pub fn open_input(path: &Path) -> Result<File> {
    let file = File::open(path).map_err(|e| CompactError::input_open(path, &e))?;
    match file.metadata() {
        Ok(m) if m.is_dir() => Err(CompactError::corrupt(path, None, "is a directory, not a Parquet file")),
        Ok(_) => Ok(file),
        Err(e) => Err(CompactError::input_open(path, &e)),
    }
}

/// Reads an input's footer and the Arrow schema derived from it.
pub fn load_metadata(path: &Path, file: &File, hint: Option<SchemaRef>) -> Result<ArrowReaderMetadata> {
    let mut options = base_reader_options();
    if let Some(schema) = hint {
        options = options.with_schema(schema);
    }
    ArrowReaderMetadata::load(file, options).map_err(|e| CompactError::corrupt(path, None, e))
}

pub fn build_plan(files: &[String]) -> Result<Plan> {
    if files.is_empty() {
        return Err(CompactError::InvalidOptions("'files' must name at least one input file".into()));
    }
    let mut inputs = Vec::with_capacity(files.len());
    let mut first: Option<(PathBuf, Arc<SchemaDescriptor>, SchemaRef)> = None;
    let mut key_value: Vec<KeyValue> = Vec::new();
    let mut dictionary_leaves: Vec<bool> = Vec::new();
    let mut nullable_leaves: Vec<bool> = Vec::new();
    for name in files {
        let path = PathBuf::from(name);
        let file = open_input(&path)?;
        let file_bytes = file.metadata().map_err(|e| CompactError::input_open(&path, &e))?.len();
        let meta = load_metadata(&path, &file, None)?;
        let pq = meta.metadata();
        let descr = pq.file_metadata().schema_descr_ptr();
        match &first {
            None => {
                dictionary_leaves = vec![false; descr.num_columns()];
                nullable_leaves = vec![false; descr.num_columns()];
                let arrow = Arc::new(wide_offsets_schema(meta.schema()));
                first = Some((path.clone(), descr.clone(), arrow));
            }
            Some((first_path, first_descr, _)) => check_same_schema(first_path, first_descr, &path, &descr)?,
        }
        let summary = summarize(&path, pq, file_bytes, &mut dictionary_leaves, &mut nullable_leaves)?;
        merge_key_value(&mut key_value, pq.file_metadata().key_value_metadata());
        inputs.push(summary);
    }
    let (_, parquet_schema, arrow_schema) = first.ok_or_else(|| CompactError::Internal("no inputs".into()))?;
    let total_rows = inputs.iter().map(|i| i.rows).sum();
    let total_data_bytes = inputs.iter().map(|i| i.data_bytes).sum();
    let total_file_bytes = inputs.iter().map(|i| i.file_bytes).sum();
    Ok(Plan { inputs, parquet_schema, arrow_schema, key_value, dictionary_leaves, nullable_leaves, total_rows, total_data_bytes, total_file_bytes })
}

fn summarize(path: &Path, pq: &ParquetMetaData, file_bytes: u64, dict: &mut [bool], nullable: &mut [bool]) -> Result<InputSummary> {
    let mut rows: u64 = 0;
    let mut data_bytes: u64 = 0;
    for rg in pq.row_groups() {
        let n = u64::try_from(rg.num_rows()).map_err(|_| CompactError::corrupt(path, None, "negative row count"))?;
        rows = rows.saturating_add(n);
        data_bytes = data_bytes.saturating_add(u64::try_from(rg.compressed_size()).unwrap_or(0));
        for (i, col) in rg.columns().iter().enumerate() {
            if col.dictionary_page_offset().is_some() {
                if let Some(flag) = dict.get_mut(i) {
                    *flag = true;
                }
            }
            if col.statistics().and_then(|s| s.null_count_opt()) != Some(0) {
                if let Some(flag) = nullable.get_mut(i) {
                    *flag = true;
                }
            }
        }
    }
    Ok(InputSummary { path: path.to_path_buf(), rows, data_bytes, file_bytes, row_groups: pq.num_row_groups() })
}

fn merge_key_value(into: &mut Vec<KeyValue>, from: Option<&Vec<KeyValue>>) {
    for kv in from.into_iter().flatten() {
        match into.iter_mut().find(|e| e.key == kv.key) {
            Some(existing) => existing.value = kv.value.clone(),
            None => into.push(kv.clone()),
        }
    }
}

/// Inputs must share one Parquet schema (field ids, logical types, repetition). Names the
/// first top-level column that differs.
fn check_same_schema(a_path: &Path, a: &SchemaDescriptor, b_path: &Path, b: &SchemaDescriptor) -> Result<()> {
    let (ra, rb) = (a.root_schema(), b.root_schema());
    if ra.get_fields() == rb.get_fields() {
        return Ok(());
    }
    let conflict = |column: &str, msg: String| CompactError::SchemaConflict {
        first: a_path.display().to_string(),
        second: b_path.display().to_string(),
        column: column.to_string(),
        msg,
    };
    let (fa, fb) = (ra.get_fields(), rb.get_fields());
    for field in fa {
        match fb.iter().find(|f| f.name() == field.name()) {
            None => return Err(conflict(field.name(), "column missing in the second file".into())),
            Some(other) if other != field => {
                return Err(conflict(field.name(), format!("{} vs {}", describe(field), describe(other))))
            }
            Some(_) => {}
        }
    }
    for field in fb {
        if !fa.iter().any(|f| f.name() == field.name()) {
            return Err(conflict(field.name(), "column missing in the first file".into()));
        }
    }
    let order = |fs: &[Arc<Type>]| fs.iter().map(|f| f.name().to_string()).collect::<Vec<_>>().join(", ");
    let column = fa.first().map(|f| f.name().to_string()).unwrap_or_default();
    Err(conflict(&column, format!("column order differs: [{}] vs [{}]", order(fa), order(fb))))
}

/// A one-line description of a column's type, cut to a readable length.
fn describe(t: &Type) -> String {
    const MAX: usize = 240;
    let mut out = Vec::new();
    let _ = parquet::schema::printer::print_schema(&mut out, t);
    let line = String::from_utf8_lossy(&out).split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The decode schema: like the inferred one but with 64-bit offsets for strings and binaries,
/// so no batch can overflow 32-bit offsets however fat its values are.
pub fn wide_offsets_schema(schema: &Schema) -> Schema {
    let fields: Fields = schema.fields().iter().map(|f| Arc::new(widen_field(f))).collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

fn widen_field(field: &Field) -> Field {
    field.clone().with_data_type(widen(field.data_type()))
}

fn widen(dt: &DataType) -> DataType {
    match dt {
        DataType::Utf8 => DataType::LargeUtf8,
        DataType::Binary => DataType::LargeBinary,
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(|f| Arc::new(widen_field(f))).collect()),
        DataType::List(f) => DataType::List(Arc::new(widen_field(f))),
        DataType::LargeList(f) => DataType::LargeList(Arc::new(widen_field(f))),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(Arc::new(widen_field(f)), *n),
        DataType::Map(f, sorted) => DataType::Map(Arc::new(widen_field(f)), *sorted),
        other => other.clone(),
    }
}
