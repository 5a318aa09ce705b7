//! The pipeline of one call: plan (`plan_call`, `Keys`) → deletes → dictionary columns →
//! group (`group_tuples`: partition tuples, call-wide dedupe, sort order) → per tuple
//! (`Writing::write_tuple`): read or merge (deleted rows dropped) → divert → dedupe → (order) →
//! write; then verify (`verify_outputs`) → publish → report (`describe_files`). Runs on a
//! blocking thread; checks the cancel flag between batches; reports progress through a
//! callback. Memory: that of the read and write stages (one decoded batch plus the open
//! row group), independent of the number or size of the inputs.

use crate::budget::ReadLimits;
use crate::contain::guard;
use crate::dedupe::Deduper;
use crate::dictionary::key_roots;
use crate::divert::Diverter;
use crate::error::check_cancel;
use crate::error::Result;
use crate::group::{group, FirstPass, Groups};
use crate::iceberg::deletes::DeleteIndex;
use crate::iceberg::input::InputFile;
use crate::iceberg::partition::Partitioner;
use crate::keep::Carry;
use crate::options::Options;
use crate::order::{sorting_columns, OrderCheck};
use crate::plan::{build_plan_with, InputSummary, Plan};
pub use crate::report::Progress;
use crate::report::{build_report, data_file_location, CompactReport, FileReport, Outcome, Phase};
use crate::spill::SpillDir;
use crate::verify::{verify_as_written, verify_outputs};
use crate::write::{writer_properties, Outputs, Written, WrittenFile};
use crate::writing::{Call, Grouped, Stages, Writing};
use parquet::file::metadata::SortingColumn;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Runs a compaction. Any error (or a panic, see `run_guarded`) leaves no file behind.
/// `files` are paths (`String`, `&str`) or `InputFile`s with their deletes.
pub fn compact<F: Clone + Into<InputFile>>(
    files: &[F],
    opts: &Options,
    cancel: &AtomicBool,
    progress: &dyn Fn(&Progress),
) -> Result<CompactReport> {
    let files: Vec<InputFile> = files.iter().cloned().map(Into::into).collect();
    match crate::keep::resolve_plan(&files, opts)? {
        Some((chosen, carry)) => run(&chosen, opts, Some(&carry), cancel, progress),
        None => run(&files, opts, None, cancel, progress),
    }
}

/// `compact` of `files`, carrying a plan's kept files (`carry`) into the same output.
fn run(
    files: &[InputFile],
    opts: &Options,
    carry: Option<&Carry>,
    cancel: &AtomicBool,
    progress: &dyn Fn(&Progress),
) -> Result<CompactReport> {
    let started = Instant::now();
    check_cancel(cancel)?;
    if files.is_empty() {
        let kept = crate::keep::carry_alone(carry, opts, cancel)?;
        return Ok(empty_generation(opts, kept, started, progress));
    }
    progress(&Progress { phase: Phase::Plan, rows_read: 0, rows_written: 0, bytes_written: 0, files_written: 0 });
    let (mut plan, opts) = plan_call(files, opts)?;
    let opts = &opts;
    let mut keys = Keys::new(&plan, opts)?;
    let limits = ReadLimits::new(opts.batch_rows, opts.batch_bytes, opts.batch_bytes);
    if let (Some(deduper), Some(carry)) = (keys.deduper.as_mut(), carry) {
        let column = crate::unify::option_column(&plan.arrow_schema, "dedupeBy", deduper.column_name())?;
        crate::keep::seed_keys(deduper, plan.arrow_schema.field(column).data_type(), &carry.seed, &limits, cancel)?;
    }
    let deletes = DeleteIndex::load(&plan, &limits, cancel)?;
    // Columns whose values repeat are decoded as dictionaries from here on — all but the keys.
    let keep_plain = key_roots(&plan, opts, deletes.as_ref());
    crate::dictionary::choose(&mut plan, &keep_plain, limits.page_cap)?;
    // ...and the other strings and binaries with large pages as views into them; where rows
    // are sorted (gathering a sorted chunk copies them), the fat ones.
    match opts.sort_by {
        None => crate::views::choose(&mut plan, &keep_plain, limits.page_cap)?,
        Some(_) => crate::views::choose_for_sort(&mut plan, &keep_plain),
    }
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
            (
                tx,
                scope.spawn(move || {
                    // (it trails the writer: a lower priority leaves the cores to the stages
                    // the call waits on while they have work)
                    // SAFETY: setpriority on this thread's own id; a failure leaves it as it was.
                    unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 10) };
                    verify_as_written(rx, plan, limits, cancel)
                }),
            )
        });
        // Declared after `outputs`, so dropped (run files removed) before it.
        let mut spill = SpillDir::new(opts.tmp_dir.as_deref().unwrap_or(&opts.out_dir), &opts.file_name_prefix, &plan.memory);
        let call = Call { plan: &plan, opts, props: &props, deletes: deletes.as_ref(), cancel, progress };
        let mut writing = Writing::new(call, &grouped, &mut stages, &mut outputs, &mut spill);
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
            progress(&snapshot(Phase::Verify));
        }
        verify_outputs(verifier, &files_written, &plan, opts, &limits, &digest, cancel)?;
        check_cancel(cancel)?;
        outputs.publish(&files_written)?;
        if let Some(d) = stages.diverter.as_mut() {
            d.publish()?;
        }
        let kept = match carry {
            Some(carry) => crate::keep::carry(carry, opts, &mut outputs, cancel)?,
            None => Vec::new(),
        };
        check_cancel(cancel)?;
        let files = describe_files(files_written.iter().map(|f| f.report.clone()).collect(), opts, &stages, tuples);
        let outcome = Outcome {
            rows_read: totals.rows_read,
            rows_deleted: totals.rows_deleted,
            rows_written: totals.rows_written,
            duplicates_dropped: duplicates_dropped + stages.deduper.as_ref().map(|d| d.dropped).unwrap_or(0),
            diverted: stages.diverter.as_ref().map(|d| (d.path().display().to_string(), d.rows)),
            spill: spill.figures(),
            peak_memory_bytes: plan.memory.peak() as u64,
            kept,
            elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        };
        let report = build_report(Some(&plan), files, outcome);
        outputs.commit();
        if let Some(d) = stages.diverter.take() {
            d.commit();
        }
        progress(&snapshot(Phase::Done));
        Ok(report)
    })
}

/// An empty generation (everything expired, or a plan that rewrites nothing): nothing to read,
/// no data file to create; `kept`, the plan's kept files, were carried over.
fn empty_generation(opts: &Options, kept: Vec<(usize, FileReport)>, started: Instant, progress: &dyn Fn(&Progress)) -> CompactReport {
    progress(&Progress { phase: Phase::Done, rows_read: 0, rows_written: 0, bytes_written: 0, files_written: 0 });
    let diverted = opts.divert.as_ref().map(|d| (d.to.display().to_string(), 0));
    build_report(None, Vec::new(), Outcome { diverted, kept, elapsed_ms: started.elapsed().as_secs_f64() * 1000.0, ..Outcome::default() })
}

/// The plan of the inputs, and the options with the output codec resolved from them.
fn plan_call(files: &[InputFile], opts: &Options) -> Result<(Plan, Options)> {
    let mut plan = build_plan_with(files, opts.threads)?;
    plan.memory = crate::memory::Accountant::for_batch_bytes(opts.batch_bytes);
    // What is kept per input for the whole call counts in the call's memory, so that the
    // accounted peak grows with the file count as the process does.
    plan.inputs_memory = Some(plan.memory.hold(plan.inputs.iter().map(InputSummary::held_bytes).sum()));
    plan.open_runs = crate::os::open_runs_limit(crate::gate::Gate::global().limit());
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

/// What the report says of each file beyond its footer: location, sort order, partition.
fn describe_files(mut files: Vec<FileReport>, opts: &Options, stages: &Stages, tuples: Vec<Option<usize>>) -> Vec<FileReport> {
    for file in files.iter_mut() {
        file.location = data_file_location(opts.out_location.as_deref(), &file.path);
        if opts.sort_by.is_some() {
            // Every file of a sorted call is sorted end to end within its tuple.
            file.sort_order_id = opts.sort_order_id;
        }
    }
    if let Some(p) = &stages.partitioner {
        for (file, tuple) in files.iter_mut().zip(tuples) {
            if let Some(values) = tuple.and_then(|t| p.tuples.get(t)) {
                file.partition = values.clone();
            }
        }
    }
    files
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
