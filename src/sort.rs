//! Sort: sort one partition tuple's rows end to end by `sortBy`, within the heap bound.
//!
//! Rows arrive (already deduplicated, in `files` order) in batches. They are buffered up to
//! ¾ `batchBytes` decoded bytes (fat columns come as views into their pages, and the pages a
//! buffer points into count at their whole size: `views`). A tuple that fits is sorted in
//! memory and streamed to the writer. Otherwise each full buffer is sorted and spilled as a run of small chunks
//! (`sortjob`, `spill`) — with more than one thread, on a spill thread while the next buffer
//! fills, two at most at once where memory allows (a spill can take longer than a fill) — and
//! the runs are merged with a k-way merge on `arrow-row` keys. A merge opens a run
//! when it reaches the run's first key and drops it after its last row (each run knows both
//! keys), so what it holds is what the runs open at once hold (a chunk, the dictionaries the
//! run's chunks share, see `gather`, and a reader's state and frame, see `spill`), found by a
//! sweep over the runs' key ranges (`kmerge::most_open`): runs of inputs that come in time
//! slices overlap little, and however many there are they merge in one pass. Where that exceeds `batchBytes`
//! and a quarter of the fixed allowance, or more runs than `os::open_runs_limit` (256 at most,
//! fewer where the process has few descriptors: each open run is one) would be open at once, groups of consecutive runs are merged first, in as
//! few passes as needed (`next_merge`: each row is rewritten once per pass), each group within
//! half that room, so that with `threads` > 1 two merge at once (where a merge gives back the
//! runs it reads as it goes, `holes`: the temporary disk stays what one merge at a time needs).
//! Where the tuple's size, projected at each spill from the input bytes read so far, would make
//! more runs than a final merge takes, the buffers from then on hold their fat values squeezed
//! (`squeeze`: LZ4, ~4-5x on text), so that the runs that follow are that much longer and the
//! runs fit one merge; each chunk is restored as it is spilled (`sortjob`).
//! A merge gives the runs' dictionaries one union (`union::Union`, built run by run before the
//! merge opens any). Ties keep arrival order (the sort is stable and the merge prefers the
//! earlier run), so the output is deterministic, and the same for any `threads`: buffer and
//! chunk sizes do not depend on it.
//!
//! Memory bound: while buffering, the buffer filling and, with `threads` > 1, the two at most
//! being spilled (`SPILLS_AT_ONCE`: the second only while the call's accounted bytes leave
//! room for another buffer and the allocator's allowance), ¾ batchBytes each, squeezed or
//! not (a squeezed buffer holds more rows, not more bytes), their shared dictionaries (at most
//! batchBytes / 16 each), a chunk each, and the batch being read (`compact` reads
//! quarter-size batches while sorting) — no output file is open yet;
//! while merging, one chunk, the shared dictionaries, a reader's state and (for small chunks) a
//! frame per open run (at most `batchBytes` and 16 MiB together), the frame a chunk is read
//! from (compressed), the union of the runs' dictionaries (at most
//! batchBytes / 8), the rows picked for the next output batch (at most `batchBytes / 8`, plus
//! chunks already consumed but still referenced), and the keys of the chunks held. The
//! writer's open row group comes on top (see `write`). Two intermediate merges at once hold
//! half those runs each, and an output batch, a union and a run writer each: one of each more
//! than one merge, where the final merge's writer will hold its row group (no output file is
//! open yet).

use crate::batch::Batch;
use crate::budget::{decoded_size, held_bytes};
use crate::dictionary::{has_dictionary, plain_size, size_without_dictionary_values};
use crate::error::check_cancel;
use crate::error::{CompactError, Result};
use crate::kmerge;
use crate::memory::{Accountant, Reservation};
use crate::options::SortKey;
use crate::order::key_converter;
use crate::sortjob::{SortJob, CHUNK_SHARE};
use crate::spill::{Run, RunReader, RunWriter, SpillDir, RUN_READ_STATE};
use crate::squeeze::Squeeze;
use crate::union::{Seen, Union, UnionBuilder};
use crate::views::{has_views, without_views, Pinned};
use arrow_array::RecordBatch;
use arrow_row::{OwnedRow, RowConverter, Rows};
use arrow_schema::SchemaRef;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// How much a squeezed buffer is taken to hold beside a plain one (`squeeze`: LZ4 on fat text
/// values, measured ~4.7x on conversation histories), and the share of a final merge's fan-in
/// the runs aim below, for the switch (`Sorter::squeeze_now`).
const SQUEEZE_RATIO: f64 = 4.0;
const SQUEEZE_TARGET: f64 = 0.85;
/// Runs whose overlap tells whether the runs that follow will overlap too.
const SQUEEZE_JUDGE_RUNS: usize = 4;
/// Buffers spilled at once on spill threads (`threads` > 1) while the next fills: with one,
/// the buffer filling waits whenever a spill (sort, gather, compress) takes longer than a
/// fill, and decoding with it; measured on fat values unique to each row, two took the
/// phase that reads and spills from 3.8 s to 3.35 s.
const SPILLS_AT_ONCE: usize = 2;
/// Intermediate merges that share the final merge's room (and run at once with `threads` > 1).
const INTERMEDIATE_MERGES: usize = 2;
/// The rows gathered for one output batch are at most this fraction of `batchBytes`.
const OUTPUT_SHARE: usize = 8;
/// The union of the runs' dictionaries a merge gives them (`union::Union`) holds at most this
/// fraction of `batchBytes`.
const UNION_SHARE: usize = 8;

pub struct Sorter<'a> {
    schema: SchemaRef,
    sort_keys: Vec<SortKey>,
    keys: Vec<usize>,
    converter: RowConverter,
    budget: usize,
    batch_rows: usize,
    buffer: Vec<RecordBatch>,
    buffered_bytes: usize,
    /// The call's accounting of the buffer's batches.
    buffer_memory: Reservation,
    memory: Accountant,
    runs: Vec<Run>,
    spill: &'a mut SpillDir,
    cancel: &'a AtomicBool,
    /// Spill full buffers on threads of their own (`threads` > 1), `SPILLS_AT_ONCE` at most,
    /// while the next buffer fills.
    background: bool,
    pending: std::collections::VecDeque<std::thread::JoinHandle<Result<Run>>>,
    /// `threads` > 1: a run an intermediate merge writes is compressed on a thread of its own
    /// while the merge goes on (`spill::SpillDir::create`).
    parallel: bool,
    /// Rows and input bytes received, to attribute input bytes to output batches.
    rows: u64,
    input_bytes: f64,
    /// The input bytes the sort's rows come from, and the decoded bytes received so far: the
    /// partition's decoded size, projected at each spill, tells when buffers start holding fat
    /// values squeezed (`squeeze`, see `squeeze_now`), chosen on the buffer spilled then.
    expected_input_bytes: f64,
    decoded_received: f64,
    buffers_spilled: usize,
    squeeze_decided: bool,
    squeeze: Option<Arc<Squeeze>>,
    /// The pages the buffer's view columns point into (`views`).
    pinned: Pinned,
    /// The most runs a merge holds open at once (`os::open_runs_limit`).
    max_fan_in: usize,
}

impl<'a> Sorter<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        schema: &SchemaRef,
        keys: &[SortKey],
        budget: usize,
        batch_rows: usize,
        expected_input_bytes: f64,
        background: bool,
        spill: &'a mut SpillDir,
        cancel: &'a AtomicBool,
        memory: &Accountant,
    ) -> Result<Self> {
        let (columns, converter) = key_converter(schema, keys)?;
        Ok(Sorter {
            // (runs and what is gathered from them hold plain arrays where batches come with
            // views: `gather`)
            schema: Arc::new(without_views(schema)),
            sort_keys: keys.to_vec(),
            keys: columns.into_iter().map(|(i, _)| i).collect(),
            converter,
            budget: budget.max(1),
            batch_rows: batch_rows.max(1),
            buffer: Vec::new(),
            buffered_bytes: 0,
            buffer_memory: memory.reservation(),
            memory: memory.clone(),
            runs: Vec::new(),
            spill,
            cancel,
            background,
            parallel: background,
            pending: Default::default(),
            rows: 0,
            input_bytes: 0.0,
            expected_input_bytes,
            decoded_received: 0.0,
            buffers_spilled: 0,
            squeeze_decided: false,
            squeeze: None,
            pinned: Pinned::default(),
            max_fan_in: crate::os::MAX_OPEN_RUNS,
        })
    }

    /// At most `runs` runs open at once in any merge (each holds a file descriptor).
    pub fn with_open_runs(mut self, runs: usize) -> Self {
        self.max_fan_in = runs.max(2);
        self
    }

    pub fn push(&mut self, mut batch: Batch) -> Result<()> {
        let n = batch.batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        self.decoded_received += batch.decoded_bytes as f64;
        if let Some(s) = &self.squeeze {
            squeeze(s, &mut batch)?;
        }
        // A batch with view columns counts the pages it keeps (`views::Pinned`).
        batch.batch = Pinned::settle(batch.batch)?;
        let mut beyond = self.pinned.beyond_own(&batch.batch);
        if !self.buffer.is_empty()
            && self.buffered_bytes.saturating_add(batch.decoded_bytes.saturating_add_signed(beyond)) > self.buffer_bytes()
        {
            self.spill_buffer()?;
            // (the switch comes at a spill: the batch that starts the next buffer is squeezed
            // too — a buffer holds batches squeezed or not, never both)
            if let Some(s) = self.squeeze.as_ref().filter(|s| !s.squeezed(&batch.batch)) {
                squeeze(s, &mut batch)?;
            }
            beyond = self.pinned.beyond_own(&batch.batch);
        }
        let size = batch.decoded_bytes.saturating_add_signed(beyond);
        if has_views(&batch.batch) {
            batch.memory.resize(batch.memory.bytes().saturating_add_signed(beyond));
            self.pinned.admit(&batch.batch);
        }
        self.rows += n as u64;
        self.input_bytes += batch.input_bytes;
        self.buffered_bytes += size;
        self.buffer_memory.merge(batch.memory);
        self.buffer.push(batch.batch);
        Ok(())
    }

    /// Streams every row received, sorted, to `sink`.
    pub fn finish(mut self, mut sink: impl FnMut(Batch) -> Result<()>) -> Result<()> {
        let (rows, input_bytes) = (self.rows.max(1) as f64, self.input_bytes);
        let memory = self.memory.clone();
        let mut emit = |b: RecordBatch| {
            let share = b.num_rows() as f64 / rows;
            let decoded = decoded_size(&b);
            sink(Batch::made(b, decoded, input_bytes * share, 0, &memory))
        };
        let out_bytes = self.budget / OUTPUT_SHARE;
        if self.runs.is_empty() && self.pending.is_empty() {
            let buffer = std::mem::take(&mut self.buffer);
            let job = self.job(buffer, None);
            return job.emit_sorted(out_bytes, self.batch_rows, Some(self.cancel), |b, _| emit(b)).map(|_| ());
        }
        self.background = false;
        self.spill_buffer()?;
        self.wait_pending(0)?;
        let mut runs = std::mem::take(&mut self.runs);
        // Merge passes until the runs fit one merge: each pass merges groups of consecutive runs
        // (so ties keep arrival order), each into one run that takes the group's place, and no
        // more of them than needed; a run written in a pass is not merged again in that pass,
        // so every row is rewritten once per pass (log_fanin(runs) passes), not once per merge.
        let mut next = 0;
        // (a pass starts where a merge's group starts at or before the previous one's)
        let (mut passes, mut last_start): (u64, Option<usize>) = (1, None);
        loop {
            check_cancel(self.cancel)?;
            // A merged run's reader holds a chunk, its run's dictionaries, its frame (of more
            // chunks) and a reader's state: out of batchBytes and a quarter of the fixed allowance
            // (what the allocators keep beside the blocks in use needs room under the bound too).
            let held = |r: &Run| r.max_chunk_bytes + r.held_frame_bytes + r.dictionary_bytes + RUN_READ_STATE;
            let room = self.budget + crate::memory::FIXED_BYTES / 4;
            let most_held = runs.iter().map(held).max().unwrap_or(1).max(1);
            let fan_in = (room / most_held).clamp(2, self.max_fan_in);
            // (a merge opens a run only when it reaches the run's first key and drops it after
            // its last row: what it holds at once is what the runs whose keys overlap hold)
            let (open, open_bytes) = most_open(&runs, held);
            if runs.len() <= fan_in || (open <= self.max_fan_in && open_bytes <= room) {
                self.spill.merge_passes = self.spill.merge_passes.max(passes);
                return self.merge(&runs, out_bytes, |b, _| emit(b));
            }
            // Intermediate merges take half the room each, so that two can run at once (with
            // `threads` > 1, where a merge gives back the runs it reads as it goes: `holes`)
            // within what the final merge holds; the groups are the same for any `threads`.
            // (and two at once hold at most `max_fan_in` runs open together)
            let group_fan_in = (room / INTERMEDIATE_MERGES / most_held).clamp(2, (self.max_fan_in / INTERMEDIATE_MERGES).max(2));
            let (start, take) = next_merge(runs.len(), next, group_fan_in, fan_in);
            if last_start.is_none_or(|l| start <= l) {
                passes += 1;
            }
            last_start = Some(start);
            // The next merge of the pass, on runs after this group, when one is still needed.
            let left = runs.len() + 1 - take;
            let second = match next_merge(left, start + 1, group_fan_in, fan_in) {
                (s, t) if self.parallel && left > fan_in && s > start && self.spill.gives_back() => Some((s, t)),
                _ => None,
            };
            let group: Vec<Run> = runs.drain(start..start + take).collect();
            // (a merge beside another compresses its run itself: the two keep the cores busy)
            let background = self.parallel && second.is_none();
            let writer = self.spill.create(&self.schema, self.budget / CHUNK_SHARE, background)?;
            let merged = match second {
                None => {
                    next = start + 1;
                    vec![(start, self.merge_into_run(&group, writer, out_bytes)?)]
                }
                Some((s, t)) => {
                    // (in `runs` as drained, the second group starts one run earlier than once
                    // the first group's merged run takes its place)
                    let group2: Vec<Run> = runs.drain(s - 1..s - 1 + t).collect();
                    let writer2 = self.spill.create(&self.schema, self.budget / CHUNK_SHARE, false)?;
                    let this = &self;
                    let (first, second) = std::thread::scope(|scope| {
                        let other = std::thread::Builder::new()
                            .name("gencompact-merge".into())
                            .spawn_scoped(scope, || this.merge_into_run(&group2, writer2, out_bytes));
                        let first = this.merge_into_run(&group, writer, out_bytes);
                        let second = match other {
                            Ok(handle) => handle.join().unwrap_or_else(|_| Err(CompactError::Internal("a merge thread panicked".into()))),
                            Err(e) => Err(CompactError::Internal(format!("starting a merge thread: {e}"))),
                        };
                        (first, second)
                    });
                    next = s + 1;
                    vec![(s - 1, second?), (start, first?)]
                }
            };
            if merged.len() > 1 {
                self.spill.concurrent_merges += merged.len() as u64;
            }
            for (at, run) in merged {
                self.spill.bytes_spilled += run.bytes;
                self.spill.intermediate_merges += 1;
                runs.insert(at, run);
            }
        }
    }

    /// Merges `group` (consecutive runs) into one run written by `writer`, with the keys of its
    /// first and last rows: merged batches of the final merge's size — a batch costs work for
    /// every column — cut into chunks of the size the first runs have, so the merged run's
    /// readers hold no more than theirs and the fan-in of the next merge stays.
    fn merge_into_run(&self, group: &[Run], mut writer: RunWriter, out_bytes: usize) -> Result<Run> {
        let chunk_bytes = self.budget / CHUNK_SHARE;
        let (mut first, mut last) = (None, None);
        self.merge(group, out_bytes, |b, bytes| {
            if first.is_none() {
                first = Some(self.key_of(&b, 0)?);
            }
            last = Some(self.key_of(&b, b.num_rows().saturating_sub(1))?);
            for (rows, chunk_bytes) in chunk_rows(b.num_rows(), bytes, chunk_bytes) {
                writer.write(&b.slice(rows.start, rows.len()), chunk_bytes)?;
            }
            Ok(())
        })?;
        writer.key_range = first.zip(last);
        writer.finish()
    }

    /// How much one sort buffer holds: ¾ of `batchBytes`, so that one buffer can fill while
    /// the one before is spilled (with one thread too: the runs, and so the output bytes, do
    /// not depend on `threads`).
    fn buffer_bytes(&self) -> usize {
        (self.budget / 4 * 3).max(1)
    }

    /// What sorting `buffer` takes, owned, so that it can run on a thread of its own.
    fn job(&mut self, buffer: Vec<RecordBatch>, writer: Option<RunWriter>) -> SortJob {
        let memory = self.buffer_memory.split(usize::MAX);
        SortJob {
            buffer,
            memory,
            writer,
            schema: self.schema.clone(),
            sort_keys: self.sort_keys.clone(),
            budget: self.budget,
            squeeze: self.squeeze.clone(),
        }
    }

    /// Sorts the buffer and writes it out as a new run — on a spill thread when there are
    /// any, once fewer than `SPILLS_AT_ONCE` runs before it are still being spilled (fewer
    /// than one where memory is short).
    fn spill_buffer(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        check_cancel(self.cancel)?;
        let buffer = std::mem::take(&mut self.buffer);
        self.buffered_bytes = 0;
        self.pinned.clear();
        self.buffers_spilled += 1;
        // The switch: the fat columns of this buffer, held squeezed in the buffers that follow.
        let switch = match !self.squeeze_decided && self.squeeze_now() {
            true => {
                self.squeeze_decided = true;
                let mut sizes = Vec::new();
                buffer.iter().for_each(|b| Squeeze::measure(b, &mut sizes));
                buffer.first().and_then(|b| Squeeze::choose(&b.schema(), &sizes, &self.keys)).map(Arc::new)
            }
            false => None,
        };
        let writer = self.spill.create(&self.schema, self.budget / CHUNK_SHARE, false)?;
        let job = self.job(buffer, Some(writer));
        if job.squeeze.is_some() {
            self.spill.squeezed_runs += 1;
        }
        if switch.is_some() {
            self.squeeze = switch;
        }
        // Another spill runs beside the one still going only where the call's accounted bytes
        // leave room for the next buffer and what the allocator keeps beside them (`alloc`):
        // else this one waits, as with one spill at a time. (Runs join in the order they were
        // spilled, so ties keep arrival order; which runs there are does not depend on this.)
        let room = self.memory.available() >= self.buffer_bytes().saturating_add(crate::alloc::ALLOWANCE);
        self.wait_pending(if self.background && room { SPILLS_AT_ONCE - 1 } else { 0 })?;
        if self.background {
            let handle = std::thread::Builder::new()
                .name("gencompact-spill".into())
                .spawn(move || job.spill())
                .map_err(|e| CompactError::Internal(format!("starting the spill thread: {e}")))?;
            self.pending.push_back(handle);
        } else {
            let run = job.spill()?;
            self.add_run(run);
        }
        Ok(())
    }

    /// Whether the buffers from the next on hold fat values squeezed: when the runs the
    /// partition makes, by its decoded size projected from the input bytes read so far, would
    /// exceed `SQUEEZE_TARGET` of what a final merge takes unless the rest is squeezed after
    /// this buffer (at `SQUEEZE_RATIO`; where that is too late already, now), and at least half
    /// the runs so far are open at once in a merge. Depends on the inputs and options alone
    /// (batch boundaries do not depend on `threads`).
    fn squeeze_now(&self) -> bool {
        if self.expected_input_bytes <= 0.0 || self.input_bytes <= 0.0 {
            return false;
        }
        let projected = self.decoded_received * (self.expected_input_bytes / self.input_bytes).max(1.0);
        let buffer = self.buffer_bytes() as f64;
        let remaining = (projected - self.decoded_received).max(0.0);
        let target = nominal_fan_in(self.budget) as f64 * SQUEEZE_TARGET;
        let spilled = self.buffers_spilled as f64;
        // runs left without squeezing, and if the rest were squeezed after one more buffer
        let plain = spilled + remaining / buffer;
        let later = spilled + 1.0 + (remaining - buffer).max(0.0) / (buffer * SQUEEZE_RATIO);
        if plain <= target || later < target {
            return false;
        }
        // Only where the runs overlap: runs of inputs that come in time slices merge in one pass
        // however many there are (`most_open`). Judged on the runs before the last
        // `SPILLS_AT_ONCE` spilled (and this buffer's), which are done whether or not those are
        // still being written (`threads`).
        let done = self.buffers_spilled.saturating_sub(1 + SPILLS_AT_ONCE).min(self.runs.len());
        if done < SQUEEZE_JUDGE_RUNS {
            return false;
        }
        let (open, _) = most_open(&self.runs[..done], |_| 0);
        open * 2 >= done
    }

    /// Waits for the runs being spilled on spill threads, oldest first, until at most `left`
    /// are.
    fn wait_pending(&mut self, left: usize) -> Result<()> {
        while self.pending.len() > left {
            let Some(handle) = self.pending.pop_front() else { break };
            let run = handle.join().map_err(|_| CompactError::Internal("the spill thread panicked".into()))??;
            self.add_run(run);
        }
        Ok(())
    }

    fn add_run(&mut self, run: Run) {
        self.spill.bytes_spilled += run.bytes;
        self.runs.push(run);
    }

    /// The sort key of row `row` of `batch`.
    fn key_of(&self, batch: &RecordBatch, row: usize) -> Result<OwnedRow> {
        Ok(self.convert(&batch.slice(row, 1))?.row(0).owned())
    }

    fn convert(&self, batch: &RecordBatch) -> Result<Rows> {
        let columns: Vec<_> = self.keys.iter().map(|&i| batch.column(i).clone()).collect();
        self.converter.convert_columns(&columns).map_err(|e| CompactError::Internal(format!("encoding sort keys: {e}")))
    }

    /// K-way merge of sorted runs into `out` (`kmerge`), in batches of about `out_bytes`
    /// decoded bytes and at most `batchRows` rows; `out` gets each batch with its decoded size.
    /// A run is opened when the merge reaches its first key and dropped after its last row.
    fn merge(&self, runs: &[Run], out_bytes: usize, mut out: impl FnMut(RecordBatch, usize) -> Result<()>) -> Result<()> {
        // The frame a chunk is read from, compressed (one at a time; decompressed, it is the
        // chunk's own memory).
        let _frame_memory = self.memory.hold(runs.iter().map(|r| r.max_frame_bytes).max().unwrap_or(0));
        let union = self.union(runs)?;
        let _union_memory = self.memory.hold(union.bytes());
        let union = &union;
        let firsts: Vec<Option<OwnedRow>> = runs.iter().map(|r| r.key_range.as_ref().map(|(first, _)| first.clone())).collect();
        let open = move |r: usize| -> Result<Spilled<'_>> {
            let run = runs.get(r).ok_or_else(|| CompactError::Internal("merge run out of range".into()))?;
            // A run's reader holds its state (`RUN_READ_STATE`), its frame (of more chunks) and the
            // dictionaries its chunks share.
            let state = self.memory.hold(RUN_READ_STATE + run.held_frame_bytes + run.dictionary_bytes);
            Ok(Spilled { reader: run.open_consuming()?, sorter: self, _state: state, run: r, union, seen: None })
        };
        let limits = kmerge::Limits { batch_rows: self.batch_rows, out_bytes, measured: true };
        let empty = || RecordBatch::new_empty(self.schema.clone());
        kmerge::merge(&firsts, open, limits, empty, self.cancel, |m| {
            if m.batch.num_rows() > 0 {
                out(m.batch, m.decoded_bytes)
            } else {
                Ok(())
            }
        })
    }

    /// The union of the runs' dictionaries (`union::Union`), from each run's first chunk, read
    /// one run at a time before the merge opens any (none without dictionary columns).
    fn union(&self, runs: &[Run]) -> Result<Union> {
        let mut builder = UnionBuilder::new(self.budget / UNION_SHARE);
        if !self.schema.fields().iter().any(|f| has_dictionary(f.data_type())) {
            return Ok(builder.finish());
        }
        for run in runs {
            check_cancel(self.cancel)?;
            let _state = self.memory.hold(RUN_READ_STATE + run.held_frame_bytes + run.dictionary_bytes + run.max_chunk_bytes);
            let first = run.open()?.next_chunk()?;
            builder.add(first.as_ref());
        }
        Ok(builder.finish())
    }
}

/// What a merge that opens runs at their first key holds at once (`kmerge::most_open`): the
/// most runs open together and the most their readers hold (`held`); a run without a key range
/// is open throughout.
fn most_open(runs: &[Run], held: impl Fn(&Run) -> usize) -> (usize, usize) {
    let (unknown, known): (Vec<&Run>, Vec<&Run>) = runs.iter().partition(|r| r.key_range.is_none());
    let (open, bytes) =
        kmerge::most_open(known.iter().filter_map(|r| r.key_range.as_ref().map(|(first, last)| (first, last, held(r) as u64))));
    (open + unknown.len(), (bytes as usize).saturating_add(unknown.iter().map(|r| held(r)).sum()))
}

impl Drop for Sorter<'_> {
    /// A run still being spilled is waited for, so that its file is gone (or merged) before
    /// the spill directory is.
    fn drop(&mut self) {
        for handle in self.pending.drain(..) {
            let _ = handle.join();
        }
    }
}

/// The runs a final merge of runs of chunks of `chunk_bytes` takes, aside from their
/// dictionaries and frames (`Sorter::finish` measures those): what the squeeze switch aims below.
fn nominal_fan_in(budget: usize) -> usize {
    ((budget + crate::memory::FIXED_BYTES / 4) / (budget / CHUNK_SHARE + RUN_READ_STATE).max(1)).clamp(2, crate::os::MAX_OPEN_RUNS)
}

/// `batch` with its fat columns squeezed, accounted as it now holds.
fn squeeze(s: &Squeeze, batch: &mut Batch) -> Result<()> {
    let squeezed = s.squeeze(&batch.batch)?;
    let held = held_bytes(&squeezed);
    batch.memory.resize(batch.memory.bytes().saturating_add(held));
    batch.batch = squeezed;
    batch.memory.resize(held);
    batch.decoded_bytes = decoded_size(&batch.batch);
    Ok(())
}

/// The next intermediate merge of `runs` runs when `fan_in` is the most one merge takes and
/// `next` is the first run not written in the current pass: (first run, how many). Groups are
/// consecutive runs (ties keep arrival order); a run written in this pass is not merged again
/// before the next pass, so each row is rewritten once per pass; and no more runs are merged
/// than needed to leave `fan_in` for the final merge (merging k runs leaves k - 1 fewer).
fn next_merge(runs: usize, next: usize, group_fan_in: usize, fan_in: usize) -> (usize, usize) {
    let start = if next + 1 >= runs { 0 } else { next };
    (start, group_fan_in.min(runs - start).min(runs.saturating_sub(fan_in) + 1))
}

/// `rows` rows of `bytes` decoded bytes cut into consecutive ranges of about `chunk_bytes` each
/// (at least one row), by their average size — as `SortJob::emit_sorted` cuts a sorted buffer —
/// with each range's bytes.
fn chunk_rows(rows: usize, bytes: usize, chunk_bytes: usize) -> impl Iterator<Item = (std::ops::Range<usize>, usize)> {
    let per_row = bytes as f64 / rows.max(1) as f64;
    let step = ((chunk_bytes as f64 / per_row.max(1.0)) as usize).max(1);
    (0..rows).step_by(step).map(move |start| {
        let end = (start + step).min(rows);
        (start..end, (per_row * (end - start) as f64) as usize)
    })
}

/// A spilled run as the merge reads it.
struct Spilled<'s> {
    reader: RunReader,
    sorter: &'s Sorter<'s>,
    _state: Reservation,
    run: usize,
    union: &'s Union,
    /// The dictionaries of the run's first chunk, once read.
    seen: Option<Seen>,
}

impl kmerge::RunSource for Spilled<'_> {
    fn next_chunk(&mut self) -> Result<Option<kmerge::Chunk>> {
        let Some(batch) = self.reader.next_chunk()? else { return Ok(None) };
        let seen = self.seen.get_or_insert_with(|| self.union.seen(&batch));
        let batch = self.union.remap(self.run, seen, batch)?;
        let rows = batch.num_rows().max(1) as f64;
        // (an IPC chunk's arrays are slices of one message buffer: counted by their slices, its
        // run's shared dictionaries once per run, in the reader's state and the fan-in)
        let held = size_without_dictionary_values(&batch);
        Ok(Some(kmerge::Chunk {
            keys: self.sorter.convert(&batch)?,
            held_per_row: held as f64 / rows,
            expanded_per_row: plain_size(&batch) as f64 / rows,
            input_per_row: 0.0,
            deleted: 0,
            memory: self.sorter.memory.hold(held),
            batch,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{chunk_rows, next_merge};

    #[test]
    fn a_merged_batch_is_cut_into_chunks_of_the_first_runs_size() {
        // 10 rows of 100 bytes into chunks of 250: 2 rows each; a chunk is never empty.
        let cut: Vec<_> = chunk_rows(10, 1000, 250).collect();
        assert_eq!(cut, vec![(0..2, 200), (2..4, 200), (4..6, 200), (6..8, 200), (8..10, 200)]);
        assert_eq!(chunk_rows(3, 3000, 10).collect::<Vec<_>>(), vec![(0..1, 1000), (1..2, 1000), (2..3, 1000)]);
        assert_eq!(chunk_rows(4, 400, 1 << 20).collect::<Vec<_>>(), vec![(0..4, 400)]);
        assert_eq!(chunk_rows(0, 0, 100).count(), 0);
    }

    /// Runs merged as `next_merge` plans (groups of at most `group`, until `fan_in` are
    /// left), each run a list of (original run, times rewritten), in order; returns the runs
    /// left for the final merge.
    fn simulate(runs: usize, group: usize, fan_in: usize) -> Vec<Vec<(usize, usize)>> {
        let mut runs: Vec<Vec<(usize, usize)>> = (0..runs).map(|r| vec![(r, 0)]).collect();
        let mut next = 0;
        while runs.len() > fan_in {
            let (start, take) = next_merge(runs.len(), next, group, fan_in);
            assert!(take >= 2 && take <= group && start + take <= runs.len(), "{start} + {take} of {}", runs.len());
            let merged: Vec<(usize, usize)> = runs.drain(start..start + take).flatten().map(|(r, n)| (r, n + 1)).collect();
            runs.insert(start, merged);
            next = start + 1;
        }
        runs
    }

    #[test]
    fn merge_passes_rewrite_each_row_once_per_pass_and_keep_arrival_order() {
        for (runs, fan_in) in [(127, 74), (127, 44), (508, 44), (1000, 10), (40, 2), (5, 4), (3, 3), (513, 165), (513, 4)] {
            for group in [fan_in, (fan_in / 2).max(2)] {
                let left = simulate(runs, group, fan_in);
                assert!(left.len() <= fan_in);
                let order: Vec<usize> = left.iter().flatten().map(|(r, _)| *r).collect();
                assert_eq!(order, (0..runs).collect::<Vec<_>>(), "{runs} runs, fan-in {fan_in}: arrival order kept");
                // passes before the final merge: the fewest that bring `runs` down to `fan_in`
                let passes = (0..).find(|p| fan_in * group.pow(*p) >= runs).unwrap_or(0) as usize;
                let most = left.iter().flatten().map(|(_, n)| *n).max().unwrap_or(0);
                assert!(most <= passes, "{runs} runs, groups of {group}, fan-in {fan_in}: a row rewritten {most} times, {passes} passes");
                // no more rows rewritten than needed: the runs merged are as few as leave `fan_in`
                let rewritten = left.iter().filter(|r| r.len() > 1).map(|r| r.len()).sum::<usize>();
                let merges = left.iter().filter(|r| r.len() > 1).count();
                assert_eq!(rewritten - merges, runs - left.len(), "{runs} runs, groups of {group}");
                if passes == 1 {
                    assert_eq!(left.len(), fan_in, "{runs} runs, groups of {group}: merged down to the fan-in, no further");
                }
            }
        }
        // 127 runs at fan-in 74: one merge of 54 runs suffices
        assert_eq!(next_merge(127, 0, 74, 74), (0, 54));
        // in groups of at most 37: one of 37 and one of 18
        assert_eq!(next_merge(127, 0, 37, 74), (0, 37));
        assert_eq!(next_merge(91, 1, 37, 74), (1, 18));
    }
}
