//! Sort job: one sort buffer sorted (stably, by `sortBy`) and handed on in chunks — to a
//! spilled run (`spill`), or to the writer when the partition fits the buffer — on the thread
//! that takes it (`sort`'s spill thread, with `threads` > 1). The chunks share one dictionary
//! per dictionary column where that fits (`gather::share`); a buffer of squeezed fat values
//! (`squeeze`) is restored chunk by chunk.
//!
//! Memory: the buffer (as `sort` accounts it), its sort keys and order while it is sorted, the
//! dictionaries its chunks share, and one chunk.

use crate::budget::{decoded_size, held_bytes, held_bytes_together};
use crate::error::check_cancel;
use crate::error::{CompactError, Result};
use crate::gather::{interleave, share};
use crate::memory::Reservation;
use crate::options::SortKey;
use crate::order::key_converter;
use crate::spill::{Run, RunWriter};
use crate::squeeze::Squeeze;
use arrow_array::RecordBatch;
use arrow_row::{OwnedRow, Rows};
use arrow_schema::SchemaRef;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Chunks of a spilled run are this fraction of `batchBytes`.
pub(crate) const CHUNK_SHARE: usize = 128;
/// The dictionaries one sort buffer's batches share (`gather::share`) hold at most this
/// fraction of `batchBytes`: a spilled run's reader holds them beside its chunk.
const SHARED_DICTIONARY_SHARE: usize = 16;

/// One sort buffer, sorted and handed on in chunks: to a spill run or to the writer.
pub(crate) struct SortJob {
    pub(crate) buffer: Vec<RecordBatch>,
    /// The call's accounting of the buffer (and of what sorting it makes).
    pub(crate) memory: Reservation,
    pub(crate) writer: Option<RunWriter>,
    pub(crate) schema: SchemaRef,
    pub(crate) sort_keys: Vec<SortKey>,
    pub(crate) budget: usize,
    pub(crate) squeeze: Option<Arc<Squeeze>>,
}

impl SortJob {
    /// Sorts the buffer into its spill run.
    pub(crate) fn spill(mut self) -> Result<Run> {
        let Some(mut writer) = self.writer.take() else { return Err(CompactError::Internal("spill job without a run file".into())) };
        let chunk_bytes = self.budget / CHUNK_SHARE;
        let (shared, key_range) = self.emit_sorted(chunk_bytes, usize::MAX, None, |b, bytes| writer.write(&b, bytes))?;
        writer.dictionary_bytes = shared;
        writer.key_range = key_range;
        writer.finish()
    }

    /// Sorts the buffer (stably) and hands it to `out` in chunks of about `chunk_bytes`
    /// decoded bytes and at most `chunk_rows` rows. The chunks share one dictionary per
    /// dictionary column where that fits (`gather::share`); returns those dictionaries' bytes
    /// and the sort keys of the first and last rows.
    pub(crate) fn emit_sorted(
        mut self,
        chunk_bytes: usize,
        chunk_rows: usize,
        cancel: Option<&AtomicBool>,
        mut out: impl FnMut(RecordBatch, usize) -> Result<()>,
    ) -> Result<(usize, Option<(OwnedRow, OwnedRow)>)> {
        let buffer = std::mem::take(&mut self.buffer);
        if buffer.is_empty() {
            return Ok((0, None));
        }
        // (a converter of its own: the job may run on the spill thread)
        let (key_columns, converter) = key_converter(&self.schema, &self.sort_keys)?;
        let keys: Vec<Rows> = buffer
            .iter()
            .map(|b| {
                let columns: Vec<_> = key_columns.iter().map(|(i, _)| b.column(*i).clone()).collect();
                converter.convert_columns(&columns).map_err(|e| CompactError::Internal(format!("encoding sort keys: {e}")))
            })
            .collect::<Result<_>>()?;
        // (sizes as decoded: each batch with its own dictionaries, as the buffer was counted)
        // (as restored: chunks leave restored, `squeeze`)
        let growth = |b: &RecordBatch| self.squeeze.as_ref().map_or(0, |s| s.growth(b));
        let per_row: Vec<f64> = buffer.iter().map(|b| (decoded_size(b) + growth(b)) as f64 / b.num_rows().max(1) as f64).collect();
        let mut order: Vec<(usize, usize)> = buffer.iter().enumerate().flat_map(|(i, b)| (0..b.num_rows()).map(move |r| (i, r))).collect();
        order.sort_by(|a, b| keys[a.0].row(a.1).cmp(&keys[b.0].row(b.1)));
        let key = |&(b, r): &(usize, usize)| keys[b].row(r).owned();
        let key_range = order.first().map(key).zip(order.last().map(key));
        drop(keys);
        let (shared_buffer, shared) = share(&buffer, self.budget / SHARED_DICTIONARY_SHARE)?;
        let accountant = self.memory.accountant().clone();
        let mut buffer_memory = accountant.hold(held_bytes_together(&shared_buffer));
        drop(buffer);
        std::mem::swap(&mut self.memory, &mut buffer_memory);
        drop(buffer_memory);
        let buffer = shared_buffer;
        let refs: Vec<&RecordBatch> = buffer.iter().collect();
        let mut start = 0;
        while start < order.len() {
            if let Some(c) = cancel {
                check_cancel(c)?;
            }
            let mut end = start;
            let mut bytes = 0.0;
            while end < order.len() && end - start < chunk_rows && (end == start || bytes + per_row[order[end].0] <= chunk_bytes as f64) {
                bytes += per_row[order[end].0];
                end += 1;
            }
            let mut chunk = interleave(&refs, &order[start..end])?;
            if let Some(s) = &self.squeeze {
                chunk = s.unsqueeze(&chunk)?;
            }
            let _chunk_memory = accountant.hold(held_bytes(&chunk));
            out(chunk, bytes as usize)?;
            start = end;
        }
        Ok((shared, key_range))
    }
}
