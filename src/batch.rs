//! Batch: one batch of rows on its way through the pipeline, with what it accounts for — its
//! decoded bytes (what batch sizes and row groups are cut on), the share of the inputs' bytes
//! it came from (what the writer sizes files by), the rows equality deletes dropped from it,
//! its rows' input positions when asked for, and its reservation of the call's memory.
//!
//! Memory: the batch's own arrays, held by its `Reservation` (`budget::held_bytes`).

use crate::budget::held_bytes;
use crate::memory::{Accountant, Reservation};
use arrow_array::RecordBatch;

/// One decoded batch and what it accounts for.
pub struct Batch {
    pub batch: RecordBatch,
    /// Decoded (Arrow) bytes of the batch's rows.
    pub decoded_bytes: usize,
    /// The share of the input's compressed bytes these rows came from.
    pub input_bytes: f64,
    /// Rows of this batch's row group the table deleted by equality deletes (counted among
    /// the selected tuple's rows).
    pub deleted: u64,
    /// Each row's position in its input, when `RowFilters::positions` asked for them.
    pub positions: Vec<u64>,
    /// The call's accounting of the memory the batch holds (`held_bytes`).
    pub memory: Reservation,
}

impl Batch {
    /// The batch holding only `kept` (rows of this batch): its decoded bytes scaled to them.
    /// Its input bytes stay: the writer measures output per input byte read, and the rows a
    /// later stage drops (dedupe, divert) were read all the same.
    pub fn retain(self, kept: RecordBatch) -> Batch {
        let decoded_bytes = self.share_of(kept.num_rows());
        let mut memory = self.memory;
        memory.resize(held_bytes(&kept));
        Batch { batch: kept, decoded_bytes, memory, ..self }
    }

    /// A batch made by a stage (a merge, a sort), accounted with `accountant`.
    pub fn made(batch: RecordBatch, decoded_bytes: usize, input_bytes: f64, deleted: u64, accountant: &Accountant) -> Batch {
        let memory = accountant.hold(held_bytes(&batch));
        Batch { batch, decoded_bytes, input_bytes, deleted, positions: Vec::new(), memory }
    }

    /// The decoded bytes of `rows` of this batch's rows, by its average.
    pub fn share_of(&self, rows: usize) -> usize {
        self.decoded_bytes.saturating_mul(rows) / self.batch.num_rows().max(1)
    }
}
