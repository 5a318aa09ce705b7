//! Divert: rows whose column — or the value at an object path inside a VARIANT or JSON-string
//! column — equals a given value are written to one side Parquet file instead of the data
//! files, so the host can run its own row logic on those few rows and append them itself.
//! It runs after deletes and before dedupe: diverted rows neither drop nor are dropped by
//! dedupe. The side file has the data files' schema and codec, is written under a `.tmp` name
//! and published with the outputs, and is removed with them on any failure.
//!
//! Memory: the side file's open row group, closed at `batchRows` rows / `batchBytes` decoded
//! bytes like the data files'; one matched value at a time.

use crate::batch::Batch;
use crate::dirs::{sync_dir, CreatedDirs};
use crate::encode::ColumnWriter;
use crate::error::{CompactError, Result};
use crate::options::{DivertSpec, Options};
use crate::plan::Plan;
use crate::transaction::Transaction;
use crate::write::{open_writer, write_error};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::DataType;
use parquet::file::properties::WriterProperties;
use parquet_variant::Variant;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// A VARIANT group (decoded as a struct of `metadata` and `value` binaries).
    Variant,
    /// A string column holding JSON, looked into at `path`.
    Json,
    /// The column's own value.
    Plain,
}

pub struct Diverter<'a> {
    plan: &'a Plan,
    opts: &'a Options,
    spec: DivertSpec,
    column: usize,
    kind: Kind,
    props: WriterProperties,
    tmp: PathBuf,
    writer: Option<ColumnWriter>,
    rg_bytes: usize,
    created_dirs: CreatedDirs,
    /// The side file (and its final name), removed unless the call commits.
    tx: Transaction,
    /// Rows written to the side file.
    pub rows: u64,
}

impl<'a> Diverter<'a> {
    /// Checks the spec against the inputs' schema and that `to` does not exist yet.
    /// `props`: the data files' writer settings.
    pub fn new(plan: &'a Plan, opts: &'a Options, spec: &DivertSpec, props: WriterProperties) -> Result<Self> {
        let invalid = |msg: String| CompactError::InvalidOptions(format!("'divert': {msg}"));
        let column = crate::unify::option_column(&plan.arrow_schema, "divert", &spec.column)?;
        let dt = plan.arrow_schema.field(column).data_type();
        let kind = match dt {
            DataType::Struct(fields)
                if fields.len() == 2
                    && fields.iter().all(|f| f.data_type() == &DataType::LargeBinary)
                    && fields.find("metadata").is_some()
                    && fields.find("value").is_some() =>
            {
                Kind::Variant
            }
            DataType::LargeUtf8 | DataType::Utf8 if !spec.path.is_empty() => Kind::Json,
            _ if !spec.path.is_empty() => {
                return Err(invalid(format!("'path' needs a VARIANT or JSON-string column; '{}' is {dt}", spec.column)))
            }
            DataType::LargeUtf8 | DataType::Utf8 | DataType::Boolean => Kind::Plain,
            d if d.is_numeric() => Kind::Plain,
            _ => return Err(invalid(format!("column '{}' of type {dt} cannot be compared with a JSON value", spec.column))),
        };
        if spec.to.exists() {
            return Err(CompactError::io_msg(&spec.to, "divert target already exists"));
        }
        let mut tmp = spec.to.clone().into_os_string();
        tmp.push(".tmp");
        Ok(Diverter {
            plan,
            opts,
            spec: spec.clone(),
            column,
            kind,
            props,
            tmp: PathBuf::from(tmp),
            writer: None,
            rg_bytes: 0,
            created_dirs: CreatedDirs::default(),
            tx: Transaction::default(),
            rows: 0,
        })
    }

    /// Writes the matching rows of `batch` to the side file and returns the others.
    pub fn split(&mut self, batch: Batch) -> Result<Batch> {
        let matches = self.matches(batch.batch.column(self.column));
        let hits = matches.iter().filter(|m| **m).count();
        if hits == 0 {
            return Ok(batch);
        }
        let mask: BooleanArray = matches.iter().map(|m| Some(*m)).collect();
        let diverted =
            arrow_select::filter::filter_record_batch(&batch.batch, &mask).map_err(|e| CompactError::Internal(format!("divert: {e}")))?;
        let keep: BooleanArray = matches.iter().map(|m| Some(!*m)).collect();
        let kept =
            arrow_select::filter::filter_record_batch(&batch.batch, &keep).map_err(|e| CompactError::Internal(format!("divert: {e}")))?;
        self.write(&diverted, batch.share_of(hits))?;
        Ok(batch.retain(kept))
    }

    fn write(&mut self, rows: &RecordBatch, decoded_bytes: usize) -> Result<()> {
        if self.writer.is_none() {
            if let Some(parent) = self.spec.to.parent().filter(|p| !p.as_os_str().is_empty()) {
                self.created_dirs = CreatedDirs::create(parent, "divert.to's directory")?;
            }
            let file = self.tx.create(&self.tmp, true)?;
            self.writer = Some(open_writer(file, self.plan, self.props.clone(), &self.tmp, 1)?);
        }
        let Some(w) = self.writer.as_mut() else { return Ok(()) };
        if self.rg_bytes > 0 && self.rg_bytes.saturating_add(decoded_bytes) > self.opts.batch_bytes {
            w.flush().map_err(|e| write_error(&self.tmp, e))?;
            self.rg_bytes = 0;
        }
        w.write(rows).map_err(|e| write_error(&self.tmp, e))?;
        self.rg_bytes += decoded_bytes;
        if w.in_progress_rows() >= self.opts.batch_rows {
            w.flush().map_err(|e| write_error(&self.tmp, e))?;
            self.rg_bytes = 0;
        }
        self.rows += rows.num_rows() as u64;
        Ok(())
    }

    /// Closes the side file (when any row matched) and checks its row count.
    pub fn finish(&mut self) -> Result<()> {
        let Some(mut w) = self.writer.take() else { return Ok(()) };
        let meta = w.finish().map_err(|e| write_error(&self.tmp, e))?;
        w.inner().sync_all().map_err(|e| CompactError::io(&self.tmp, &e))?;
        let written: i64 = meta.row_groups().iter().map(|rg| rg.num_rows()).sum();
        if written != self.rows as i64 {
            return Err(CompactError::VerifyFailed {
                path: self.tmp.display().to_string(),
                msg: format!("side file holds {written} rows, {} were diverted", self.rows),
            });
        }
        Ok(())
    }

    /// Gives the side file its final name (never replacing a file).
    pub fn publish(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let to = &self.spec.to;
        self.tx.link(&self.tmp, to)?;
        self.tx.remove_tmp(&self.tmp)?;
        sync_dir(to.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))
    }

    /// The published side file, if any row matched.
    pub fn path(&self) -> &Path {
        &self.spec.to
    }

    pub fn commit(mut self) {
        self.tx.commit();
    }

    /// Which rows of `batch` (all columns, or at least the divert column) match.
    pub fn matches_in(&self, batch: &RecordBatch) -> Vec<bool> {
        match batch.column_by_name(&self.spec.column) {
            Some(column) => self.matches(column),
            None => vec![false; batch.num_rows()],
        }
    }

    /// The divert column's index in the plan's schema.
    pub fn column(&self) -> usize {
        self.column
    }

    /// Which values of `column` match.
    fn matches(&self, column: &ArrayRef) -> Vec<bool> {
        let n = column.len();
        let equals = &self.spec.equals;
        let needle = match equals {
            Value::String(s) if s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ' ')) => Some(s.as_bytes()),
            _ => None,
        };
        let contains = |hay: &[u8]| needle.is_none_or(|nd| nd.is_empty() || hay.windows(nd.len()).any(|w| w == nd));
        match self.kind {
            Kind::Variant => {
                let s = column.as_struct();
                let (Some(meta), Some(value)) = (s.column_by_name("metadata"), s.column_by_name("value")) else { return vec![false; n] };
                let (meta, value) = (meta.as_binary::<i64>(), value.as_binary::<i64>());
                (0..n)
                    .map(|i| {
                        if s.is_null(i) || meta.is_null(i) || value.is_null(i) || !contains(value.value(i)) {
                            return false;
                        }
                        let Ok(mut v) = Variant::try_new(meta.value(i), value.value(i)) else { return false };
                        for key in &self.spec.path {
                            match v.get_object_field(key) {
                                Some(inner) => v = inner,
                                None => return false,
                            }
                        }
                        variant_equals(&v, equals)
                    })
                    .collect()
            }
            Kind::Json => {
                let texts: Vec<Option<&str>> = match column.data_type() {
                    DataType::LargeUtf8 => column.as_string::<i64>().iter().collect(),
                    _ => column.as_string::<i32>().iter().collect(),
                };
                texts
                    .into_iter()
                    .map(|text| {
                        // (A JSON text with escapes may spell the value differently: parse it.)
                        let Some(text) = text.filter(|t| t.contains('\\') || contains(t.as_bytes())) else { return false };
                        let Ok(mut v) = serde_json::from_str::<Value>(text) else { return false };
                        for key in &self.spec.path {
                            match v.get_mut(key.as_str()).map(Value::take) {
                                Some(inner) => v = inner,
                                None => return false,
                            }
                        }
                        json_equals(&v, equals)
                    })
                    .collect()
            }
            Kind::Plain => plain_matches(column, equals),
        }
    }
}

impl Drop for Diverter<'_> {
    fn drop(&mut self) {
        // (the open writer first, then its files, then the directories they were in)
        drop(self.writer.take());
        self.tx.roll_back();
        if !self.tx.committed() {
            self.created_dirs.remove_empty();
        }
    }
}

fn json_equals(v: &Value, equals: &Value) -> bool {
    match (v, equals) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

fn variant_equals(v: &Variant, equals: &Value) -> bool {
    match equals {
        Value::String(s) => v.as_string() == Some(s.as_str()),
        Value::Bool(b) => v.as_boolean() == Some(*b),
        Value::Number(n) => {
            let x = match v {
                Variant::Float(f) => Some(f64::from(*f)),
                Variant::Double(d) => Some(*d),
                other => other.as_int64().map(|i| i as f64),
            };
            x.is_some() && x == n.as_f64()
        }
        _ => false,
    }
}

fn plain_matches(column: &ArrayRef, equals: &Value) -> Vec<bool> {
    use arrow_array::types::*;
    let n = column.len();
    let valid = |i: usize| column.is_valid(i);
    macro_rules! numbers {
        ($t:ty) => {{
            let a = column.as_primitive::<$t>();
            let want = equals.as_f64();
            (0..n).map(|i| valid(i) && want.is_some() && Some(a.value(i) as f64) == want).collect()
        }};
    }
    match column.data_type() {
        DataType::LargeUtf8 => {
            let a = column.as_string::<i64>();
            (0..n).map(|i| valid(i) && equals.as_str() == Some(a.value(i))).collect()
        }
        DataType::Utf8 => {
            let a = column.as_string::<i32>();
            (0..n).map(|i| valid(i) && equals.as_str() == Some(a.value(i))).collect()
        }
        DataType::Boolean => {
            let a = column.as_boolean();
            (0..n).map(|i| valid(i) && equals.as_bool() == Some(a.value(i))).collect()
        }
        DataType::Int8 => numbers!(Int8Type),
        DataType::Int16 => numbers!(Int16Type),
        DataType::Int32 => numbers!(Int32Type),
        DataType::Int64 => numbers!(Int64Type),
        DataType::UInt8 => numbers!(UInt8Type),
        DataType::UInt16 => numbers!(UInt16Type),
        DataType::UInt32 => numbers!(UInt32Type),
        DataType::UInt64 => numbers!(UInt64Type),
        DataType::Float32 => numbers!(Float32Type),
        DataType::Float64 => numbers!(Float64Type),
        _ => vec![false; n],
    }
}
