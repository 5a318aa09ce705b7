//! Merge: sort a tuple whose row groups are each already in order by merging them straight
//! from the inputs — a k-way merge over one reader per run — instead of buffering, spilling and
//! re-reading decoded runs (`sort`). A run is a row group in order, or a chain of consecutive
//! ones that continue each other's order (a file of sorted row groups). Inputs written by a
//! writer that flushes in time order are exactly this when sorted by time: each file is in
//! order, and files of the same moment overlap. Chosen per tuple when `OrderCheck` found every
//! row group of the tuple in order and the readers the merge must hold open at once fit the
//! heap bound; otherwise the tuple goes through `Sorter`. Ties keep `files` order, as the
//! stable sort does: the merge prefers the earlier run.
//!
//! Memory: the runs open at once — their pages, by estimate (`InputSummary::reader_bytes`), at
//! most 1½ × batchBytes together (checked before the merge starts by a sweep over the runs' key
//! ranges), and one decoded batch each (¼ batchBytes together) — plus the rows picked for the
//! next output batch (⅛ batchBytes, and the batches they are picked from). A run's reader is
//! opened when the merge reaches its first key and dropped after its last row.

use crate::error::{CompactError, Result};
use crate::group::TupleGroup;
use crate::iceberg::deletes::DeleteIndex;
use crate::plan::Plan;
use crate::budget::ReadLimits;
use crate::error::check_cancel;
use crate::read::{RowFilters, Segment, SegmentReader};
use crate::gather::interleave;
use crate::sort::{sift_down, OrderCheck, SegmentKeys};
use arrow_array::RecordBatch;
use arrow_row::{OwnedRow, Rows};
use roaring::RoaringTreemap;
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;

use crate::read::Batch;

/// One run: row groups read in order, whose rows are in order end to end.
#[derive(Debug)]
struct Run {
    segments: Vec<Segment>,
    first: OwnedRow,
    last: OwnedRow,
    /// The largest page estimate of its row groups (one is open at a time).
    reader_bytes: u64,
}

/// A merge the heap bound allows.
#[derive(Debug)]
pub struct MergePlan {
    runs: Vec<Run>,
    /// The most runs open at once.
    max_open: usize,
    /// Their page estimate at that point.
    pub peak_reader_bytes: u64,
}

/// The merge for `group`'s rows, if every row group of it is in order on its own and the
/// readers open at once fit in 1½ × `batch_bytes`; `keys`: the tuple's row groups as
/// `OrderCheck` saw them.
pub fn plan_merge(plan: &Plan, group: &TupleGroup, keys: &[SegmentKeys], batch_bytes: usize) -> Option<MergePlan> {
    // Row groups shared with other tuples are filtered while read: not here.
    if keys.is_empty() || group.segments.iter().any(|s| s.mixed) || keys.iter().any(|k| !k.sorted) {
        return None;
    }
    let mut runs: Vec<Run> = Vec::new();
    for k in keys {
        let reader_bytes = plan.inputs.get(k.input)?.reader_bytes.get(k.row_group).copied()?;
        let segment = Segment { input: k.input, row_group: k.row_group, mixed: false };
        match runs.last_mut() {
            Some(run) if run.last.row() <= k.first.row() => {
                run.segments.push(segment);
                run.last = k.last.clone();
                run.reader_bytes = run.reader_bytes.max(reader_bytes);
            }
            _ => runs.push(Run { segments: vec![segment], first: k.first.clone(), last: k.last.clone(), reader_bytes }),
        }
    }
    // A run is open from its first key until its last: the most open at once, and their pages
    // (opening before closing at equal keys, as the merge may).
    let mut events: Vec<(&OwnedRow, u8, usize)> = runs.iter().enumerate().flat_map(|(i, r)| [(&r.first, 0, i), (&r.last, 1, i)]).collect();
    events.sort_by(|a, b| a.0.row().cmp(&b.0.row()).then(a.1.cmp(&b.1)));
    let (mut open, mut bytes, mut max_open, mut peak) = (0usize, 0u64, 0usize, 0u64);
    for (_, kind, i) in events {
        let b = runs[i].reader_bytes;
        if kind == 0 {
            open += 1;
            bytes += b;
        } else {
            open -= 1;
            bytes -= b;
        }
        max_open = max_open.max(open);
        peak = peak.max(bytes);
    }
    (peak <= (batch_bytes as u64).saturating_mul(3) / 2).then_some(MergePlan { runs, max_open, peak_reader_bytes: peak })
}

/// A run being merged: its reader and current batch.
struct Cursor<'a, 'f> {
    reader: SegmentReader<'a, 'f>,
    chunk: RecordBatch,
    keys: Rows,
    pos: usize,
    /// Index of `chunk` in the merge's `sources`.
    slot: usize,
    decoded_per_row: f64,
    input_per_row: f64,
}

/// Streams the rows of `merge`'s runs, in order, to `sink` in batches of about ⅛ `batch_bytes`
/// decoded bytes and at most `batch_rows` rows; `deletes` and `duplicates` as the read stage
/// applies them.
#[allow(clippy::too_many_arguments)]
pub fn merge_runs(
    plan: &Plan,
    merge: &MergePlan,
    order: &OrderCheck,
    batch_rows: usize,
    batch_bytes: usize,
    deletes: Option<&DeleteIndex>,
    duplicates: Option<&[Option<RoaringTreemap>]>,
    cancel: &AtomicBool,
    mut sink: impl FnMut(Batch) -> Result<()>,
) -> Result<()> {
    let runs = &merge.runs;
    let limits = ReadLimits::new(batch_rows, (batch_bytes / 4 / merge.max_open.max(1)).max(1), batch_bytes);
    let out_bytes = (batch_bytes / 8).max(1) as f64;
    let batch_rows = batch_rows.max(1);
    let mut cursors: Vec<Option<Cursor>> = (0..runs.len()).map(|_| None).collect();
    // Runs not yet opened, by first key (ties in run order).
    let mut pending: Vec<usize> = (0..runs.len()).collect();
    pending.sort_by(|&a, &b| runs[a].first.row().cmp(&runs[b].first.row()).then(a.cmp(&b)));
    let mut pending: VecDeque<usize> = pending.into();
    let less = |cursors: &[Option<Cursor>], a: usize, b: usize| match (&cursors[a], &cursors[b]) {
        (Some(x), Some(y)) => match x.keys.row(x.pos).cmp(&y.keys.row(y.pos)) {
            Ordering::Equal => a < b,
            o => o == Ordering::Less,
        },
        _ => a < b,
    };
    let mut heap: Vec<usize> = Vec::new();
    let mut sources: Vec<RecordBatch> = Vec::new();
    let mut picked: Vec<(usize, usize)> = Vec::new();
    let (mut picked_bytes, mut picked_input, mut deleted, mut retired) = (0.0f64, 0.0f64, 0u64, 0.0f64);
    loop {
        check_cancel(cancel)?;
        // Open every run that starts at or before the smallest key: nothing in a run not yet
        // open can come before the row emitted next.
        while let Some(&r) = pending.front() {
            let due = match heap.first().and_then(|&top| cursors[top].as_ref()) {
                None => true,
                Some(top) => runs[r].first.row() <= top.keys.row(top.pos),
            };
            if !due {
                break;
            }
            pending.pop_front();
            let filters = RowFilters { deletes, duplicates, ..RowFilters::default() };
            let mut reader = SegmentReader::new(plan, &runs[r].segments, None, &limits, cancel, filters);
            if let Some((chunk, keys, d, i)) = next_cursor(&mut reader, order, &mut deleted)? {
                sources.push(chunk.clone());
                cursors[r] = Some(Cursor { reader, chunk, keys, pos: 0, slot: sources.len() - 1, decoded_per_row: d, input_per_row: i });
                heap.push(r);
                sift_up(&mut heap, |a, b| less(&cursors, a, b));
            }
        }
        let Some(&top) = heap.first() else { break };
        let Some(c) = cursors[top].as_mut() else { return Err(CompactError::Internal("merge cursor missing".into())) };
        picked.push((c.slot, c.pos));
        picked_bytes += c.decoded_per_row;
        picked_input += c.input_per_row;
        c.pos += 1;
        if c.pos == c.chunk.num_rows() {
            retired += c.decoded_per_row * c.chunk.num_rows() as f64;
            match next_cursor(&mut c.reader, order, &mut deleted)? {
                Some((chunk, keys, d, i)) => {
                    c.slot = sources.len();
                    sources.push(chunk.clone());
                    (c.chunk, c.keys, c.pos, c.decoded_per_row, c.input_per_row) = (chunk, keys, 0, d, i);
                }
                None => {
                    // The run is done: its reader (and pages) go now.
                    cursors[top] = None;
                    let last = heap.len() - 1;
                    heap.swap(0, last);
                    heap.pop();
                }
            }
        }
        sift_down(&mut heap, 0, |a, b| less(&cursors, a, b));
        let full = picked.len() >= batch_rows || picked_bytes >= out_bytes || retired >= out_bytes;
        if !picked.is_empty() && (full || (heap.is_empty() && pending.is_empty())) {
            let refs: Vec<&RecordBatch> = sources.iter().collect();
            let batch = interleave(&refs, &picked)?;
            sink(Batch { batch, decoded_bytes: picked_bytes as usize, input_bytes: picked_input, deleted, positions: Vec::new() })?;
            picked.clear();
            (picked_bytes, picked_input, deleted, retired) = (0.0, 0.0, 0, 0.0);
            // Keep only the batches cursors still read from.
            sources.clear();
            for &i in &heap {
                if let Some(c) = cursors[i].as_mut() {
                    c.slot = sources.len();
                    sources.push(c.chunk.clone());
                }
            }
        }
    }
    if deleted > 0 {
        // Rows equality deletes removed after the last row was picked.
        sink(Batch { batch: RecordBatch::new_empty(plan.arrow_schema.clone()), decoded_bytes: 0, input_bytes: 0.0, deleted, positions: Vec::new() })?;
    }
    Ok(())
}

/// The next non-empty batch of a run with its keys and per-row decoded and input bytes
/// (adding the rows equality deletes removed meanwhile to `deleted`); `None` at its end.
fn next_cursor(reader: &mut SegmentReader, order: &OrderCheck, deleted: &mut u64) -> Result<Option<(RecordBatch, Rows, f64, f64)>> {
    while let Some((_, b)) = reader.next_batch()? {
        *deleted += b.deleted;
        let n = b.batch.num_rows();
        if n == 0 {
            continue;
        }
        let keys = order.keys(&b.batch)?;
        return Ok(Some((b.batch, keys, b.decoded_bytes as f64 / n as f64, b.input_bytes / n as f64)));
    }
    Ok(None)
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
