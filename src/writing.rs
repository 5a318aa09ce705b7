//! Writing: one tuple at a time, each read (streamed, merged from its inputs or sorted),
//! prepared (divert, dedupe, the input digest) beside decoding, ordered and written to its own
//! run of files; progress reported as rows are written.
//!
//! Memory: one decoded batch being prepared beside the one being written (`ahead`), the open
//! row group, and with `sortBy` the sort buffer (see `sort`) and, while its runs are merged,
//! one merged batch (⅛ batchBytes) queued between the merge and the writer.

use crate::ahead::read_ahead;
use crate::batch::Batch;
use crate::budget::ReadLimits;
use crate::dedupe::Deduper;
use crate::digest::Digest;
use crate::divert::Diverter;
use crate::error::Result;
use crate::group::TupleGroup;
use crate::iceberg::deletes::DeleteIndex;
use crate::iceberg::partition::Partitioner;
use crate::merge::{merge_runs, plan_merge};
use crate::options::Options;
use crate::order::OrderCheck;
use crate::plan::Plan;
use crate::read::{read_segments, RowFilters};
use crate::report::Progress;
use crate::route::{choose, Route, RouteFacts};
use crate::sort::Sorter;
use crate::spill::SpillDir;
use crate::verify::Fault;
use crate::write::{Calibration, Outputs, RollingWriter, Written, WrittenFile};
use arrow_array::RecordBatch;
use parquet::file::properties::WriterProperties;
use roaring::RoaringTreemap;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Counters shared by the tuples of a call.
#[derive(Default)]
pub struct Totals {
    pub rows_read: u64,
    pub rows_deleted: u64,
    pub rows_written: u64,
    pub bytes_closed: u64,
    pub files_closed: u64,
}

/// The stages that keep state across the tuples of a call.
pub struct Stages<'p> {
    /// `None` once grouping settled dedupe for the whole call (with `partitionBy`).
    pub deduper: Option<Deduper>,
    pub partitioner: Option<Partitioner>,
    pub diverter: Option<Diverter<'p>>,
    /// With `sortBy`: what grouping found of the rows' order.
    pub order: Option<OrderCheck>,
}

/// The tuples to write, and what grouping settled for the whole call.
pub struct Grouped {
    pub tuples: Vec<TupleGroup>,
    /// Rows equality deletes removed, when grouping counted them (with `partitionBy`).
    pub equality_deleted: Option<u64>,
    /// Per input, positions of later dedupe occurrences (with `partitionBy` and `dedupeBy`).
    pub duplicates: Option<Vec<Option<RoaringTreemap>>>,
}

/// The write stage of a call: its tuples, one at a time, each read (or merged), prepared,
/// ordered and written to its own run of files.
pub struct Writing<'a, 'p> {
    pub call: Call<'a>,
    pub duplicates: Option<&'a [Option<RoaringTreemap>]>,
    pub stages: &'a mut Stages<'p>,
    pub outputs: &'a mut Outputs,
    pub spill: &'a mut SpillDir,
    /// The verifier beside the writer, told of each row group and file written.
    pub notify: Option<std::sync::mpsc::Sender<Written>>,
    /// Equality deletes are counted per batch unless grouping counted them.
    pub count_equality_deletes: bool,
    pub totals: Totals,
    pub duplicates_dropped: u64,
    pub calibration: Calibration,
    /// The surviving input rows, for `verify`; and a test-only injected fault.
    pub digest: Digest,
    pub fault: Option<Fault>,
    pub last_progress: Option<Instant>,
    pub written: Vec<(WrittenFile, Option<usize>)>,
}

/// What every stage of a call reads and none changes: the inputs' plan, the options, the
/// writer settings, the table's deletes, the cancel flag and the progress callback.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    pub plan: &'a Plan,
    pub opts: &'a Options,
    pub props: &'a WriterProperties,
    pub deletes: Option<&'a DeleteIndex>,
    pub cancel: &'a AtomicBool,
    pub progress: &'a dyn Fn(&Progress),
}

impl<'a, 'p> Writing<'a, 'p> {
    pub fn new(
        call: Call<'a>,
        grouped: &'a Grouped,
        stages: &'a mut Stages<'p>,
        outputs: &'a mut Outputs,
        spill: &'a mut SpillDir,
    ) -> Self {
        let Call { plan, deletes, .. } = call;
        let mut totals = Totals::default();
        let mut duplicates_dropped = 0;
        // Rows skipped without decoding (deleted positions, later dedupe occurrences), counted once
        // from the bitmaps: their row groups may be read for several tuples, or not at all.
        for (i, input) in plan.inputs.iter().enumerate() {
            let deleted = deletes.map(|d| d.positions_deleted(i, input.rows)).unwrap_or(0);
            let dups = grouped
                .duplicates
                .as_ref()
                .and_then(|d| d.get(i))
                .and_then(|b| b.as_ref())
                .map(|b| b.range_cardinality(0..input.rows))
                .unwrap_or(0);
            totals.rows_read += deleted + dups;
            totals.rows_deleted += deleted;
            duplicates_dropped += dups;
        }
        // With tuples, equality deletes were counted while grouping.
        totals.rows_read += grouped.equality_deleted.unwrap_or(0);
        totals.rows_deleted += grouped.equality_deleted.unwrap_or(0);
        Writing {
            call,
            duplicates: grouped.duplicates.as_deref(),
            stages,
            outputs,
            spill,
            notify: None,
            count_equality_deletes: grouped.equality_deleted.is_none(),
            totals,
            duplicates_dropped,
            calibration: Calibration::for_inputs(plan),
            digest: Digest::default(),
            fault: Fault::from_env(),
            last_progress: None,
            written: Vec::new(),
        }
    }

    /// Writes one tuple: its own run of files.
    pub fn write_tuple(&mut self, g: &TupleGroup) -> Result<()> {
        let Call { plan, opts, props, deletes, cancel, progress } = self.call;
        let mut writer = RollingWriter::new(plan, opts, props.clone(), self.outputs, g.input_bytes, self.calibration.clone());
        if let Some(tx) = &self.notify {
            writer.notify_closed(tx.clone());
        }
        // The tuple's route (`route`): streamed, merged from its inputs, or sorted.
        let order = self.stages.order.as_ref();
        let facts = RouteFacts { sort_by: order.is_some(), presorted: g.presorted, call_order_dedupe: self.stages.deduper.is_some() };
        let route = choose(facts, || order.and_then(|o| plan_merge(plan, g, o.segments(g.tuple.unwrap_or(0)), opts.batch_bytes)));
        let mut sorter = match opts.sort_by.as_ref().filter(|_| route.sorts()) {
            Some(keys) => Some(
                Sorter::new(
                    &plan.arrow_schema,
                    keys,
                    opts.batch_bytes,
                    opts.batch_rows,
                    g.input_bytes,
                    opts.threads > 1,
                    self.spill,
                    cancel,
                    &plan.memory,
                )?
                .with_open_runs(plan.open_runs),
            ),
            None => None,
        };
        // Batches are a quarter of batchBytes: where they join a sort buffer (¾ batchBytes, one
        // more being spilled beside it), and where they stream, so that the blocks a batch frees
        // fit among the freed blocks the allocator keeps (`alloc`) and the next batches' values
        // grow into them rather than into fresh pages (with halves, one input file of fat
        // values spent a fifth to a third of the call's CPU time in the kernel). One batch is
        // decoded while the one before is written (`read_ahead`). (Batch boundaries do not
        // depend on `threads`, so neither do the output bytes.)
        let data_limits = ReadLimits::new(opts.batch_rows, (opts.batch_bytes / 4).max(1), opts.batch_bytes);
        let partitioner = &mut self.stages.partitioner;
        let mut select = |batch: &RecordBatch| -> Result<Vec<bool>> {
            match (partitioner.as_mut(), g.tuple) {
                (Some(p), Some(tuple)) => Ok(p.tuple_ids(batch)?.into_iter().map(|t| t == tuple).collect()),
                _ => Ok(vec![true; batch.num_rows()]),
            }
        };
        let filters = RowFilters { deletes, select: Some(&mut select), duplicates: self.duplicates, positions: false };
        // What happens to a batch before it is ordered and written — counting, divert,
        // dedupe, the input digest — runs beside decoding, on the read-ahead thread; but where
        // that thread merges or the rows go to a sort buffer (its side does the most, the
        // writing side little), the input digest is taken on the writing side.
        let (diverter, deduper, fault) = (&mut self.stages.diverter, &mut self.stages.deduper, &mut self.fault);
        let late = opts.threads > 1 && (sorter.is_some() || matches!(route, Route::Merge(_)));
        let (mut digest_early, mut digest_late) = if late { (None, Some(&mut self.digest)) } else { (Some(&mut self.digest), None) };
        let (mut fault_early, mut fault_late) = if late { (None, Some(fault)) } else { (Some(fault), None) };
        let count_equality_deletes = self.count_equality_deletes;
        let prepare = |mut batch: Batch| -> Result<Prepared> {
            crate::testhooks::pause("read");
            let mut counted = Prepared { read: batch.batch.num_rows() as u64, deleted: 0, batch: None };
            if count_equality_deletes {
                counted.read += batch.deleted;
                counted.deleted += batch.deleted;
            }
            if let Some(d) = diverter.as_mut() {
                batch = d.split(batch)?;
            }
            if let Some(d) = deduper.as_mut() {
                let kept = d.filter(batch.batch.clone())?;
                batch = batch.retain(kept);
            }
            if batch.batch.num_rows() == 0 {
                return Ok(counted);
            }
            digest_and_fault(opts.verify, &mut batch, digest_early.as_deref_mut(), fault_early.as_deref_mut())?;
            counted.batch = Some(batch);
            Ok(counted)
        };
        let (totals, last) = (&mut self.totals, &mut self.last_progress);
        let deliver = |prepared: Prepared| -> Result<()> {
            totals.rows_read += prepared.read;
            totals.rows_deleted += prepared.deleted;
            if let Some(mut batch) = prepared.batch {
                digest_and_fault(opts.verify, &mut batch, digest_late.as_deref_mut(), fault_late.as_deref_mut())?;
                match sorter.as_mut() {
                    Some(s) => s.push(batch)?,
                    None => writer.write(batch)?,
                }
            }
            tick(last, progress, totals, &writer);
            Ok(())
        };
        let duplicates = self.duplicates;
        let produce = |sink: &mut dyn FnMut(Batch) -> Result<()>| -> Result<()> {
            match (&route, order) {
                (Route::Merge(m), Some(o)) => merge_runs(plan, m, o, opts.batch_rows, opts.batch_bytes, deletes, duplicates, cancel, sink),
                _ => read_segments(plan, &g.segments, None, &data_limits, cancel, filters, |_, b| sink(b)),
            }
        };
        read_ahead(opts.threads > 1, 0, produce, prepare, deliver)?;
        if let Some(s) = sorter {
            // The merge of the sorted runs runs beside encoding too, one batch ahead, and one
            // more batch may wait between them (its batches are ⅛ of batchBytes: see `sort`).
            let (last, totals) = (&mut self.last_progress, &self.totals);
            let deliver = |prepared: Prepared| -> Result<()> {
                if let Some(batch) = prepared.batch {
                    writer.write(batch)?;
                }
                tick(last, progress, totals, &writer);
                Ok(())
            };
            let produce = |sink: &mut dyn FnMut(Batch) -> Result<()>| s.finish(sink);
            let pass = |batch: Batch| Ok(Prepared { batch: Some(batch), read: 0, deleted: 0 });
            read_ahead(opts.threads > 1, 1, produce, pass, deliver)?;
        }
        self.totals.rows_written += writer.rows_written;
        let (files, measured) = writer.finish()?;
        self.calibration = measured;
        self.totals.bytes_closed += files.iter().map(|f| f.size).sum::<u64>();
        self.totals.files_closed += files.len() as u64;
        self.written.extend(files.into_iter().map(|f| (f, g.tuple)));
        Ok(())
    }
}

/// Adds a batch about to be ordered and written to the input digest (with `verify`), then
/// applies the test fault, if any (after the digest: verification must find it).
fn digest_and_fault(verify: bool, batch: &mut Batch, digest: Option<&mut Digest>, fault: Option<&mut Option<Fault>>) -> Result<()> {
    if let (true, Some(d)) = (verify, digest) {
        d.add(&batch.batch)?;
    }
    if let Some(fault) = fault {
        if let Some(f) = *fault {
            if f.apply(&mut batch.batch)? {
                *fault = None;
            }
        }
    }
    Ok(())
}

/// Reports progress at most every `PROGRESS_EVERY`.
fn tick(last: &mut Option<Instant>, progress: &dyn Fn(&Progress), totals: &Totals, writer: &RollingWriter) {
    if last.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY) {
        *last = Some(Instant::now());
        progress(&Progress {
            phase: crate::report::Phase::Write,
            rows_read: totals.rows_read,
            rows_written: totals.rows_written + writer.rows_written,
            bytes_written: totals.bytes_closed + writer.bytes_written(),
            files_written: totals.files_closed + writer.files_written() as u64,
        });
    }
}

/// A batch after divert, dedupe and digest (`None` when no row is left), with the rows it
/// counts as read and as deleted.
pub struct Prepared {
    batch: Option<Batch>,
    read: u64,
    deleted: u64,
}
