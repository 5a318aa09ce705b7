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
//! At most `Plan::open_runs` runs are open at once (`os::MAX_OPEN_RUNS`, 256, or fewer where
//! the process has few descriptors left): a tuple of more inputs whose key ranges overlap goes
//! to the sort, which reads one input at a time and merges its own runs in passes of at most
//! that many.
//!
//! Memory: the runs open at once — their pages, by estimate (`InputSummary::reader_bytes`), at
//! most 1½ × batchBytes together, and each one's file, footer and column readers
//! (`open_input_state`, held from the accountant while the run is open), at most an eighth of
//! the fixed allowance together (both checked before the merge starts by a sweep over the
//! runs' key ranges) — and one decoded batch each (¼ batchBytes
//! together) — plus the rows picked for the next output batch (⅛ batchBytes, and the batches
//! they are picked from). A run's reader is opened when the merge reaches its first key and
//! dropped after its last row.

use crate::budget::ReadLimits;
use crate::error::Result;
use crate::group::TupleGroup;
use crate::iceberg::deletes::DeleteIndex;
use crate::kmerge;
use crate::order::{OrderCheck, SegmentKeys};
use crate::plan::Plan;
use crate::read::{RowFilters, Segment, SegmentReader};
use arrow_array::RecordBatch;
use arrow_row::OwnedRow;
use roaring::RoaringTreemap;
use std::sync::atomic::AtomicBool;

use crate::batch::Batch;

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

/// What an open input holds beside its pages: its file, its parsed footer, the array readers
/// of its `leaves` columns and their decoders (measured: ~62 KB for a file of six columns).
pub fn open_input_state(leaves: usize) -> u64 {
    (32 << 10) + (8 << 10) * leaves as u64
}

/// The merge for `group`'s rows, if every row group of it is in order on its own, no more than
/// `Plan::open_runs` runs are open at once and their readers fit in 1½ × `batch_bytes`;
/// `keys`: the tuple's row groups as `OrderCheck` saw them.
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
    // A run is open from its first key until its last: the most open at once, and their pages.
    let (max_open, peak) = kmerge::most_open(runs.iter().map(|r| (&r.first, &r.last, r.reader_bytes)));
    // Each open run's file, footer and readers come out of the fixed allowance (an eighth of it
    // for all of them), its pages out of the batches'.
    let state = open_input_state(plan.parquet_schema.num_columns()).saturating_mul(max_open as u64);
    let fits = max_open <= plan.open_runs
        && state <= (crate::memory::FIXED_BYTES / 8) as u64
        && peak <= (batch_bytes as u64).saturating_mul(3) / 2;
    fits.then_some(MergePlan { runs, max_open, peak_reader_bytes: peak })
}

/// Streams the rows of `merge`'s runs, in order, to `sink` in batches of about ⅛ `batch_bytes`
/// decoded bytes and at most `batch_rows` rows (`kmerge`); `deletes` and `duplicates` as the
/// read stage applies them.
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
    let firsts: Vec<Option<OwnedRow>> = runs.iter().map(|r| Some(r.first.clone())).collect();
    let open = |r: usize| -> Result<InputRun<'_, '_>> {
        let filters = RowFilters { deletes, duplicates, ..RowFilters::default() };
        let state = plan.memory.hold(open_input_state(plan.parquet_schema.num_columns()) as usize);
        Ok(InputRun {
            reader: SegmentReader::new(plan, &runs[r].segments, None, &limits, cancel, filters),
            order,
            trailing: 0,
            _state: state,
        })
    };
    let out = kmerge::Limits { batch_rows, out_bytes: (batch_bytes / 8).max(1), measured: false };
    let empty = || RecordBatch::new_empty(plan.arrow_schema.clone());
    kmerge::merge(&firsts, open, out, empty, cancel, |m| {
        sink(Batch::made(m.batch, m.decoded_bytes, m.input_bytes, m.deleted, &plan.memory))
    })
}

/// A run of the inputs as the merge reads it: its row groups, decoded in order.
struct InputRun<'a, 'f> {
    reader: SegmentReader<'a, 'f>,
    order: &'a OrderCheck,
    /// Rows equality deletes removed after the run's last row.
    trailing: u64,
    /// Its file, footer and column readers, accounted while it is open.
    _state: crate::memory::Reservation,
}

impl kmerge::RunSource for InputRun<'_, '_> {
    /// The next non-empty batch with its keys (counting the rows equality deletes removed
    /// meanwhile).
    fn next_chunk(&mut self) -> Result<Option<kmerge::Chunk>> {
        let mut deleted = 0;
        while let Some((_, b)) = self.reader.next_batch()? {
            deleted += b.deleted;
            let n = b.batch.num_rows();
            if n == 0 {
                continue;
            }
            let rows = n as f64;
            return Ok(Some(kmerge::Chunk {
                keys: self.order.keys(&b.batch)?,
                held_per_row: b.decoded_bytes as f64 / rows,
                // (not used: these batches are cut on what they hold)
                expanded_per_row: b.decoded_bytes as f64 / rows,
                input_per_row: b.input_bytes / rows,
                deleted,
                batch: b.batch,
                memory: b.memory,
            }));
        }
        self.trailing += deleted;
        Ok(None)
    }

    fn trailing_deleted(&mut self) -> u64 {
        std::mem::take(&mut self.trailing)
    }
}
