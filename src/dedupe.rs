//! Dedupe: drop every row whose `dedupeBy` value was already seen earlier in the call — in
//! `files` order, then row order — so the first occurrence survives, exactly as the JS loop
//! did. A null key is never equal to anything (SQL `UNIQUE` semantics, and the host's rule):
//! every null-key row is kept and none is recorded. It runs as rows are read, before anything
//! could reorder them.
//!
//! Memory: a 128-bit hash per distinct key (plus hash-set overhead), never the row width; the
//! key column of one batch is row-encoded (`arrow-row`) transiently.

use crate::error::{CompactError, Result};
use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::Schema;
use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::hash::BuildHasher;

pub struct Deduper {
    /// The key column's name (batches may hold only some columns).
    name: String,
    converter: RowConverter,
    seen: HashSet<u128>,
    keys: (RandomState, RandomState),
    pub dropped: u64,
}

impl Deduper {
    /// `name` must be a top-level column of `schema`.
    pub fn new(schema: &Schema, name: &str) -> Result<Self> {
        let column = crate::unify::option_column(schema, "dedupeBy", name)?;
        let field = schema.field(column);
        let converter = RowConverter::new(vec![SortField::new(field.data_type().clone())]).map_err(|e| {
            CompactError::InvalidOptions(format!("'dedupeBy' column '{name}' of type {} cannot be compared: {e}", field.data_type()))
        })?;
        Ok(Deduper { name: name.to_string(), converter, seen: HashSet::new(), keys: (RandomState::new(), RandomState::new()), dropped: 0 })
    }

    /// The rows of `batch` whose key was not seen before, and records their keys.
    pub fn filter(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        let keep = self.first_occurrences(&batch)?;
        let dropped = keep.iter().filter(|k| !**k).count();
        if dropped == 0 {
            return Ok(batch);
        }
        self.dropped += dropped as u64;
        arrow_select::filter::filter_record_batch(&batch, &BooleanArray::from(keep))
            .map_err(|e| CompactError::Internal(format!("dropping duplicate rows: {e}")))
    }

    /// Per row of `batch`: is it the first occurrence of its key (or a null key)? Records the
    /// keys; counts nothing.
    pub fn first_occurrences(&mut self, batch: &RecordBatch) -> Result<Vec<bool>> {
        let keys =
            batch.column_by_name(&self.name).ok_or_else(|| CompactError::Internal(format!("dedupe column '{}' not decoded", self.name)))?;
        let rows = self
            .converter
            .convert_columns(std::slice::from_ref(keys))
            .map_err(|e| CompactError::Internal(format!("encoding dedupe keys: {e}")))?;
        let mut keep = Vec::with_capacity(batch.num_rows());
        for (i, row) in rows.iter().enumerate() {
            if keys.is_null(i) {
                keep.push(true);
                continue;
            }
            let bytes = row.as_ref();
            let hash = (u128::from(self.keys.0.hash_one(bytes)) << 64) | u128::from(self.keys.1.hash_one(bytes));
            keep.push(self.seen.insert(hash));
        }
        Ok(keep)
    }

    pub fn column_name(&self) -> &str {
        &self.name
    }

    /// Distinct keys held.
    pub fn distinct(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int32Array, LargeStringArray};
    use arrow_schema::{DataType, Field};
    use std::sync::Arc;

    #[test]
    fn keeps_first_occurrences_across_batches() {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::LargeUtf8, true), Field::new("n", DataType::Int32, false)]));
        let batch = |ids: Vec<Option<&str>>, start: i32| {
            let n = ids.len() as i32;
            let cols: Vec<ArrayRef> = vec![Arc::new(LargeStringArray::from(ids)), Arc::new(Int32Array::from_iter_values(start..start + n))];
            RecordBatch::try_new(schema.clone(), cols).unwrap()
        };
        let mut d = Deduper::new(&schema, "id").unwrap();
        let a = d.filter(batch(vec![Some("a"), Some("b"), Some("a"), None], 0)).unwrap();
        let b = d.filter(batch(vec![Some("b"), Some("c"), None, Some("c")], 10)).unwrap();
        let ns = |r: &RecordBatch| r.column(1).as_any().downcast_ref::<Int32Array>().unwrap().values().to_vec();
        // Null keys are never duplicates: both null rows survive.
        assert_eq!(ns(&a), vec![0, 1, 3]);
        assert_eq!(ns(&b), vec![11, 12]);
        assert_eq!(d.dropped, 3);
        assert_eq!(d.distinct(), 3);
        assert_eq!(Deduper::new(&schema, "nope").err().map(|e| e.code()), Some("ERR_INVALID_OPTIONS"));
    }
}
