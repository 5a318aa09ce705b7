//! K-way merge: rows of sorted runs, in key order, gathered into output batches — the one
//! merge behind both the merge of spilled runs (`sort`) and the merge straight from the inputs
//! (`merge`); they differ only in where a run's chunks come from (`RunSource`).
//!
//! A run is opened when the merge reaches its first key (a run whose first key is not known is
//! opened at the start) and dropped after its last row. Equal keys come from the earlier run
//! first, so a merge of runs in arrival order is stable.
//!
//! Memory: one chunk per open run (the sources bound it), the rows picked for the next output
//! batch and the chunks they come from: at most `out_bytes` of chunks retired since the last
//! batch, each cut when its rows hold `out_bytes`. With `Limits::measured` (runs whose chunks
//! share dictionaries the run sources hold, so that a row's own bytes say little about the
//! dictionary values a batch gathers from many runs) batches are measured instead: the first
//! is cut on its rows' expanded size, each next one gets as many rows as the last one's
//! measured size says fit in `out_bytes` (at most twice as many).

use crate::budget::decoded_size;
use crate::error::{check_cancel, CompactError, Result};
use crate::gather::interleave;
use crate::memory::Reservation;
use arrow_array::RecordBatch;
use arrow_row::{OwnedRow, Rows};
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;

/// One chunk of a run, with its sort keys and what its rows account for.
pub struct Chunk {
    pub batch: RecordBatch,
    pub keys: Rows,
    /// Bytes per row the chunk holds (its run's shared dictionaries not counted), and per row
    /// expanded (dictionaries as values).
    pub held_per_row: f64,
    pub expanded_per_row: f64,
    /// Input bytes per row, and rows deleted (by equality deletes) before this chunk's.
    pub input_per_row: f64,
    pub deleted: u64,
    /// The call's accounting of the chunk's memory: held while any of its rows may be picked.
    pub memory: Reservation,
}

/// Where a run's chunks come from.
pub trait RunSource {
    /// The run's next non-empty chunk; `None` at its end.
    fn next_chunk(&mut self) -> Result<Option<Chunk>>;

    /// Rows deleted after the run's last chunk (asked once `next_chunk` gave `None`).
    fn trailing_deleted(&mut self) -> u64 {
        0
    }
}

/// An output batch: its rows, their decoded size as measured, input bytes and rows deleted
/// among them.
pub struct Merged {
    pub batch: RecordBatch,
    pub decoded_bytes: usize,
    pub input_bytes: f64,
    pub deleted: u64,
}

/// The sizes of output batches.
pub struct Limits {
    pub batch_rows: usize,
    pub out_bytes: usize,
    /// Size batches by measuring them (see the module doc).
    pub measured: bool,
}

struct Cursor<S> {
    source: S,
    chunk: Chunk,
    pos: usize,
    /// Index of the chunk in the merge's `sources`.
    slot: usize,
}

/// The most runs open at once in a merge of runs with these key ranges (first key, last key,
/// and what the run holds while open): `merge` opens a run when it reaches its first key and
/// drops it after its last row, so a run that ends at a key is still open when another starts
/// there. Returns the most runs open together and the most they hold together.
pub fn most_open<'r>(ranges: impl IntoIterator<Item = (&'r OwnedRow, &'r OwnedRow, u64)>) -> (usize, u64) {
    let mut events: Vec<(&OwnedRow, u8, u64)> =
        ranges.into_iter().flat_map(|(first, last, held)| [(first, 0, held), (last, 1, held)]).collect();
    events.sort_by(|a, b| a.0.row().cmp(&b.0.row()).then(a.1.cmp(&b.1)));
    let (mut open, mut held, mut most, mut peak) = (0usize, 0u64, 0usize, 0u64);
    for (_, kind, bytes) in events {
        if kind == 0 {
            open += 1;
            held += bytes;
        } else {
            open = open.saturating_sub(1);
            held = held.saturating_sub(bytes);
        }
        most = most.max(open);
        peak = peak.max(held);
    }
    (most, peak)
}

/// Merges runs `0..firsts.len()` (`firsts[r]`: run r's first key, if known; `open(r)` opens
/// it) into `out`. Rows deleted after the last row was picked come as a final empty batch.
pub fn merge<S: RunSource>(
    firsts: &[Option<OwnedRow>],
    mut open: impl FnMut(usize) -> Result<S>,
    limits: Limits,
    empty: impl Fn() -> RecordBatch,
    cancel: &AtomicBool,
    mut out: impl FnMut(Merged) -> Result<()>,
) -> Result<()> {
    let (batch_rows, out_bytes) = (limits.batch_rows.max(1), limits.out_bytes.max(1) as f64);
    let mut cursors: Vec<Option<Cursor<S>>> = (0..firsts.len()).map(|_| None).collect();
    // Runs not yet opened: those without a first key at once, the others by first key (ties
    // in run order).
    let mut pending: Vec<usize> = (0..firsts.len()).collect();
    pending.sort_by(|&a, &b| match (&firsts[a], &firsts[b]) {
        (Some(x), Some(y)) => x.row().cmp(&y.row()).then(a.cmp(&b)),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (None, None) => a.cmp(&b),
    });
    let mut pending: VecDeque<usize> = pending.into();
    let less = |cursors: &[Option<Cursor<S>>], a: usize, b: usize| match (&cursors[a], &cursors[b]) {
        (Some(x), Some(y)) => match x.chunk.keys.row(x.pos).cmp(&y.chunk.keys.row(y.pos)) {
            Ordering::Equal => a < b,
            o => o == Ordering::Less,
        },
        _ => a < b,
    };
    let mut heap: Vec<usize> = Vec::new();
    // Chunks rows are picked from, in slots: every cursor's current chunk, plus chunks already
    // consumed whose rows wait in `picked` (their slots are freed once the batch is out, and a
    // cursor's chunk keeps its slot: no output batch costs work for every run open).
    let mut sources = Slots::default();
    let mut picked: Vec<(usize, usize)> = Vec::new();
    // The accounting of chunks consumed whose rows may still wait in `picked`.
    let mut retired_memory: Vec<Reservation> = Vec::new();
    let (mut held, mut expanded, mut input, mut retired, mut deleted) = (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0u64);
    let mut max_rows: Option<usize> = None;
    loop {
        check_cancel(cancel)?;
        // Open every run that starts at or before the smallest key: nothing in a run not yet
        // open can come before the row picked next.
        while let Some(&r) = pending.front() {
            let due = match (&firsts[r], heap.first().and_then(|&top| cursors[top].as_ref())) {
                (None, _) | (_, None) => true,
                (Some(first), Some(top)) => first.row() <= top.chunk.keys.row(top.pos),
            };
            if !due {
                break;
            }
            pending.pop_front();
            let mut source = open(r)?;
            match source.next_chunk()? {
                Some(chunk) => {
                    deleted += chunk.deleted;
                    let slot = sources.put(chunk.batch.clone());
                    cursors[r] = Some(Cursor { source, chunk, pos: 0, slot });
                    heap.push(r);
                    sift_up(&mut heap, |a, b| less(&cursors, a, b));
                }
                None => deleted += source.trailing_deleted(),
            }
        }
        let Some(&top) = heap.first() else { break };
        let Some(c) = cursors[top].as_mut() else { return Err(CompactError::Internal("merge cursor missing".into())) };
        picked.push((c.slot, c.pos));
        held += c.chunk.held_per_row;
        expanded += c.chunk.expanded_per_row;
        input += c.chunk.input_per_row;
        c.pos += 1;
        if c.pos == c.chunk.batch.num_rows() {
            retired += c.chunk.held_per_row * c.chunk.batch.num_rows() as f64;
            match c.source.next_chunk()? {
                Some(chunk) => {
                    deleted += chunk.deleted;
                    sources.retire(c.slot);
                    c.slot = sources.put(chunk.batch.clone());
                    let done = std::mem::replace(&mut c.chunk, chunk);
                    retired_memory.push(done.memory);
                    c.pos = 0;
                }
                None => {
                    // The run is done: its source (a reader, its pages) goes now.
                    deleted += c.source.trailing_deleted();
                    sources.retire(c.slot);
                    retired_memory.push(c.chunk.memory.split(usize::MAX));
                    cursors[top] = None;
                    let last = heap.len() - 1;
                    heap.swap(0, last);
                    heap.pop();
                }
            }
        }
        sift_down(&mut heap, 0, |a, b| less(&cursors, a, b));
        let enough = match (limits.measured, max_rows) {
            (false, _) => false,
            (true, Some(n)) => picked.len() >= n,
            (true, None) => expanded >= out_bytes,
        };
        let full = enough || picked.len() >= batch_rows || held >= out_bytes || retired >= out_bytes;
        if !picked.is_empty() && (full || (heap.is_empty() && pending.is_empty())) {
            let batch = gather_picked(&sources.chunks, &mut picked)?;
            // (dictionary values the batch shares with its sources are held by them)
            let size = match sources.chunks.iter().flatten().next() {
                Some(source) => crate::dictionary::size_beside(&batch, source),
                None => decoded_size(&batch),
            };
            let n = picked.len();
            max_rows = Some(((n as f64 * out_bytes / size.max(1) as f64) as usize).clamp(1, n.saturating_mul(2)));
            out(Merged { batch, decoded_bytes: size, input_bytes: input, deleted })?;
            picked.clear();
            retired_memory.clear();
            (held, expanded, input, retired, deleted) = (0.0, 0.0, 0.0, 0.0, 0);
            // Keep only the chunks cursors still read from.
            sources.free_retired();
        }
    }
    if deleted > 0 {
        out(Merged { batch: empty(), decoded_bytes: 0, input_bytes: 0.0, deleted })?;
    }
    Ok(())
}

/// The chunks a merge picks rows from, each in a slot that stays its own until the chunk is
/// retired (consumed) and the output batch its rows went to is out.
#[derive(Default)]
struct Slots {
    chunks: Vec<Option<RecordBatch>>,
    free: Vec<usize>,
    retired: Vec<usize>,
}

impl Slots {
    fn put(&mut self, chunk: RecordBatch) -> usize {
        match self.free.pop() {
            Some(slot) => {
                self.chunks[slot] = Some(chunk);
                slot
            }
            None => {
                self.chunks.push(Some(chunk));
                self.chunks.len() - 1
            }
        }
    }

    /// The chunk in `slot` is consumed: it goes once the batch being picked is out.
    fn retire(&mut self, slot: usize) {
        self.retired.push(slot);
    }

    fn free_retired(&mut self) {
        for slot in self.retired.drain(..) {
            if let Some(chunk) = self.chunks.get_mut(slot) {
                *chunk = None;
                self.free.push(slot);
            }
        }
    }
}

/// The rows `picked` from `sources`, gathered from only the chunks they come from: a merge
/// holds a chunk per run (up to the fan-in, hundreds), an output batch takes rows from a few of
/// them, and gathering asks every source array of every column for its type and dictionary.
/// `picked` is rewritten to index the chunks it refers to.
fn gather_picked(sources: &[Option<RecordBatch>], picked: &mut [(usize, usize)]) -> Result<RecordBatch> {
    let mut slot = vec![usize::MAX; sources.len()];
    let mut refs: Vec<&RecordBatch> = Vec::new();
    for (source, _) in picked.iter_mut() {
        let Some(new) = slot.get_mut(*source) else { return Err(CompactError::Internal("merge picked a row of no chunk".into())) };
        if *new == usize::MAX {
            let Some(chunk) = sources.get(*source).and_then(Option::as_ref) else {
                return Err(CompactError::Internal("merge picked a row of a chunk already gone".into()));
            };
            *new = refs.len();
            refs.push(chunk);
        }
        *source = *new;
    }
    interleave(&refs, picked)
}

/// Restores the heap property below `i` for a min-heap ordered by `less`.
fn sift_down(heap: &mut [usize], mut i: usize, less: impl Fn(usize, usize) -> bool) {
    loop {
        let (l, r) = (2 * i + 1, 2 * i + 2);
        let mut smallest = i;
        if l < heap.len() && less(heap[l], heap[smallest]) {
            smallest = l;
        }
        if r < heap.len() && less(heap[r], heap[smallest]) {
            smallest = r;
        }
        if smallest == i {
            return;
        }
        heap.swap(i, smallest);
        i = smallest;
    }
}

/// Restores the heap property after a push, for a min-heap ordered by `less`.
fn sift_up(heap: &mut [usize], less: impl Fn(usize, usize) -> bool) {
    let mut i = heap.len().saturating_sub(1);
    while i > 0 {
        let parent = (i - 1) / 2;
        if !less(heap[i], heap[parent]) {
            return;
        }
        heap.swap(i, parent);
        i = parent;
    }
}

#[cfg(test)]
mod tests {
    use super::most_open;
    use arrow_array::{ArrayRef, StringArray};
    use arrow_row::{OwnedRow, RowConverter, SortField};
    use arrow_schema::DataType;
    use std::sync::Arc;

    fn keys(values: &[&str]) -> Vec<OwnedRow> {
        let converter = RowConverter::new(vec![SortField::new(DataType::Utf8)]).unwrap();
        let column: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
        let rows = converter.convert_columns(&[column]).unwrap();
        rows.iter().map(|r| r.owned()).collect()
    }

    /// `most_open` of runs given as (first, last, held).
    fn most(runs: &[(&str, &str, u64)]) -> (usize, u64) {
        let firsts = keys(&runs.iter().map(|r| r.0).collect::<Vec<_>>());
        let lasts = keys(&runs.iter().map(|r| r.1).collect::<Vec<_>>());
        most_open(runs.iter().enumerate().map(|(i, r)| (&firsts[i], &lasts[i], r.2)))
    }

    #[test]
    fn runs_are_open_together_where_their_closed_key_ranges_share_a_key() {
        // one after the other: one open at a time, the largest alone
        assert_eq!(most(&[("a", "c", 5), ("d", "f", 7), ("g", "h", 1)]), (1, 7));
        // a run ending at the key another starts at: both open there
        assert_eq!(most(&[("a", "c", 5), ("c", "f", 7), ("g", "h", 1)]), (2, 12));
        // nested and staggered: [a, z] holds the others, which overlap two at a time
        assert_eq!(most(&[("a", "z", 1), ("b", "d", 10), ("c", "e", 10), ("f", "g", 30)]), (3, 31));
        assert_eq!(most(&[]), (0, 0));
    }
}
