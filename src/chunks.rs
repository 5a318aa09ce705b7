//! Chunks: one row group's column chunks as parquet-rs's array readers read them, with a
//! dictionary let go where its chunk falls back to plain pages.
//!
//! A column reader keeps its chunk's decoded dictionary until the chunk ends. Writers that
//! dictionary-encode by default and fall back to plain encoding when the dictionary grows past
//! a limit (pyarrow / Arrow C++ check that limit only every 1024 values, so a fat value unique
//! to every row gives a dictionary page of 1024 values, ~48 MB for 47 KB values, followed by
//! plain pages) would have the reader hold that dictionary beside every plain page after it,
//! though no plain page refers to it. Here such a chunk of a flat column (no repetition, so a
//! page always ends on a row) is handed to the array reader as two chunks: the dictionary and
//! the pages encoded with it, then the plain pages; the array reader drops the first chunk's
//! decoder, dictionary included, when it moves to the second, as it does between row groups.
//! The rows and values decoded are the same.
//!
//! Chunks whose large plain pages are better decompressed as a stream are read by `streamed`.
//! Every page, whichever reader decompressed it, is checked by `pagecheck` before parquet-rs
//! decodes it (counts it would allocate by, and the chunk's values against the row group's rows).
//!
//! Memory: per column, the pages its page reader holds (`streamed`, or parquet-rs's); one page
//! read ahead of the split while the first chunk ends.

use crate::guard::GuardedInput;
use crate::pagecheck::{Checked, Faults};
use crate::streamed::metadata_of;
use crate::testhooks::disabled;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReader, RowSelection};
use parquet::arrow::{parquet_to_arrow_field_levels, ProjectionMask};
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::errors::Result as ParquetResult;
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::serialized_reader::SerializedPageReader;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A batch reader of row group `index` of the file `file` reads (`meta` its footer and Arrow
/// schema), of the columns in `mask` and the rows in `selection`: its column chunks handed over
/// by `RowGroup`. Inputs (`read`) and outputs being verified (`verify`) are read this way.
pub fn record_reader(
    file: GuardedInput,
    meta: &ArrowReaderMetadata,
    index: usize,
    mask: ProjectionMask,
    batch_size: usize,
    selection: Option<RowSelection>,
) -> ParquetResult<ParquetRecordBatchReader> {
    checked_reader(file, meta, index, mask, batch_size, selection).map(|(reader, _)| reader)
}

/// `record_reader`, and where its page checks keep the first page they refuse (the file's
/// column named without decoding anything again).
pub fn checked_reader(
    file: GuardedInput,
    meta: &ArrowReaderMetadata,
    index: usize,
    mask: ProjectionMask,
    batch_size: usize,
    selection: Option<RowSelection>,
) -> ParquetResult<(ParquetRecordBatchReader, Faults)> {
    let levels = parquet_to_arrow_field_levels(meta.parquet_schema(), mask, Some(meta.schema().fields()))?;
    let row_group = RowGroup::new(file, meta.metadata().clone(), index);
    let faults = row_group.faults.clone();
    Ok((ParquetRecordBatchReader::try_new_with_row_groups(&levels, &row_group, batch_size, selection)?, faults))
}

/// Every row group of `file` in turn (`meta` its footer and Arrow schema), the columns in
/// `mask`, each read by `record_reader`: for readings of whole inputs outside `read` (the
/// partition columns of an input, the dedupe keys of kept files), so that their pages are
/// checked as every other reading's.
pub struct FileBatches {
    file: GuardedInput,
    meta: ArrowReaderMetadata,
    mask: ProjectionMask,
    batch_size: usize,
    next: usize,
    current: Option<ParquetRecordBatchReader>,
}

impl FileBatches {
    pub fn new(file: &GuardedInput, meta: ArrowReaderMetadata, mask: ProjectionMask, batch_size: usize) -> std::io::Result<Self> {
        Ok(FileBatches { file: file.try_clone()?, meta, mask, batch_size, next: 0, current: None })
    }
}

impl Iterator for FileBatches {
    type Item = Result<arrow_array::RecordBatch, arrow_schema::ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(reader) = self.current.as_mut() {
                match reader.next() {
                    Some(batch) => return Some(batch),
                    None => self.current = None,
                }
            }
            if self.next >= self.meta.metadata().num_row_groups() {
                return None;
            }
            let index = self.next;
            self.next += 1;
            let opened = self
                .file
                .try_clone()
                .map_err(|e| parquet::errors::ParquetError::General(e.to_string()))
                .and_then(|handle| record_reader(handle, &self.meta, index, self.mask.clone(), self.batch_size, None));
            match opened {
                Ok(reader) => self.current = Some(reader),
                Err(e) => {
                    self.next = usize::MAX;
                    return Some(Err(e.into()));
                }
            }
        }
    }
}

/// One row group of one input, for `ParquetRecordBatchReader::try_new_with_row_groups`.
pub struct RowGroup {
    file: Arc<GuardedInput>,
    metadata: Arc<ParquetMetaData>,
    index: usize,
    /// Chunks split at a fallback so far.
    splits: Arc<AtomicUsize>,
    /// What its streamed page readers did (`streamed`).
    streamed: Arc<crate::streamed::Counts>,
    /// The first page its checks refused (`pagecheck`).
    faults: Faults,
}

impl RowGroup {
    pub fn new(file: GuardedInput, metadata: Arc<ParquetMetaData>, index: usize) -> Self {
        RowGroup { file: Arc::new(file), metadata, index, splits: Arc::default(), streamed: Arc::default(), faults: Faults::default() }
    }

    /// How many of its column chunks were split at a fallback to plain pages so far.
    pub fn splits(&self) -> usize {
        self.splits.load(Ordering::Relaxed)
    }

    /// How many large pages were streamed in slices so far, and how many of them were
    /// dictionaries read as the plain values of the pages using them in order (`streamed`).
    pub fn streamed(&self) -> (usize, usize) {
        (self.streamed.pages.load(Ordering::Relaxed), self.streamed.dictionaries.load(Ordering::Relaxed))
    }

    /// How many pages of streamed chunks were decompressed whole so far (`streamed`).
    pub fn decompressed_whole(&self) -> usize {
        self.streamed.whole.load(Ordering::Relaxed)
    }

    fn meta(&self) -> &RowGroupMetaData {
        self.metadata.row_group(self.index)
    }
}

impl parquet::arrow::arrow_reader::RowGroups for RowGroup {
    fn num_rows(&self) -> usize {
        usize::try_from(self.meta().num_rows()).unwrap_or(0)
    }

    fn column_chunks(&self, i: usize) -> ParquetResult<Box<dyn PageIterator>> {
        let rg = self.meta();
        let column = rg.column(i);
        let rows = usize::try_from(rg.num_rows()).unwrap_or(0);
        let pages: Box<dyn PageReader> = if crate::streamed::reads(&self.file, column) {
            crate::streamed::reader(self.file.clone(), column, rows, self.streamed.clone())?
        } else {
            Box::new(SerializedPageReader::new(self.file.clone(), column, rows, None)?)
        };
        let pages: Box<dyn PageReader> = if disabled("pages") {
            pages
        } else {
            Box::new(Checked::new(pages, column.column_descr_ptr(), rows as u64, self.faults.clone(), self.file.page_cap()))
        };
        let flat = column.column_descr().max_rep_level() == 0;
        let readers: Vec<Box<dyn PageReader>> = if flat && column.dictionary_page_offset().is_some() {
            let shared = Arc::new(Mutex::new(Shared {
                pages,
                stash: None,
                dictionary_seen: false,
                split: false,
                splits: self.splits.clone(),
                release: Some((self.file.clone(), column.dictionary_page_offset().unwrap_or(0).max(0) as u64)),
            }));
            vec![Box::new(Part { shared: shared.clone(), first: true }), Box::new(Part { shared, first: false })]
        } else {
            vec![pages]
        };
        Ok(Box::new(Readers(readers.into_iter())))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(std::iter::once(self.meta()))
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.metadata
    }
}

struct Readers(std::vec::IntoIter<Box<dyn PageReader>>);

impl Iterator for Readers {
    type Item = ParquetResult<Box<dyn PageReader>>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl PageIterator for Readers {}

/// The page reader of a chunk split in two, and the first page of the second part once read.
struct Shared {
    pages: Box<dyn PageReader>,
    stash: Option<Page>,
    dictionary_seen: bool,
    /// The first part has ended.
    split: bool,
    splits: Arc<AtomicUsize>,
    /// The input whose page account holds the chunk's dictionary, and where the chunk starts.
    release: Option<(Arc<GuardedInput>, u64)>,
}

/// One part of a split chunk: the first ends before the first data page not encoded with the
/// dictionary; the second holds that page and the rest.
struct Part {
    shared: Arc<Mutex<Shared>>,
    first: bool,
}

fn poisoned() -> parquet::errors::ParquetError {
    parquet::errors::ParquetError::General("page reader poisoned".into())
}

fn with_dictionary(page: &Page) -> bool {
    matches!(page.encoding(), Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY)
}

impl Iterator for Part {
    type Item = ParquetResult<Page>;
    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for Part {
    fn get_next_page(&mut self) -> ParquetResult<Option<Page>> {
        let mut s = self.shared.lock().map_err(|_| poisoned())?;
        if self.first {
            if s.split {
                return Ok(None);
            }
            let Some(page) = s.pages.get_next_page()? else {
                s.split = true;
                return Ok(None);
            };
            match &page {
                Page::DictionaryPage { .. } => s.dictionary_seen = true,
                _ if s.dictionary_seen && !with_dictionary(&page) => {
                    s.split = true;
                    s.splits.fetch_add(1, Ordering::Relaxed);
                    if let Some((file, chunk)) = s.release.take() {
                        file.release_dictionary(chunk);
                    }
                    s.stash = Some(page);
                    return Ok(None);
                }
                _ => {}
            }
            return Ok(Some(page));
        }
        if let Some(page) = s.stash.take() {
            return Ok(Some(page));
        }
        s.pages.get_next_page()
    }

    fn peek_next_page(&mut self) -> ParquetResult<Option<PageMetadata>> {
        let mut s = self.shared.lock().map_err(|_| poisoned())?;
        if self.first && s.split {
            return Ok(None);
        }
        if let Some(page) = &s.stash {
            return Ok(Some(metadata_of(page)));
        }
        s.pages.peek_next_page()
    }

    fn skip_next_page(&mut self) -> ParquetResult<()> {
        let mut s = self.shared.lock().map_err(|_| poisoned())?;
        if self.first && s.split {
            return Ok(());
        }
        if s.stash.take().is_some() {
            return Ok(());
        }
        s.pages.skip_next_page()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
    use parquet::arrow::{parquet_to_arrow_field_levels, ArrowWriter, ProjectionMask};
    use parquet::file::properties::WriterProperties;

    /// A file whose string column starts dictionary-encoded and falls back to plain pages.
    fn fallback_file(dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("fallback.parquet");
        let n = 3000;
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false), Field::new("s", DataType::Utf8, true)]));
        let s: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|i| (i % 11 != 0).then(|| format!("{i:05}-{}", "v".repeat(90))))));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from_iter_values(0..n as i64)), s]).unwrap();
        let props = WriterProperties::builder()
            .set_dictionary_page_size_limit(8 << 10)
            .set_data_page_size_limit(16 << 10)
            .set_write_batch_size(64)
            .set_column_dictionary_enabled("n".into(), false)
            .build();
        let mut w = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        path
    }

    fn rows(batches: impl Iterator<Item = RecordBatch>) -> Vec<(i64, Option<String>)> {
        let mut out = Vec::new();
        for b in batches {
            let n = b.column(0).as_primitive::<arrow_array::types::Int64Type>();
            let s = b.column(1).as_string_view();
            for i in 0..b.num_rows() {
                out.push((n.value(i), s.is_valid(i).then(|| s.value(i).to_string())));
            }
        }
        out
    }

    #[test]
    fn a_chunk_falling_back_to_plain_is_split_and_decodes_the_same_rows() {
        let dir = std::env::temp_dir().join(format!("gencompact-chunks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = fallback_file(&dir);
        let open = || GuardedInput::new(std::fs::File::open(&path).unwrap(), 1 << 30).unwrap();
        let hint = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false), Field::new("s", DataType::Utf8View, true)]));
        let options = parquet::arrow::arrow_reader::ArrowReaderOptions::new().with_schema(hint);
        let meta = parquet::arrow::arrow_reader::ArrowReaderMetadata::load(&open(), options).unwrap();
        let descr = meta.metadata().file_metadata().schema_descr_ptr();
        let selections = [
            None,
            Some(RowSelection::from(vec![
                RowSelector::select(5),
                RowSelector::skip(1500),
                RowSelector::select(700),
                RowSelector::skip(795),
            ])),
        ];
        for selection in selections {
            let mut expected = ParquetRecordBatchReaderBuilder::new_with_metadata(open(), meta.clone()).with_batch_size(97);
            if let Some(s) = selection.clone() {
                expected = expected.with_row_selection(s);
            }
            let expected = rows(expected.build().unwrap().map(|b| b.unwrap()));
            let levels = parquet_to_arrow_field_levels(&descr, ProjectionMask::all(), Some(meta.schema().fields())).unwrap();
            let row_group = RowGroup::new(open(), meta.metadata().clone(), 0);
            let reader = ParquetRecordBatchReader::try_new_with_row_groups(&levels, &row_group, 97, selection.clone()).unwrap();
            let got = rows(reader.map(|b| b.unwrap()));
            assert_eq!(got.len(), if selection.is_some() { 705 } else { 3000 });
            assert_eq!(got, expected);
            if selection.is_none() {
                assert_eq!(row_group.splits(), 1, "the string chunk falls back to plain and is split there");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
