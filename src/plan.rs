//! Plan: open every input read-only, parse its footer, unify the inputs' Parquet schemas
//! (`unify`), and sum what the later stages need (rows, bytes, per-column encodings,
//! key-value metadata, the outputs' `ARROW:schema` from `hints`). Footers are dropped after
//! planning; only a small summary per input is kept, so memory grows with the number of inputs
//! by a few dozen bytes each, not by their metadata (plus one Arrow schema per distinct reading).

use crate::contain::contain;
use crate::error::{CompactError, Result};
use crate::guard::GuardedInput;
use crate::iceberg::input::{DeleteSource, InputFile};
use crate::unify::unify;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::basic::{Compression, Encoding, PageType};
use parquet::file::metadata::{ColumnChunkMetaData, RowGroupMetaData};
use parquet::file::metadata::{KeyValue, ParquetMetaData};
use parquet::file::reader::Length;
use parquet::schema::types::{SchemaDescriptor, Type};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Values of at least this many bytes on average make a column fat (`squeeze`, `fat_leaves`).
pub const FAT_VALUE: usize = 4 << 10;

/// What the plan keeps of one input.
#[derive(Debug, Clone)]
pub struct InputSummary {
    pub path: PathBuf,
    /// The location the table's manifests record (what position deletes reference), where it
    /// is not the path itself (`location()`): one copy of a path per input, not two.
    pub other_location: Option<String>,
    pub deletes: Vec<DeleteSource>,
    pub rows: u64,
    /// Compressed bytes of the row groups' column chunks (what the file holds of data).
    pub data_bytes: u64,
    pub file_bytes: u64,
    pub row_groups: usize,
    /// Per row group: what an open reader of it holds, by estimate — per column its pages
    /// (`streamed::pages_estimate`: page sizes are not in the footer) and its codec's state
    /// (`codec_state`).
    pub reader_bytes: Vec<u64>,
    /// The hash of its footer's bytes as the plan read and checked them: a later stage that
    /// reads the same bytes need not check them again (`GuardedInput::read_footer`).
    pub footer_hash: u128,
}

impl InputSummary {
    /// The location the table's manifests record for it.
    pub fn location(&self) -> std::borrow::Cow<'_, str> {
        match &self.other_location {
            Some(l) => std::borrow::Cow::Borrowed(l.as_str()),
            None => self.path.to_string_lossy(),
        }
    }

    /// The bytes this summary holds (its own, its strings' and its lists'): what the plan keeps
    /// per input for the whole call, accounted (`Plan::inputs_memory`).
    pub fn held_bytes(&self) -> usize {
        let deletes: usize = self
            .deletes
            .iter()
            .map(|d| {
                std::mem::size_of::<DeleteSource>()
                    + d.path().as_os_str().len()
                    + match d {
                        DeleteSource::Equality { field_ids, .. } => field_ids.capacity() * 4,
                        _ => 0,
                    }
            })
            .sum();
        std::mem::size_of::<Self>()
            + self.path.as_os_str().len()
            + self.other_location.as_ref().map_or(0, String::capacity)
            + deletes
            + self.reader_bytes.capacity() * std::mem::size_of::<u64>()
    }
}

/// What an open column chunk reader holds for its codec besides the page: parquet-rs creates a
/// codec per column chunk, and a zstd one holds a decompression context (and an idle compression
/// context) with its buffers; inflate keeps a 32 KiB window. (Measured: 30 readers of 56 columns
/// on a third zstd, a third gzip inputs held ~150 MB more than their pages.)
pub fn codec_state(codec: Compression) -> u64 {
    match codec {
        Compression::ZSTD(_) => 256 << 10,
        Compression::GZIP(_) | Compression::BROTLI(_) => 64 << 10,
        Compression::LZ4 | Compression::LZ4_RAW | Compression::LZO => 16 << 10,
        Compression::SNAPPY | Compression::UNCOMPRESSED => 0,
    }
}

#[derive(Debug)]
pub struct Plan {
    /// The call's memory accountant (`memory`): every stage reserves what it holds from it.
    /// Unlimited until the call sets its bound (`compact::plan_call`).
    pub memory: crate::memory::Accountant,
    /// What the plan keeps per input (`inputs`), held from `memory` once the call has its
    /// bound (`compact::plan_call`).
    pub inputs_memory: Option<crate::memory::Reservation>,
    /// The most runs a merge of the call holds open at once (`os::open_runs_limit`).
    pub open_runs: usize,
    pub inputs: Vec<InputSummary>,
    /// The Parquet schema every input shares; outputs are written through it.
    pub parquet_schema: Arc<SchemaDescriptor>,
    /// The Arrow schema batches are decoded into (byte arrays with 64-bit offsets).
    pub arrow_schema: SchemaRef,
    /// Key-value metadata of the inputs, the later file's value winning per key; `ARROW:schema`
    /// derived for the outputs (`hints`).
    pub key_value: Vec<KeyValue>,
    /// Per leaf column: did any input dictionary-encode it?
    pub dictionary_leaves: Vec<bool>,
    /// Per leaf column: may any input hold a null in it (statistics say so, or are missing)?
    pub nullable_leaves: Vec<bool>,
    /// Per leaf column: is every data page of it in every input dictionary-encoded?
    pub fully_dictionary_leaves: Vec<bool>,
    /// Per leaf column: do its values average `FAT_VALUE` bytes or more (the inputs' chunks,
    /// uncompressed, over their values)? Its output pages are larger (`write`).
    pub fat_leaves: Vec<bool>,
    /// Leaf paths decoded as Arrow dictionaries (`dictionary::choose`; empty until then).
    pub dictionary_columns: HashSet<Vec<String>>,
    /// Top-level columns decoded as Arrow views (`views::choose`; empty until then).
    pub view_columns: HashSet<String>,
    pub total_rows: u64,
    pub total_data_bytes: u64,
    pub total_file_bytes: u64,
    /// Compressed bytes per codec over all inputs' column chunks, in order of first use.
    pub codec_bytes: Vec<(Compression, u64)>,
}

impl Plan {
    /// The codec holding the most compressed input bytes (a tie goes to the one the first
    /// input used first): what the outputs are written with unless `compression` says otherwise.
    pub fn dominant_codec(&self) -> Option<Compression> {
        let mut best: Option<(Compression, u64)> = None;
        for (codec, bytes) in &self.codec_bytes {
            if best.is_none_or(|(_, b)| *bytes > b) {
                best = Some((*codec, *bytes));
            }
        }
        best.map(|(c, _)| c)
    }
}

/// Reader options shared by plan and read: ignore an embedded Arrow schema so the decoded
/// types depend on the Parquet schema alone; page indexes are not needed to read whole
/// row groups.
pub fn base_reader_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new().with_skip_arrow_metadata(true)
}

/// Opens an input read-only, to be read through the `guard` checks (`page_cap`: the largest
/// uncompressed page it may declare).
pub fn open_input(path: &Path, page_cap: u64) -> Result<GuardedInput> {
    let file = File::open(path).map_err(|e| CompactError::input_open(path, &e))?;
    match file.metadata() {
        Ok(m) if m.is_dir() => Err(CompactError::corrupt(path, None, "is a directory, not a Parquet file")),
        Ok(_) => GuardedInput::new(file, page_cap).map_err(|e| CompactError::input_open(path, &e)),
        Err(e) => Err(CompactError::input_open(path, &e)),
    }
}

/// Reads an input's footer and the Arrow schema derived from it.
/// Inputs whose first row group is sampled to decide how a column decodes (`dictionary`,
/// `views`).
pub const SAMPLE_INPUTS: usize = 8;

/// Hands the first row group of each of the first `SAMPLE_INPUTS` inputs, with its input, to
/// `visit`, until it returns `false` (it has seen enough).
pub fn sample_row_groups(plan: &Plan, page_cap: u64, mut visit: impl FnMut(&Arc<GuardedInput>, &RowGroupMetaData) -> bool) -> Result<()> {
    for input in plan.inputs.iter().take(SAMPLE_INPUTS) {
        let file = open_input(&input.path, page_cap)?;
        let meta = load_metadata(&input.path, &file, None)?;
        let Some(rg) = meta.metadata().row_groups().first() else { continue };
        if !visit(&Arc::new(file), rg) {
            break;
        }
    }
    Ok(())
}

pub fn load_metadata(path: &Path, file: &GuardedInput, hint: Option<SchemaRef>) -> Result<ArrowReaderMetadata> {
    let (meta, _) = parse_footer(path, file, None)?;
    reader_metadata_for(path, meta, hint)
}

/// An input's parsed footer, checked (`GuardedInput::read_footer`, `check_metadata`), and the
/// hash of its bytes; `known`: that hash where a stage before read the same input.
pub fn parse_footer(path: &Path, file: &GuardedInput, known: Option<u128>) -> Result<(Arc<ParquetMetaData>, u128)> {
    let (bytes, hash) = file.read_footer(path, known)?;
    let meta = contain(|| parquet::file::metadata::ParquetMetaDataReader::decode_metadata(&bytes))
        .map_err(|panic| CompactError::corrupt(path, None, panic))?
        .map_err(|e| CompactError::corrupt(path, None, e))?;
    drop(bytes);
    file.check_metadata(path, &meta)?;
    Ok((Arc::new(meta), hash))
}

/// The Arrow reader metadata of a parsed footer: decoding into `hint`, or into the Arrow schema
/// the footer's own Parquet schema gives.
pub fn reader_metadata_for(path: &Path, meta: Arc<ParquetMetaData>, hint: Option<SchemaRef>) -> Result<ArrowReaderMetadata> {
    let mut options = base_reader_options();
    if let Some(schema) = hint {
        options = options.with_schema(schema);
    }
    contain(|| ArrowReaderMetadata::try_new(meta, options))
        .map_err(|panic| CompactError::corrupt(path, None, panic))?
        .map_err(|e| CompactError::corrupt(path, None, e))
}

/// Per leaf column path, over all inputs.
#[derive(Default)]
struct LeafFlags {
    dictionary: bool,
    /// Some chunk of it has a data page not dictionary-encoded (or no encoding statistics).
    plain_pages: bool,
    nullable: bool,
    files: usize,
    /// Uncompressed bytes and values of its chunks.
    bytes: u64,
    values: u64,
}

pub fn build_plan(files: &[InputFile]) -> Result<Plan> {
    build_plan_with(files, 1)
}

/// Footers parsed ahead per parsing thread (`build_plan_with`), each with its input open.
const FOOTERS_AHEAD: usize = 4;

/// An input opened and its footer parsed and checked.
type Parsed = Result<(GuardedInput, Arc<ParquetMetaData>, u128)>;

fn open_and_parse(path: &Path) -> Parsed {
    let file = open_input(path, u64::MAX)?;
    let (meta, hash) = parse_footer(path, &file, None)?;
    Ok((file, meta, hash))
}

/// `build_plan`, with the inputs' footers opened and parsed on `threads` threads (the folding
/// of what they say stays in `files` order, on the calling thread). Memory: at most
/// `FOOTERS_AHEAD` parsed footers per thread waiting to be folded.
pub fn build_plan_with(files: &[InputFile], threads: usize) -> Result<Plan> {
    let threads = threads.clamp(1, 8).min(files.len().max(1));
    if threads == 1 {
        return fold_plan(files, |i| open_and_parse(&files[i].path));
    }
    std::thread::scope(|scope| {
        let receivers: Vec<std::sync::mpsc::Receiver<Parsed>> = (0..threads)
            .map(|w| {
                let (tx, rx) = std::sync::mpsc::sync_channel::<Parsed>(FOOTERS_AHEAD);
                // (a thread that cannot start drops its sender: its receiver reports that)
                let _ = std::thread::Builder::new().name("gencompact-plan".into()).spawn_scoped(scope, move || {
                    for input in files.iter().skip(w).step_by(threads) {
                        let parsed = crate::contain::contain(|| open_and_parse(&input.path))
                            .unwrap_or_else(|panic| Err(CompactError::Internal(format!("planning {}: {panic}", input.path.display()))));
                        let failed = parsed.is_err();
                        if tx.send(parsed).is_err() || failed {
                            break;
                        }
                    }
                });
                rx
            })
            .collect();
        fold_plan(files, |i| {
            receivers[i % threads].recv().unwrap_or_else(|_| Err(CompactError::Internal("a planning thread ended early".into())))
        })
    })
}

/// The plan of `files`, folded in order from each input's parsed footer (`parse(i)`).
fn fold_plan(files: &[InputFile], mut parse: impl FnMut(usize) -> Parsed) -> Result<Plan> {
    if files.is_empty() {
        return Err(CompactError::InvalidOptions("'files' must name at least one input file".into()));
    }
    let mut codec_bytes: Vec<(Compression, u64)> = Vec::new();
    let mut inputs = Vec::with_capacity(files.len());
    let mut distinct: Vec<(PathBuf, Arc<SchemaDescriptor>)> = Vec::new();
    let mut key_value: Vec<KeyValue> = Vec::new();
    let mut leaves: HashMap<String, LeafFlags> = HashMap::new();
    let mut readings = crate::hints::Readings::default();
    let mut identities: HashMap<(u64, u64), usize> = HashMap::new();
    for (i, input) in files.iter().enumerate() {
        let path = input.path.clone();
        // (planning reads footers, and a large column chunk's first page header: no page is
        // decoded here)
        let (file, pq, footer_hash) = parse(i)?;
        // The same file under two names would have its rows written twice.
        if let Some(first) = file.identity().and_then(|id| identities.insert(id, i)) {
            return Err(CompactError::InvalidOptions(crate::options::listed_twice(i, first, &path)));
        }
        let pq = pq.as_ref();
        let descr = pq.file_metadata().schema_descr_ptr();
        if !distinct.iter().any(|(_, d)| d.root_schema().get_fields() == descr.root_schema().get_fields()) {
            distinct.push((path.clone(), descr.clone()));
        }
        let mut summary = summarize(&path, pq, &file, &mut leaves, &mut codec_bytes)?;
        summary.other_location = (input.path.to_str() != Some(input.location.as_str())).then(|| input.location.clone());
        summary.footer_hash = footer_hash;
        summary.deletes = input.deletes.clone();
        inputs.push(summary);
        merge_key_value(&mut key_value, pq.file_metadata().key_value_metadata());
        readings.add(&descr, pq.file_metadata().key_value_metadata());
    }
    let fields = unify(&distinct)?;
    let root_name = distinct.last().map(|(_, d)| d.root_schema().name().to_string()).unwrap_or_else(|| "schema".into());
    let root = Type::group_type_builder(&root_name)
        .with_fields(fields)
        .build()
        .map_err(|e| CompactError::Internal(format!("unified schema: {e}")))?;
    let parquet_schema = Arc::new(SchemaDescriptor::new(Arc::new(root)));
    // The embedded Arrow schema describes the outputs' own columns (`hints`), never one input's.
    if let Some(value) = readings.output_value(&parquet_schema) {
        key_value.push(KeyValue::new(crate::hints::KEY.to_string(), value));
    }
    let arrow = parquet::arrow::parquet_to_arrow_schema(&parquet_schema, None)
        .map_err(|e| CompactError::Internal(format!("unified schema to Arrow: {e}")))?;
    let arrow_schema = Arc::new(wide_offsets_schema(&arrow));
    let flags = |c: &parquet::schema::types::ColumnDescPtr| leaves.get(&c.path().string());
    let dictionary_leaves = parquet_schema.columns().iter().map(|c| flags(c).is_some_and(|f| f.dictionary)).collect();
    let nullable_leaves = parquet_schema.columns().iter().map(|c| flags(c).is_none_or(|f| f.nullable || f.files < inputs.len())).collect();
    let fully_dictionary_leaves =
        parquet_schema.columns().iter().map(|c| flags(c).is_some_and(|f| !f.plain_pages && f.files == inputs.len())).collect();
    let fat_leaves =
        parquet_schema.columns().iter().map(|c| flags(c).is_some_and(|f| f.values > 0 && f.bytes / f.values >= FAT_VALUE as u64)).collect();
    let total_rows = inputs.iter().map(|i| i.rows).sum();
    let total_data_bytes = inputs.iter().map(|i| i.data_bytes).sum();
    let total_file_bytes = inputs.iter().map(|i| i.file_bytes).sum();
    Ok(Plan {
        memory: crate::memory::Accountant::new(usize::MAX),
        inputs_memory: None,
        open_runs: crate::os::MAX_OPEN_RUNS,
        inputs,
        parquet_schema,
        arrow_schema,
        key_value,
        dictionary_leaves,
        nullable_leaves,
        fully_dictionary_leaves,
        fat_leaves,
        dictionary_columns: HashSet::new(),
        view_columns: HashSet::new(),
        total_rows,
        total_data_bytes,
        total_file_bytes,
        codec_bytes,
    })
}

fn summarize(
    path: &Path,
    pq: &ParquetMetaData,
    file: &GuardedInput,
    leaves: &mut HashMap<String, LeafFlags>,
    codecs: &mut Vec<(Compression, u64)>,
) -> Result<InputSummary> {
    let mut rows: u64 = 0;
    let mut data_bytes: u64 = 0;
    let mut reader_bytes = Vec::with_capacity(pq.num_row_groups());
    let descr = pq.file_metadata().schema_descr();
    for c in descr.columns() {
        leaves.entry(c.path().string()).or_default().files += 1;
    }
    for rg in pq.row_groups() {
        let n = u64::try_from(rg.num_rows()).map_err(|_| CompactError::corrupt(path, None, "negative row count"))?;
        rows = rows.saturating_add(n);
        data_bytes = data_bytes.saturating_add(u64::try_from(rg.compressed_size()).unwrap_or(0));
        reader_bytes.push(
            rg.columns()
                .iter()
                .map(|c| {
                    // (the footer has no page sizes: a large chunk's first page header is read,
                    // and one that cannot be is taken as large)
                    let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset()).max(0) as u64;
                    let first_page = match c.uncompressed_size() >= crate::streamed::LARGE_PAGE as i64 {
                        true => file.page_size_at(start).unwrap_or(u64::MAX),
                        false => 0,
                    };
                    crate::streamed::pages_estimate(c, first_page) + codec_state(c.compression())
                })
                .sum(),
        );
        for col in rg.columns() {
            let bytes = u64::try_from(col.compressed_size()).unwrap_or(0);
            match codecs.iter_mut().find(|(c, _)| *c == col.compression()) {
                Some((_, b)) => *b = b.saturating_add(bytes),
                None => codecs.push((col.compression(), bytes)),
            }
            let Some(flags) = leaves.get_mut(&col.column_path().string()) else { continue };
            flags.dictionary |= col.dictionary_page_offset().is_some();
            flags.plain_pages |= !all_dictionary_encoded(col);
            flags.nullable |= col.statistics().and_then(|s| s.null_count_opt()) != Some(0);
            flags.bytes = flags.bytes.saturating_add(u64::try_from(col.uncompressed_size()).unwrap_or(0));
            flags.values = flags.values.saturating_add(u64::try_from(col.num_values()).unwrap_or(0));
        }
    }
    Ok(InputSummary {
        path: path.to_path_buf(),
        other_location: None,
        deletes: Vec::new(),
        rows,
        data_bytes,
        file_bytes: file.len(),
        row_groups: pq.num_row_groups(),
        reader_bytes,
        footer_hash: 0,
    })
}

/// Merges an input's key-value metadata into `into`, the later value winning per key — except
/// `ARROW:schema`, which `hints` derives for the outputs.
fn merge_key_value(into: &mut Vec<KeyValue>, from: Option<&Vec<KeyValue>>) {
    for kv in from.into_iter().flatten().filter(|kv| kv.key != crate::hints::KEY) {
        match into.iter_mut().find(|e| e.key == kv.key) {
            Some(existing) => existing.value = kv.value.clone(),
            None => into.push(kv.clone()),
        }
    }
}

/// A one-line description of a column's type, cut to a readable length.
pub(crate) fn describe(t: &Type) -> String {
    const MAX: usize = 240;
    let mut out = Vec::new();
    parquet::schema::printer::print_schema(&mut out, t);
    let line = String::from_utf8_lossy(&out).split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The decode schema: like the inferred one but with 64-bit offsets for strings and binaries,
/// so no batch can overflow 32-bit offsets however fat its values are.
pub fn wide_offsets_schema(schema: &Schema) -> Schema {
    let fields: Fields = schema.fields().iter().map(|f| Arc::new(widen_field(f))).collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

fn widen_field(field: &Field) -> Field {
    field.clone().with_data_type(widen(field.data_type()))
}

fn widen(dt: &DataType) -> DataType {
    match dt {
        DataType::Utf8 => DataType::LargeUtf8,
        DataType::Binary => DataType::LargeBinary,
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(|f| Arc::new(widen_field(f))).collect()),
        DataType::List(f) => DataType::List(Arc::new(widen_field(f))),
        DataType::LargeList(f) => DataType::LargeList(Arc::new(widen_field(f))),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(Arc::new(widen_field(f)), *n),
        DataType::Map(f, sorted) => DataType::Map(Arc::new(widen_field(f)), *sorted),
        other => other.clone(),
    }
}

/// Whether every data page of a column chunk is dictionary-encoded (its footer's page encoding
/// statistics, as a mask or in full; `false` when they are missing).
pub fn all_dictionary_encoded(column: &ColumnChunkMetaData) -> bool {
    let dictionary = |e: &Encoding| matches!(e, Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY);
    column.dictionary_page_offset().is_some()
        && match (column.page_encoding_stats_mask(), column.page_encoding_stats()) {
            (Some(mask), _) => mask.is_only(Encoding::RLE_DICTIONARY) || mask.is_only(Encoding::PLAIN_DICTIONARY),
            (None, Some(stats)) => stats
                .iter()
                .filter(|s| matches!(s.page_type, PageType::DATA_PAGE | PageType::DATA_PAGE_V2))
                .all(|s| dictionary(&s.encoding)),
            (None, None) => false,
        }
}
