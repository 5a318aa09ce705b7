//! Input: one data file of the generation as the table knows it — where to read it, the
//! location its manifests record, and the delete files that apply to it. Plain data, shared by
//! the options, the plan and the deletes stage.

use std::path::{Path, PathBuf};

/// One delete file (or blob) that applies to an input, as `files[i].deletes` names it.
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteSource {
    /// A position-delete Parquet file (`file_path`, `pos`), possibly for many data files.
    Position { path: PathBuf },
    /// A `deletion-vector-v1` blob at `offset`/`length` of a Puffin file.
    Vector { path: PathBuf, offset: u64, length: u64 },
    /// An equality-delete Parquet file whose rows delete data rows equal on `field_ids`.
    Equality { path: PathBuf, field_ids: Vec<i32> },
}

impl DeleteSource {
    pub fn path(&self) -> &Path {
        match self {
            DeleteSource::Position { path } | DeleteSource::Vector { path, .. } | DeleteSource::Equality { path, .. } => path,
        }
    }
}

/// One data file of the generation: where to read it, the location the table's manifests
/// record for it (what position deletes and deletion vectors reference), and its deletes.
#[derive(Debug, Clone, PartialEq)]
pub struct InputFile {
    pub path: PathBuf,
    pub location: String,
    pub deletes: Vec<DeleteSource>,
}

impl InputFile {
    /// A data file without deletes, located at its path.
    pub fn plain(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        InputFile { location: path.display().to_string(), path, deletes: Vec::new() }
    }
}

impl From<&str> for InputFile {
    fn from(path: &str) -> Self {
        InputFile::plain(path)
    }
}

impl From<String> for InputFile {
    fn from(path: String) -> Self {
        InputFile::plain(path)
    }
}
