//! Read: decode the inputs, in `files` order, into Arrow batches of bounded size.
//!
//! Memory bound: one decoded batch holds at most `batchRows` rows and, by estimate, the
//! decoded bytes its limits give (a quarter of `batchBytes` for the data: `writing`; a row
//! larger than that is a batch of one), and no spare capacity (`shrink`). The rows per batch
//! are chosen per row group *before* decoding from its metadata: the uncompressed size per
//! row, the unencoded byte-array sizes when the writer recorded them, and for dictionary-
//! encoded byte arrays the largest dictionary entry (read from the dictionary page), since a
//! fat value repeated on every row costs little in Parquet but its full size per row once
//! decoded. Strings and binaries decode with 64-bit offsets, so no array can overflow — but
//! those in large pages that no option uses as a key, when rows are not sorted, decode as views
//! into their pages (`views`): a batch of them holds its views and points into pages the reader
//! holds anyway.
//! Besides the batch, the reader holds one decompressed page and one dictionary per column,
//! the dictionary only while the pages encoded with it are read (`chunks`); a large plain
//! page of a string or binary column, or a large dictionary its pages use in order, only a
//! slice at a time (`streamed`).
//!
//! Rows the table deleted (`iceberg::deletes`: position deletes, deletion vectors, equality
//! deletes) are dropped here, so no later stage ever sees them: deleted positions (and later
//! dedupe occurrences a first pass found) are skipped with a row selection, never decoded;
//! equality-deleted rows are filtered out and counted per batch. Row groups shared with other
//! partition tuples are filtered to the tuple being written in the same pass.
//!
//! Rows are counted against the footer: a row group's reader must yield every row (every
//! selected row) its footer declares before it ends, else the input is corrupt — a reading that
//! lost rows is an error, not a smaller output (its pages are counted too: `pagecheck`).

use crate::batch::Batch;
use crate::budget::{decoded_size, estimate_row_bytes, held_bytes, rows_per_batch, ReadLimits};
use crate::contain::contain;
use crate::dictionary::schema_with_dictionaries;
use crate::error::{check_cancel, CompactError, Result};
use crate::guard::GuardedInput;
use crate::iceberg::deletes::DeleteIndex;
use crate::memory::Reservation;
use crate::pagecheck::Faults;
use crate::plan::{open_input, parse_footer, reader_metadata_for, wide_offsets_schema, InputSummary, Plan};
use crate::testhooks::disabled;
use crate::unify::same_field;
use crate::unify::widen_array;
use arrow_array::BooleanArray;
use arrow_array::{make_array, new_null_array, ArrayRef};
use arrow_array::{Array, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReader};
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::arrow::ProjectionMask;
use roaring::RoaringTreemap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Which rows of a batch to keep.
pub type RowSelect<'a> = dyn FnMut(&RecordBatch) -> Result<Vec<bool>> + Send + 'a;

/// An open input: its index, file, reader metadata and (for another schema) its column map.
type OpenInput = (usize, GuardedInput, ArrowReaderMetadata, Option<Vec<Option<usize>>>);

/// What the read stage applies to each decoded batch before handing it on.
#[derive(Default)]
pub struct RowFilters<'a> {
    /// The table's deletes: deleted rows are dropped (and counted in `Batch::deleted`).
    pub deletes: Option<&'a DeleteIndex>,
    /// For row groups that also hold other partition tuples: which rows to keep. Deleted rows
    /// are counted only among the kept ones.
    pub select: Option<&'a mut RowSelect<'a>>,
    /// Per input: positions of rows a first pass found to be later occurrences of a dedupe key.
    pub duplicates: Option<&'a [Option<RoaringTreemap>]>,
    /// Report each row's position in its input (`Batch::positions`).
    pub positions: bool,
}

/// How long decoding waits for the call's other stages to make room before it decodes anyway.
const READ_WAIT: std::time::Duration = std::time::Duration::from_millis(10);

/// One row group of one input, as a unit of reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Index into `Plan::inputs`.
    pub input: usize,
    pub row_group: usize,
    /// The row group also holds rows of other partition tuples: filter its batches.
    pub mixed: bool,
}

/// Every row group of every input, in order.
pub fn all_segments(plan: &Plan) -> Vec<Segment> {
    plan.inputs
        .iter()
        .enumerate()
        .flat_map(|(input, summary)| (0..summary.row_groups).map(move |row_group| Segment { input, row_group, mixed: false }))
        .collect()
}

/// Streams the rows of `segments`, in order, to `sink`, without the rows `filters` drop; with
/// `roots`, only those top-level columns are decoded (and those equality deletes need).
pub fn read_segments(
    plan: &Plan,
    segments: &[Segment],
    roots: Option<&[usize]>,
    limits: &ReadLimits,
    cancel: &AtomicBool,
    filters: RowFilters,
    mut sink: impl FnMut(&Segment, Batch) -> Result<()>,
) -> Result<()> {
    let mut reader = SegmentReader::new(plan, segments, roots, limits, cancel, filters);
    while let Some((segment, batch)) = reader.next_batch()? {
        sink(segment, batch)?;
    }
    Ok(())
}

/// `read_segments` as a pull: each call to `next_batch` decodes the next batch. Holds one open
/// input and one row group reader at a time.
pub struct SegmentReader<'a, 'f> {
    plan: &'a Plan,
    segments: &'a [Segment],
    roots: Option<&'a [usize]>,
    limits: &'a ReadLimits,
    cancel: &'a AtomicBool,
    filters: RowFilters<'f>,
    /// The next segment to open.
    next: usize,
    open: Option<OpenInput>,
    current: Option<RowGroupReader<'a>>,
    /// The open row group's column readers' codecs, by estimate (their pages are accounted by
    /// the input as their headers are read: `GuardedInput::account_pages`).
    pages: Reservation,
}

/// The row group being read.
struct RowGroupReader<'a> {
    segment: &'a Segment,
    reader: ParquetRecordBatchReader,
    skip: Skip,
    rg_start: u64,
    rows: usize,
    rg_bytes: f64,
    batch_size: usize,
    /// Decoded bytes per row, by estimate (what is reserved before a batch is decoded).
    per_row: f64,
    /// For an input whose schema differs from the unified one: each output column's column in
    /// the decoded batch (`None`: nulls), and the (unified, projected) schema to adapt to.
    adapt: Option<(Vec<Option<usize>>, SchemaRef)>,
    /// Rows decoded so far (an index into the selected rows).
    done: usize,
    /// The first page its page checks refused (`pagecheck`).
    faults: Faults,
}

impl RowGroupReader<'_> {
    /// The reader has ended: it must have decoded every row the footer declares for the row
    /// group (every selected one, with a selection), else a reading lost rows.
    fn all_read(&self, path: &Path) -> Result<()> {
        let expected = self.skip.selection.as_ref().map_or(self.rows, RowSelection::row_count);
        if self.done != expected && !disabled("rows") {
            let fault = self.faults.get();
            return Err(CompactError::corrupt(
                path,
                fault.map(|f| f.column.clone()),
                format!(
                    "row group {}: {} rows decoded where its footer declares {} rows ({expected} of them read)",
                    self.segment.row_group, self.done, self.rows
                ),
            ));
        }
        Ok(())
    }

    /// A decode failed: the file and column of the page the checks refused, else found by
    /// `diagnose`.
    fn failed(&self, path: &Path, file: &GuardedInput, meta: &ArrowReaderMetadata, msg: String) -> CompactError {
        let rg = self.segment.row_group;
        match self.faults.get() {
            Some(f) => CompactError::corrupt(path, Some(f.column.clone()), format!("row group {rg}: {}", f.msg)),
            None => diagnose(path, file, meta, rg, self.batch_size, msg),
        }
    }
}

impl<'a, 'f> SegmentReader<'a, 'f> {
    pub fn new(
        plan: &'a Plan,
        segments: &'a [Segment],
        roots: Option<&'a [usize]>,
        limits: &'a ReadLimits,
        cancel: &'a AtomicBool,
        filters: RowFilters<'f>,
    ) -> Self {
        SegmentReader {
            plan,
            segments,
            roots,
            limits,
            cancel,
            filters,
            next: 0,
            open: None,
            current: None,
            pages: plan.memory.reservation(),
        }
    }

    /// The next batch and the segment it comes from; `None` after the last segment.
    pub fn next_batch(&mut self) -> Result<Option<(&'a Segment, Batch)>> {
        loop {
            check_cancel(self.cancel)?;
            if self.current.is_none() {
                self.pages.free();
                if let Some((_, file, ..)) = &self.open {
                    file.release_pages();
                }
                let Some(segment) = self.segments.get(self.next) else { return Ok(None) };
                self.next += 1;
                self.current = self.open_segment(segment)?;
                continue;
            }
            let (Some(rg), Some((_, file, meta, _))) = (self.current.as_mut(), self.open.as_ref()) else { continue };
            let input = self.plan.inputs.get(rg.segment.input).ok_or_else(|| CompactError::Internal("segment of no input".into()))?;
            let path = input.path.as_path();
            // The batch is reserved before it is decoded: while the call's other stages hold
            // too much, decoding waits a little for them to hand bytes back (a writer flushing
            // its row group, a run leaving for disk); it never waits for long, as the stage it
            // waits for may be waiting for this batch.
            let estimate = (rg.per_row * rg.batch_size as f64) as usize;
            let memory = &self.plan.memory;
            let since = std::time::Instant::now();
            let cancel = self.cancel;
            memory.wait_for(estimate, || since.elapsed() >= READ_WAIT || cancel.load(std::sync::atomic::Ordering::Relaxed));
            let mut held = memory.hold(estimate);
            let batch = match contain(|| rg.reader.next()) {
                Ok(None) => {
                    rg.all_read(path)?;
                    self.current = None;
                    continue;
                }
                Ok(Some(Ok(b))) => b,
                Ok(Some(Err(e))) => return Err(rg.failed(path, file, meta, e.to_string())),
                Err(panic) => return Err(rg.failed(path, file, meta, panic)),
            };
            let batch = match &rg.adapt {
                Some((map, schema)) => adapt(path, batch, map, schema)?,
                None => batch,
            };
            let decoded_rows = batch.num_rows();
            let positions = self.filters.positions.then(|| rg.skip.positions(rg.rg_start, rg.done, decoded_rows));
            rg.done += decoded_rows;
            let deleted = match self.filters.deletes {
                Some(d) => d.equality_deleted(rg.segment.input, &batch)?,
                None => None,
            };
            let selected = match (&mut self.filters.select, rg.segment.mixed) {
                (Some(select), true) => Some(select(&batch)?),
                _ => None,
            };
            let dropped = drop_rows(batch, selected.as_deref(), deleted.as_deref(), positions)?;
            let n = dropped.batch.num_rows();
            if n == 0 && dropped.deleted == 0 {
                continue;
            }
            let decoded_bytes = decoded_size(&dropped.batch);
            let input_bytes = rg.rg_bytes * n as f64 / rg.rows as f64;
            let Dropped { batch, deleted, positions } = dropped;
            let mut held_now = held_bytes(&batch);
            let batch = if held_now > decoded_bytes.saturating_add(crate::alloc::LARGE) {
                let shrunk = shrink(batch)?;
                held_now = held_bytes(&shrunk);
                shrunk
            } else {
                batch
            };
            held.resize(held_now);
            return Ok(Some((rg.segment, Batch { batch, decoded_bytes, input_bytes, deleted, positions, memory: held })));
        }
    }

    /// Opens `segment`'s row group (and its input, unless already open); `None` when none of
    /// its rows is to be read.
    fn open_segment(&mut self, segment: &'a Segment) -> Result<Option<RowGroupReader<'a>>> {
        let (plan, limits, filters) = (self.plan, self.limits, &self.filters);
        let input = plan.inputs.get(segment.input).ok_or_else(|| CompactError::Internal("segment of no input".into()))?;
        let path = input.path.as_path();
        if self.open.as_ref().map(|(i, ..)| *i) != Some(segment.input) {
            drop(self.open.take()); // one open input at a time
            let mut file = open_input(path, limits.page_cap)?;
            file.account_pages(&plan.memory);
            let (meta, adapter) = reader_metadata(plan, input, &file)?;
            self.open = Some((segment.input, file, meta, adapter));
        }
        let Some((_, file, meta, adapter)) = self.open.as_ref() else { return Ok(None) };
        let descr = meta.metadata().file_metadata().schema_descr_ptr();
        let rg = meta
            .metadata()
            .row_groups()
            .get(segment.row_group)
            .ok_or_else(|| CompactError::corrupt(path, None, "row group missing (file changed while the call was running)"))?;
        let rows = usize::try_from(rg.num_rows()).unwrap_or(0);
        if rows == 0 {
            return Ok(None);
        }
        // Row position of the row group's first row in its file (what deletes reference).
        let rg_start: u64 = meta.metadata().row_groups()[..segment.row_group].iter().map(|r| r.num_rows().max(0) as u64).sum();
        let skip = Skip::plan(
            rg_start,
            rows,
            filters.deletes.and_then(|d| d.positions(segment.input)),
            filters.duplicates.and_then(|d| d.get(segment.input)).and_then(|b| b.as_ref()),
            filters.positions,
        );
        if skip.selection.as_ref().is_some_and(|s| !s.selects_any()) {
            return Ok(None);
        }
        let roots: Option<Vec<usize>> = self.roots.map(|r| {
            let mut r = r.to_vec();
            for name in filters.deletes.map(|d| d.key_columns(segment.input)).unwrap_or_default() {
                if let Ok(i) = plan.arrow_schema.index_of(name) {
                    r.push(i);
                }
            }
            r.sort_unstable();
            r.dedup();
            r
        });
        let roots = roots.as_deref();
        // An input whose schema differs from the unified one is decoded into its own schema
        // (only the columns of `roots` it has), then adapted to the unified one (`adapt`).
        let (own_roots, adapt_to) = match (roots, adapter) {
            (_, None) => (roots.map(<[usize]>::to_vec), None),
            (None, Some(map)) => (None, Some((map.clone(), plan.arrow_schema.clone()))),
            (Some(r), Some(map)) => {
                let mut own: Vec<usize> = r.iter().filter_map(|&u| map.get(u).copied().flatten()).collect();
                own.sort_unstable();
                own.dedup();
                // each of `roots` (ascending, as a projection keeps them) from the projected batch
                let projected_map = r.iter().map(|&u| map.get(u).copied().flatten().and_then(|f| own.binary_search(&f).ok())).collect();
                let schema =
                    plan.arrow_schema.project(r).map_err(|e| CompactError::Internal(format!("projecting the unified schema: {e}")))?;
                (Some(own), Some((projected_map, Arc::new(schema))))
            }
        };
        let own_roots = own_roots.as_deref();
        let leaves: Option<Vec<bool>> =
            own_roots.map(|r| (0..descr.num_columns()).map(|l| r.contains(&descr.get_column_root_idx(l))).collect());
        let per_row = estimate_row_bytes(file, rg, leaves.as_deref(), &plan.dictionary_columns);
        // The pages of the row group before are gone; this one's are accounted as they are read.
        file.release_pages();
        self.pages.resize(crate::budget::reader_state(rg, leaves.as_deref()));
        let mut batch_size = rows_per_batch(per_row, limits).min(rows);
        if skip.selection.is_some() {
            // parquet-rs applies a scattered selection by decoding whole batches and filtering
            // them: a decoded batch and its filtered copy are alive together, so each is half.
            batch_size = batch_size.div_ceil(2);
        }
        let mask = match own_roots {
            Some(r) => ProjectionMask::roots(&descr, r.iter().copied()),
            None => ProjectionMask::all(),
        };
        let handle = file.try_clone().map_err(|e| CompactError::input_open(path, &e))?;
        // (its column chunks as `chunks` hands them over: a dictionary is let go at a fallback)
        let (reader, faults) = crate::chunks::checked_reader(handle, meta, segment.row_group, mask, batch_size, skip.selection.clone())
            .map_err(|e| CompactError::corrupt(path, None, e))?;
        let rg_bytes = rg.compressed_size().max(0) as f64;
        Ok(Some(RowGroupReader { segment, reader, skip, rg_start, rows, rg_bytes, batch_size, per_row, done: 0, adapt: adapt_to, faults }))
    }
}

/// The rows of one row group that are never decoded: positions the table deleted (position
/// deletes, deletion vectors) and later occurrences of a dedupe key found by a first pass.
/// (The call counts them from the bitmaps, once: a row group may be read for several tuples,
/// or for none when all its rows are skipped.)
struct Skip {
    selection: Option<RowSelection>,
    /// The positions of the selected rows, when asked for and some rows are skipped.
    kept: Option<Vec<u64>>,
}

impl Skip {
    fn plan(start: u64, rows: usize, deleted: Option<&RoaringTreemap>, duplicates: Option<&RoaringTreemap>, want_positions: bool) -> Skip {
        let end = start + rows as u64;
        let any = |b: Option<&RoaringTreemap>| b.is_some_and(|b| b.range_cardinality(start..end) > 0);
        if !any(deleted) && !any(duplicates) {
            return Skip { selection: None, kept: None };
        }
        let mut runs: Vec<RowSelector> = Vec::new();
        let mut kept = want_positions.then(Vec::new);
        for p in start..end {
            let is_deleted = deleted.is_some_and(|b| b.contains(p));
            let is_dup = !is_deleted && duplicates.is_some_and(|b| b.contains(p));
            let skip = is_deleted || is_dup;
            if !skip {
                if let Some(k) = kept.as_mut() {
                    k.push(p);
                }
            }
            match runs.last_mut() {
                Some(last) if last.skip == skip => last.row_count += 1,
                _ => runs.push(if skip { RowSelector::skip(1) } else { RowSelector::select(1) }),
            }
        }
        Skip { selection: Some(RowSelection::from(runs)), kept }
    }

    /// Positions of the `n` selected rows after the first `done`.
    fn positions(&self, start: u64, done: usize, n: usize) -> Vec<u64> {
        match &self.kept {
            Some(kept) => kept.get(done..(done + n).min(kept.len())).unwrap_or_default().to_vec(),
            None => (start + done as u64..start + (done + n) as u64).collect(),
        }
    }
}

struct Dropped {
    batch: RecordBatch,
    deleted: u64,
    positions: Vec<u64>,
}

/// The rows of `batch` that `selected` keeps (all without it) and `deleted` does not mark; how
/// many selected rows `deleted` removed; the kept rows' `positions`.
fn drop_rows(batch: RecordBatch, selected: Option<&[bool]>, deleted: Option<&[bool]>, positions: Option<Vec<u64>>) -> Result<Dropped> {
    let n = batch.num_rows();
    if selected.is_none() && deleted.is_none() {
        return Ok(Dropped { batch, deleted: 0, positions: positions.unwrap_or_default() });
    }
    let mut gone = 0u64;
    let mut kept_positions = Vec::new();
    let keep: BooleanArray = (0..n)
        .map(|i| {
            let chosen = selected.is_none_or(|s| s.get(i).copied().unwrap_or(false));
            let is_deleted = deleted.is_some_and(|d| d.get(i).copied().unwrap_or(false));
            gone += u64::from(chosen && is_deleted);
            let kept = chosen && !is_deleted;
            if let (true, Some(p)) = (kept, positions.as_ref().and_then(|p| p.get(i))) {
                kept_positions.push(*p);
            }
            Some(kept)
        })
        .collect();
    let kept =
        arrow_select::filter::filter_record_batch(&batch, &keep).map_err(|e| CompactError::Internal(format!("dropping rows: {e}")))?;
    Ok(Dropped { batch: kept, deleted: gone, positions: kept_positions })
}

/// An input's reader metadata decoding into the plan's Arrow schema when its Parquet schema is
/// the unified one; otherwise into its own schema, with the map from each unified top-level
/// field to the input's (`None`: the input lacks it).
fn reader_metadata(plan: &Plan, input: &InputSummary, file: &GuardedInput) -> Result<(ArrowReaderMetadata, Option<Vec<Option<usize>>>)> {
    let path = input.path.as_path();
    let (parsed, _) = parse_footer(path, file, Some(input.footer_hash))?;
    let theirs = parsed.file_metadata().schema_descr().root_schema().get_fields().to_vec();
    let unified = plan.parquet_schema.root_schema().get_fields();
    let (hint, adapter) = if theirs.as_slice() == unified {
        (plan.arrow_schema.clone(), None)
    } else {
        let own = reader_metadata_for(path, parsed.clone(), None)?;
        let map: Vec<Option<usize>> = unified.iter().map(|u| theirs.iter().position(|t| same_field(u, t))).collect();
        if theirs.iter().any(|t| !unified.iter().any(|u| same_field(u, t))) {
            return Err(CompactError::corrupt(path, None, "schema changed while the call was running"));
        }
        // (its columns decoded as dictionaries as in the unified schema, so that `adapt` keeps them)
        let (hint, _) = schema_with_dictionaries(&wide_offsets_schema(own.schema()), &plan.dictionary_columns);
        let hint = crate::views::schema_with_views(&hint, &plan.view_columns);
        (Arc::new(hint), Some(map))
    };
    Ok((reader_metadata_for(path, parsed, Some(hint))?, adapter))
}

/// A batch of an input with a narrower schema, in the unified schema: missing columns as
/// nulls, widened types (int → long, float → double) converted.
fn adapt(path: &Path, batch: RecordBatch, map: &[Option<usize>], schema: &SchemaRef) -> Result<RecordBatch> {
    let n = batch.num_rows();
    let mut columns = Vec::with_capacity(map.len());
    for (field, source) in schema.fields().iter().zip(map) {
        let column: ArrayRef = match source {
            None => new_null_array(field.data_type(), n),
            Some(j) => {
                let a = batch.column(*j);
                match widen_array(a, field.data_type()) {
                    Some(widened) => widened,
                    // Same layout, differing only in nested nullability or metadata.
                    None => make_array(
                        a.to_data()
                            .into_builder()
                            .data_type(field.data_type().clone())
                            .build()
                            .map_err(|e| CompactError::corrupt(path, Some(field.name().clone()), e))?,
                    ),
                }
            }
        };
        columns.push(column);
    }
    RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| CompactError::corrupt(path, None, format!("adapting to the unified schema: {e}")))
}

/// Streams every row of every input, in order, to `sink`.
pub fn read_all(plan: &Plan, limits: &ReadLimits, cancel: &AtomicBool, mut sink: impl FnMut(Batch) -> Result<()>) -> Result<()> {
    read_segments(plan, &all_segments(plan), None, limits, cancel, RowFilters::default(), |_, b| sink(b))
}

/// A decode failed: find the column by decoding the row group one leaf at a time (through the
/// same page readers and checks as the reading that failed: `chunks`).
fn diagnose(path: &Path, file: &GuardedInput, meta: &ArrowReaderMetadata, rg: usize, batch_size: usize, msg: String) -> CompactError {
    let descr = meta.metadata().file_metadata().schema_descr_ptr();
    for leaf in 0..descr.num_columns() {
        let reader = file.try_clone().map_err(|e| CompactError::input_open(path, &e)).and_then(|handle| {
            crate::chunks::record_reader(handle, meta, rg, ProjectionMask::leaves(&descr, [leaf]), batch_size, None)
                .map_err(|e| CompactError::corrupt(path, None, e))
        });
        let failed = match reader {
            Ok(r) => contain(|| r.into_iter().any(|b| b.is_err())).unwrap_or(true),
            Err(_) => true,
        };
        if failed {
            let column = descr.column(leaf).path().string();
            return CompactError::corrupt(path, Some(column), format!("row group {rg}: {msg}"));
        }
    }
    CompactError::corrupt(path, None, format!("row group {rg}: {msg}"))
}

/// The batch with the capacity its buffers grew by but do not use given back (a values buffer
/// grows by doubling while a batch is decoded): what a batch holds is then what it decodes to,
/// and the rest goes to the allocator's kept blocks at once (`alloc`). Only where it holds a
/// mapped block's worth (`alloc::LARGE`) more than it decodes to: less stays with the system
/// allocator either way.
fn shrink(batch: RecordBatch) -> Result<RecordBatch> {
    let (schema, mut columns, rows) = batch.into_parts();
    for c in columns.iter_mut() {
        c.shrink_to_fit();
    }
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, columns, &options)
        .map_err(|e| CompactError::Internal(format!("rebuilding a decoded batch: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::StringBuilder;
    use arrow_schema::{DataType, Field, Schema};

    #[test]
    fn a_decoded_batch_gives_back_the_capacity_its_buffers_do_not_use() {
        // (like a values buffer grown by doubling while a batch decodes)
        let mut values = StringBuilder::with_capacity(1_000, 4 << 20);
        for i in 0..1_000 {
            values.append_value(format!("value {i:>1000}"));
        }
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Utf8, false)]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(values.finish())]).unwrap();
        let before = held_bytes(&batch);
        let shrunk = shrink(batch).unwrap();
        let used = decoded_size(&shrunk);
        assert!(before > 4 << 20, "{before}");
        assert!(held_bytes(&shrunk) < used + (64 << 10), "{} against {used}", held_bytes(&shrunk));
        assert_eq!(shrunk.num_rows(), 1_000);
    }
}
