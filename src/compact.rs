//! The pipeline of one call: plan (`plan_call`, `Keys`) → deletes → dictionary columns →
//! group (`group_tuples`: partition tuples, call-wide dedupe, sort order) → per tuple
//! (`Writing::write_tuple`): read or merge (deleted rows dropped) → divert → dedupe → (order) →
//! write; then verify (`verify_outputs`) → publish → report (`describe_files`). Runs on a
//! blocking thread; checks the cancel flag between batches; reports progress through a
//! callback. Memory: that of the read and write stages (one decoded batch plus the open
//! row group), independent of the number or size of the inputs.

use crate::budget::ReadLimits;
use crate::dedupe::Deduper;
use crate::digest::Digest;
use crate::divert::Diverter;
use crate::error::check_cancel;
use crate::error::{CompactError, Result};
use crate::group::{group, FirstPass, Groups, TupleGroup};
use crate::iceberg::deletes::DeleteIndex;
use crate::iceberg::input::InputFile;
use crate::iceberg::partition::Partitioner;
use crate::merge::{merge_runs, plan_merge};
use crate::options::Options;
use crate::plan::{build_plan, Plan};
use crate::read::{read_segments, Batch, RowFilters};
use crate::report::{build_report, CompactReport};
use crate::sort::{sorting_columns, OrderCheck, Sorter};
use crate::spill::SpillDir;
use crate::verify::{compare, verify, verify_as_written, Fault};
use crate::write::{writer_properties, Calibration, Outputs, RollingWriter, Written, WrittenFile};
use arrow_array::RecordBatch;
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;
use roaring::RoaringTreemap;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub phase: &'static str,
    pub rows_read: u64,
    pub rows_written: u64,
    pub bytes_written: u64,
    pub files_written: u64,
}

const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Counters shared by the tuples of a call.
#[derive(Default)]
struct Totals {
    rows_read: u64,
    rows_deleted: u64,
    rows_written: u64,
    bytes_closed: u64,
    files_closed: u64,
}

/// Runs a compaction. Any error (or a panic, see `run_guarded`) leaves no file behind.
/// `files` are paths (`String`, `&str`) or `InputFile`s with their deletes.
pub fn compact<F: Clone + Into<InputFile>>(
    files: &[F],
    opts: &Options,
    cancel: &AtomicBool,
    progress: &dyn Fn(&Progress),
) -> Result<CompactReport> {
    let files: Vec<InputFile> = files.iter().cloned().map(Into::into).collect();
    if let Some((chosen, inner)) = crate::keep::resolve_plan(&files, opts)? {
        return compact(&chosen, &inner, cancel, progress);
    }
    let started = Instant::now();
    check_cancel(cancel)?;
    if files.is_empty() {
        return empty_generation(opts, started, cancel, progress);
    }
    progress(&Progress { phase: "plan", rows_read: 0, rows_written: 0, bytes_written: 0, files_written: 0 });
    let (mut plan, opts) = plan_call(&files, opts)?;
    let opts = &opts;
    let mut keys = Keys::new(&plan, opts)?;
    let limits = ReadLimits::new(opts.batch_rows, opts.batch_bytes, opts.batch_bytes);
    if let (Some(deduper), Some(carry)) = (keys.deduper.as_mut(), opts.carry.as_ref()) {
        let column = crate::unify::option_column(&plan.arrow_schema, "dedupeBy", deduper.column_name())?;
        crate::keep::seed_keys(deduper, plan.arrow_schema.field(column).data_type(), &carry.seed, &limits, cancel)?;
    }
    let deletes = DeleteIndex::load(&plan, &limits, cancel)?;
    // Columns whose values repeat are decoded as dictionaries from here on — all but the keys.
    let keep_plain = key_roots(&plan, opts, deletes.as_ref());
    crate::dictionary::choose(&mut plan, &keep_plain, limits.page_cap)?;
    let plan = plan;
    // Writer settings, built once: every data file (and the divert side file) shares them.
    let props = writer_properties(&plan, opts, keys.sorting);
    let diverter = opts.divert.as_ref().map(|spec| Diverter::new(&plan, opts, spec, props.clone())).transpose()?;
    let mut stages = Stages { deduper: keys.deduper, partitioner: keys.partitioner, diverter, order: None };
    let grouped = group_tuples(&plan, opts, &mut stages, deletes.as_ref(), &limits, cancel)?;
    check_cancel(cancel)?;
    // With more than one thread, each row group is verified as soon as it is written.
    let verify_limits = ReadLimits::new(opts.batch_rows, (opts.batch_bytes / 4).max(1), opts.batch_bytes);
    std::thread::scope(|scope| {
        let mut outputs = Outputs::new(&opts.out_dir, &opts.file_name_prefix)?;
        let verifier = (opts.verify && opts.threads > 1).then(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Written>();
            let (plan, limits) = (&plan, &verify_limits);
            (tx, scope.spawn(move || verify_as_written(rx, plan, limits, cancel)))
        });
        // Declared after `outputs`, so dropped (run files removed) before it.
        let mut spill = SpillDir::new(opts.tmp_dir.as_deref().unwrap_or(&opts.out_dir), &opts.file_name_prefix, &plan.memory);
        let mut writing =
            Writing::new(&plan, opts, &props, &grouped, deletes.as_ref(), &mut stages, &mut outputs, &mut spill, cancel, progress);
        writing.notify = verifier.as_ref().map(|(tx, _)| tx.clone());
        for g in &grouped.tuples {
            writing.write_tuple(g)?;
        }
        // (the writer's handle on the verifier goes now: the verifier ends when the last does)
        let Writing { totals, digest, written, duplicates_dropped, notify, .. } = writing;
        drop(notify);
        if let Some(d) = stages.diverter.as_mut() {
            d.finish()?;
        }
        let snapshot = |phase| Progress {
            phase,
            rows_read: totals.rows_read,
            rows_written: totals.rows_written,
            bytes_written: totals.bytes_closed,
            files_written: totals.files_closed,
        };
        let (files_written, tuples): (Vec<WrittenFile>, Vec<Option<usize>>) = written.into_iter().unzip();
        check_cancel(cancel)?;
        if opts.verify {
            progress(&snapshot("verify"));
        }
        verify_outputs(verifier, &files_written, &plan, opts, &limits, &digest, cancel)?;
        check_cancel(cancel)?;
        outputs.publish(&files_written)?;
        if let Some(d) = stages.diverter.as_mut() {
            d.publish()?;
        }
        let kept = match &opts.carry {
            Some(carry) => crate::keep::carry(carry, opts, &mut outputs, cancel)?,
            None => Vec::new(),
        };
        check_cancel(cancel)?;
        let mut report = build_report(
            &plan,
            files_written.iter().map(|f| f.report.clone()).collect(),
            totals.rows_read,
            totals.rows_written,
            started.elapsed().as_secs_f64() * 1000.0,
        );
        report.rows_deleted = totals.rows_deleted;
        report.duplicates_dropped = duplicates_dropped + stages.deduper.as_ref().map(|d| d.dropped).unwrap_or(0);
        report.files_spilled = spill.files_spilled;
        report.bytes_spilled = spill.bytes_spilled;
        report.intermediate_merges = spill.intermediate_merges;
        report.spill_peak_bytes = spill.peak_disk_bytes();
        report.peak_memory_bytes = plan.memory.peak() as u64;
        report.kept = kept;
        describe_files(&mut report, opts, &stages, tuples);
        outputs.commit();
        if let Some(d) = stages.diverter.take() {
            d.commit();
        }
        progress(&snapshot("done"));
        Ok(report)
    })
}

/// An empty generation (everything expired): nothing to read, nothing to create.
fn empty_generation(opts: &Options, started: Instant, cancel: &AtomicBool, progress: &dyn Fn(&Progress)) -> Result<CompactReport> {
    let mut kept = Vec::new();
    if let Some(carry) = opts.carry.as_ref().filter(|c| !c.kept.is_empty()) {
        // A plan that keeps everything: no data file is written, the kept files are carried.
        let mut outputs = Outputs::new(&opts.out_dir, &opts.file_name_prefix)?;
        kept = crate::keep::carry(carry, opts, &mut outputs, cancel)?;
        check_cancel(cancel)?;
        outputs.commit();
    }
    progress(&Progress { phase: "done", rows_read: 0, rows_written: 0, bytes_written: 0, files_written: 0 });
    let mut report = CompactReport::empty(started.elapsed().as_secs_f64() * 1000.0);
    report.diverted = opts.divert.as_ref().map(|d| (d.to.display().to_string(), 0));
    report.kept = kept;
    Ok(report)
}

/// The plan of the inputs, and the options with the output codec resolved from them.
fn plan_call(files: &[InputFile], opts: &Options) -> Result<(Plan, Options)> {
    let mut plan = build_plan(files)?;
    plan.memory = crate::memory::Accountant::for_batch_bytes(opts.batch_bytes);
    let mut resolved = opts.clone();
    resolved.resolve_codec(plan.dominant_codec());
    Ok((plan, resolved))
}

/// The options' keys, checked against the inputs' schema before anything else is read.
struct Keys {
    /// One seen set for the whole call, in `files` order (the generation's dedupe scope).
    deduper: Option<Deduper>,
    partitioner: Option<Partitioner>,
    sorting: Option<Vec<SortingColumn>>,
}

impl Keys {
    fn new(plan: &Plan, opts: &Options) -> Result<Keys> {
        Ok(Keys {
            deduper: opts.dedupe_by.as_ref().map(|column| Deduper::new(&plan.arrow_schema, column)).transpose()?,
            sorting: opts.sort_by.as_ref().map(|keys| sorting_columns(plan, keys)).transpose()?,
            partitioner: opts.partition_by.as_ref().map(|spec| Partitioner::new(&plan.arrow_schema, spec)).transpose()?,
        })
    }
}

/// The stages that keep state across the tuples of a call.
struct Stages<'p> {
    /// `None` once grouping settled dedupe for the whole call (with `partitionBy`).
    deduper: Option<Deduper>,
    partitioner: Option<Partitioner>,
    diverter: Option<Diverter<'p>>,
    /// With `sortBy`: what grouping found of the rows' order.
    order: Option<OrderCheck>,
}

/// The tuples to write, and what grouping settled for the whole call.
struct Grouped {
    tuples: Vec<TupleGroup>,
    /// Rows equality deletes removed, when grouping counted them (with `partitionBy`).
    equality_deleted: Option<u64>,
    /// Per input, positions of later dedupe occurrences (with `partitionBy` and `dedupeBy`).
    duplicates: Option<Vec<Option<RoaringTreemap>>>,
}

/// Groups the rows into tuples; with `partitionBy` and `dedupeBy` also settles dedupe for the
/// whole call (see `group::FirstPass`), and with `sortBy` checks the rows' order.
fn group_tuples(
    plan: &Plan,
    opts: &Options,
    stages: &mut Stages,
    deletes: Option<&DeleteIndex>,
    limits: &ReadLimits,
    cancel: &AtomicBool,
) -> Result<Grouped> {
    let mut first_pass = match (&stages.partitioner, stages.deduper.as_mut()) {
        (Some(_), Some(d)) => Some(FirstPass { deduper: d, diverter: stages.diverter.as_ref(), duplicates: Vec::new() }),
        _ => None,
    };
    stages.order = opts.sort_by.as_ref().map(|keys| OrderCheck::new(&plan.arrow_schema, keys)).transpose()?;
    let Groups { tuples, equality_deleted } =
        group(plan, stages.partitioner.as_mut(), deletes, first_pass.as_mut(), stages.order.as_mut(), limits, cancel)?;
    let duplicates = first_pass.map(|fp| fp.duplicates);
    if duplicates.is_some() {
        stages.deduper = None;
    }
    Ok(Grouped { tuples, equality_deleted, duplicates })
}

/// The write stage of a call: its tuples, one at a time, each read (or merged), prepared,
/// ordered and written to its own run of files.
struct Writing<'a, 'p> {
    plan: &'a Plan,
    opts: &'a Options,
    props: &'a WriterProperties,
    cancel: &'a AtomicBool,
    progress: &'a dyn Fn(&Progress),
    deletes: Option<&'a DeleteIndex>,
    duplicates: Option<&'a [Option<RoaringTreemap>]>,
    stages: &'a mut Stages<'p>,
    outputs: &'a mut Outputs,
    spill: &'a mut SpillDir,
    /// The verifier beside the writer, told of each row group and file written.
    notify: Option<std::sync::mpsc::Sender<Written>>,
    /// Equality deletes are counted per batch unless grouping counted them.
    count_equality_deletes: bool,
    totals: Totals,
    duplicates_dropped: u64,
    calibration: Calibration,
    /// The surviving input rows, for `verify`; and a test-only injected fault.
    digest: Digest,
    fault: Option<Fault>,
    last_progress: Option<Instant>,
    written: Vec<(WrittenFile, Option<usize>)>,
}

impl<'a, 'p> Writing<'a, 'p> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        plan: &'a Plan,
        opts: &'a Options,
        props: &'a WriterProperties,
        grouped: &'a Grouped,
        deletes: Option<&'a DeleteIndex>,
        stages: &'a mut Stages<'p>,
        outputs: &'a mut Outputs,
        spill: &'a mut SpillDir,
        cancel: &'a AtomicBool,
        progress: &'a dyn Fn(&Progress),
    ) -> Self {
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
            plan,
            opts,
            props,
            cancel,
            progress,
            deletes,
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
    fn write_tuple(&mut self, g: &TupleGroup) -> Result<()> {
        let (plan, opts, cancel, progress) = (self.plan, self.opts, self.cancel, self.progress);
        let mut writer = RollingWriter::new(plan, opts, self.props.clone(), self.outputs, g.input_bytes, self.calibration.clone());
        if let Some(tx) = &self.notify {
            writer.notify_closed(tx.clone());
        }
        // Rows already in order go straight to the writer; a tuple whose row groups each are in
        // order is merged from the inputs (not with a call-order dedupe, which must see rows in
        // `files` order); any other sorted tuple is buffered, sorted and spilled as needed.
        let merge = match (&self.stages.order, g.presorted, &self.stages.deduper) {
            (Some(o), false, None) => plan_merge(plan, g, o.segments(g.tuple.unwrap_or(0)), opts.batch_bytes),
            _ => None,
        };
        let mut sorter = match opts.sort_by.as_ref().filter(|_| !g.presorted && merge.is_none()) {
            Some(keys) => Some(Sorter::new(
                &plan.arrow_schema,
                keys,
                opts.batch_bytes,
                opts.batch_rows,
                opts.threads > 1,
                self.spill,
                cancel,
                &plan.memory,
            )?),
            None => None,
        };
        // Batches joining a sort buffer (¾ batchBytes, one more being spilled beside it) are a
        // quarter of batchBytes; otherwise halves: one batch is decoded while the one before is
        // written (`read_ahead`). (Batch boundaries do not depend on `threads`, so neither do
        // the output bytes.)
        let share = if sorter.is_some() { 4 } else { 2 };
        let data_limits = ReadLimits::new(opts.batch_rows, (opts.batch_bytes / share).max(1), opts.batch_bytes);
        let partitioner = &mut self.stages.partitioner;
        let mut select = |batch: &RecordBatch| -> Result<Vec<bool>> {
            match (partitioner.as_mut(), g.tuple) {
                (Some(p), Some(tuple)) => Ok(p.tuple_ids(batch)?.into_iter().map(|t| t == tuple).collect()),
                _ => Ok(vec![true; batch.num_rows()]),
            }
        };
        let filters = RowFilters { deletes: self.deletes, select: Some(&mut select), duplicates: self.duplicates, positions: false };
        // What happens to a batch before it is ordered and written — counting, divert,
        // dedupe, the input digest — runs beside decoding, on the read-ahead thread.
        let (diverter, deduper, digest, fault) = (&mut self.stages.diverter, &mut self.stages.deduper, &mut self.digest, &mut self.fault);
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
            if opts.verify {
                digest.add(&batch.batch)?;
            }
            if let Some(f) = *fault {
                if f.apply(&mut batch.batch)? {
                    *fault = None;
                }
            }
            counted.batch = Some(batch);
            Ok(counted)
        };
        let (totals, last) = (&mut self.totals, &mut self.last_progress);
        let deliver = |prepared: Prepared| -> Result<()> {
            totals.rows_read += prepared.read;
            totals.rows_deleted += prepared.deleted;
            if let Some(batch) = prepared.batch {
                match sorter.as_mut() {
                    Some(s) => s.push(batch)?,
                    None => writer.write(batch)?,
                }
            }
            tick(last, progress, totals, &writer);
            Ok(())
        };
        let (order, deletes, duplicates) = (self.stages.order.as_ref(), self.deletes, self.duplicates);
        let produce = |sink: &mut dyn FnMut(Batch) -> Result<()>| -> Result<()> {
            match (&merge, order) {
                (Some(m), Some(o)) => merge_runs(plan, m, o, opts.batch_rows, opts.batch_bytes, deletes, duplicates, cancel, sink),
                _ => read_segments(plan, &g.segments, None, &data_limits, cancel, filters, |_, b| sink(b)),
            }
        };
        read_ahead(opts.threads > 1, produce, prepare, deliver)?;
        if let Some(s) = sorter {
            // The merge of the sorted runs runs beside encoding too, one batch ahead.
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
            read_ahead(opts.threads > 1, produce, pass, deliver)?;
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

/// Reports progress at most every `PROGRESS_EVERY`.
fn tick(last: &mut Option<Instant>, progress: &dyn Fn(&Progress), totals: &Totals, writer: &RollingWriter) {
    if last.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY) {
        *last = Some(Instant::now());
        progress(&Progress {
            phase: "write",
            rows_read: totals.rows_read,
            rows_written: totals.rows_written + writer.rows_written,
            bytes_written: totals.bytes_closed + writer.bytes_written(),
            files_written: totals.files_closed + writer.files_written() as u64,
        });
    }
}

/// Verify: the outputs' digest against the input rows' — from the verifier that ran beside
/// the writer, or (one thread) by re-reading every output now.
fn verify_outputs(
    verifier: Option<(std::sync::mpsc::Sender<Written>, std::thread::ScopedJoinHandle<'_, Result<Digest>>)>,
    files: &[WrittenFile],
    plan: &Plan,
    opts: &Options,
    limits: &ReadLimits,
    expected: &Digest,
    cancel: &AtomicBool,
) -> Result<()> {
    if let Some((tx, handle)) = verifier {
        crate::testhooks::pause("verify");
        drop(tx);
        let found =
            handle.join().map_err(|p| CompactError::Internal(format!("panic while verifying: {}", crate::guard::panic_message(&*p))))??;
        compare(&found, expected, files.first().map(|f| f.tmp_path.as_path()))
    } else if opts.verify {
        verify(files, plan, limits, expected, cancel)
    } else {
        Ok(())
    }
}

/// What the report says of each file beyond its footer: location, sort order, partition.
fn describe_files(report: &mut CompactReport, opts: &Options, stages: &Stages, tuples: Vec<Option<usize>>) {
    report.diverted = stages.diverter.as_ref().map(|d| (d.path().display().to_string(), d.rows));
    for file in report.files.iter_mut() {
        file.location = data_file_location(opts.out_location.as_deref(), &file.path);
        if opts.sort_by.is_some() {
            // Every file of a sorted call is sorted end to end within its tuple.
            file.sort_order_id = opts.sort_order_id;
        }
    }
    if let Some(p) = &stages.partitioner {
        for (file, tuple) in report.files.iter_mut().zip(tuples) {
            if let Some(values) = tuple.and_then(|t| p.tuples.get(t)) {
                file.partition = values.clone();
            }
        }
    }
}

/// A batch after divert, dedupe and digest (`None` when no row is left), with the rows it
/// counts as read and as deleted.
struct Prepared {
    batch: Option<Batch>,
    read: u64,
    deleted: u64,
}

/// With `ahead` (more than one thread), decodes (and `prepare`s) on a thread of its own, one
/// batch ahead of `deliver` (which orders, encodes and writes on the calling thread): at most
/// two batches are alive, the one being decoded and the one being written. The first error on
/// either side ends both. Without, all three run in turn on the calling thread.
fn read_ahead(
    ahead: bool,
    produce: impl FnOnce(&mut dyn FnMut(Batch) -> Result<()>) -> Result<()> + Send,
    mut prepare: impl FnMut(Batch) -> Result<Prepared> + Send,
    mut deliver: impl FnMut(Prepared) -> Result<()>,
) -> Result<()> {
    if !ahead {
        return produce(&mut |b| deliver(prepare(b)?));
    }
    std::thread::scope(|scope| {
        // A rendezvous channel: the reader hands over a batch only when the writer takes it.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Prepared>>(0);
        let reader = scope.spawn(move || {
            let result = produce(&mut |b| tx.send(Ok(prepare(b)?)).map_err(|_| CompactError::Aborted));
            if let Err(e) = result {
                // (When the writer stopped first, nobody listens: its own error is reported.)
                let _ = tx.send(Err(e));
            }
        });
        let mut outcome = Ok(());
        for item in rx.iter() {
            if let Err(e) = item.and_then(&mut deliver) {
                outcome = Err(e);
                break;
            }
        }
        drop(rx);
        if reader.join().is_err() {
            return Err(CompactError::Internal("panic in the read-ahead thread".into()));
        }
        outcome
    })
}

/// The top-level columns some stage reads as keys (sort, partition, dedupe, divert, equality
/// deletes): they are always decoded plain.
fn key_roots(plan: &Plan, opts: &Options, deletes: Option<&DeleteIndex>) -> Vec<usize> {
    let mut names: Vec<&str> = Vec::new();
    names.extend(opts.sort_by.iter().flatten().map(|k| k.column.as_str()));
    names.extend(opts.partition_by.iter().flatten().map(|p| p.column.as_str()));
    names.extend(opts.dedupe_by.as_deref());
    names.extend(opts.divert.as_ref().map(|d| d.column.as_str()));
    if let Some(d) = deletes {
        for i in 0..plan.inputs.len() {
            names.extend(d.key_columns(i));
        }
    }
    let mut roots: Vec<usize> = names.into_iter().filter_map(|n| plan.arrow_schema.index_of(n).ok()).collect();
    roots.sort_unstable();
    roots.dedup();
    roots
}

/// `dataFile.file_path`: `outLocation` + the file name, else the absolute path.
pub(crate) fn data_file_location(prefix: Option<&str>, path: &str) -> String {
    let path = std::path::Path::new(path);
    match prefix {
        Some(prefix) => {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if prefix.ends_with('/') {
                format!("{prefix}{name}")
            } else {
                format!("{prefix}/{name}")
            }
        }
        None => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string(),
    }
}

/// `compact`, with a panic turned into `ERR_INTERNAL` (outputs are removed while unwinding).
/// Afterwards the memory the call freed is handed back to the OS (see `release_free_memory`).
pub fn run_guarded<F: Clone + Into<InputFile>>(
    files: &[F],
    opts: &Options,
    cancel: &AtomicBool,
    progress: &dyn Fn(&Progress),
) -> Result<CompactReport> {
    let outcome = guard(|| compact(files, opts, cancel, progress));
    crate::heap::release_free_memory();
    outcome
}

pub fn guard<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(CompactError::Internal(format!("panic: {}", crate::guard::panic_message(&*payload)))),
    }
}
