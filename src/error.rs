//! Typed errors of a compaction call. Every failure maps to one of the public codes of
//! the README and index.d.ts (`err.code` in JS); messages name the file, and the column where one is involved.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    #[error("input file not found: {path}")]
    InputNotFound { path: String },
    #[error("corrupt input {path}{}: {msg}", column_suffix(.column))]
    InputCorrupt {
        path: String,
        column: Option<String>,
        msg: String,
        /// The decoder's own error (parquet-rs, arrow-rs), when there was one.
        #[source]
        source: Option<BoxError>,
    },
    #[error("schema conflict on column '{column}' between {first} and {second}: {msg}")]
    SchemaConflict { first: String, second: String, column: String, msg: String },
    #[error("I/O error on {path}: {msg}")]
    Io {
        path: String,
        msg: String,
        /// The operating system's error, when there was one.
        #[source]
        source: Option<io::Error>,
    },
    #[error("aborted by signal; every file of this call was removed")]
    Aborted,
    #[error("verification failed for {path}: {msg}")]
    VerifyFailed { path: String, msg: String },
    #[error("internal error: {0}")]
    Internal(String),
}

fn column_suffix(column: &Option<String>) -> String {
    match column {
        Some(c) => format!(" (column '{c}')"),
        None => String::new(),
    }
}

impl CompactError {
    /// The public `err.code`.
    pub fn code(&self) -> &'static str {
        match self {
            CompactError::InvalidOptions(_) => "ERR_INVALID_OPTIONS",
            CompactError::InputNotFound { .. } => "ERR_INPUT_NOT_FOUND",
            CompactError::InputCorrupt { .. } => "ERR_INPUT_CORRUPT",
            CompactError::SchemaConflict { .. } => "ERR_SCHEMA_CONFLICT",
            CompactError::Io { .. } => "ERR_IO",
            CompactError::Aborted => "ERR_ABORTED",
            CompactError::VerifyFailed { .. } => "ERR_VERIFY_FAILED",
            CompactError::Internal(_) => "ERR_INTERNAL",
        }
    }

    /// A corrupt input: `cause` is a message, or the decoder's error (kept as the source).
    pub fn corrupt(path: &Path, column: Option<String>, cause: impl Cause) -> Self {
        let (msg, source) = cause.parts();
        CompactError::InputCorrupt { path: path.display().to_string(), column, msg, source }
    }

    /// The file the error is about, where there is one.
    pub fn path(&self) -> Option<&str> {
        match self {
            CompactError::InputNotFound { path }
            | CompactError::InputCorrupt { path, .. }
            | CompactError::Io { path, .. }
            | CompactError::VerifyFailed { path, .. } => Some(path),
            CompactError::SchemaConflict { second, .. } => Some(second),
            _ => None,
        }
    }

    /// The column the error is about, where there is one.
    pub fn column(&self) -> Option<&str> {
        match self {
            CompactError::InputCorrupt { column, .. } => column.as_deref(),
            CompactError::SchemaConflict { column, .. } => Some(column),
            _ => None,
        }
    }

    /// An I/O failure that is not an operating-system error (a name taken, a spill file the
    /// IPC reader rejects).
    pub fn io_msg(path: &Path, msg: impl ToString) -> Self {
        CompactError::Io { path: path.display().to_string(), msg: msg.to_string(), source: None }
    }

    /// An I/O failure on one of our own output paths (or outDir). Disk full is spelled out.
    pub fn io(path: &Path, err: &io::Error) -> Self {
        let source = match err.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(err.kind(), err.to_string()),
        };
        CompactError::Io { path: path.display().to_string(), msg: describe_io(err), source: Some(source) }
    }

    /// An error opening or reading an input file: missing files are `ERR_INPUT_NOT_FOUND`,
    /// anything else an I/O error naming the file.
    pub fn input_open(path: &Path, err: &io::Error) -> Self {
        if err.kind() == io::ErrorKind::NotFound {
            CompactError::InputNotFound { path: path.display().to_string() }
        } else {
            CompactError::io(path, err)
        }
    }
}

/// Human description of an I/O error; ENOSPC/EDQUOT say "disk full".
pub fn describe_io(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(28) => format!("disk full (no space left on device): {err}"),
        Some(122) => format!("disk full (quota exceeded): {err}"),
        _ if err.kind() == io::ErrorKind::StorageFull => format!("disk full: {err}"),
        _ => err.to_string(),
    }
}

/// Finds an `io::Error` inside a parquet error raised while writing, if there is one.
pub fn parquet_io_error(err: &parquet::errors::ParquetError) -> Option<&io::Error> {
    use std::error::Error as _;
    let mut source: Option<&(dyn std::error::Error + 'static)> = err.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            return Some(io);
        }
        source = s.source();
    }
    None
}

pub type Result<T> = std::result::Result<T, CompactError>;

/// An error kept as another's cause.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a corrupt input's error says, and the error it came from (if any).
pub trait Cause {
    fn parts(self) -> (String, Option<BoxError>);
}

impl Cause for String {
    fn parts(self) -> (String, Option<BoxError>) {
        (self, None)
    }
}

impl Cause for &str {
    fn parts(self) -> (String, Option<BoxError>) {
        (self.to_string(), None)
    }
}

impl Cause for parquet::errors::ParquetError {
    fn parts(self) -> (String, Option<BoxError>) {
        (self.to_string(), Some(Box::new(self)))
    }
}

impl Cause for arrow_schema::ArrowError {
    fn parts(self) -> (String, Option<BoxError>) {
        (self.to_string(), Some(Box::new(self)))
    }
}

/// `Err(Aborted)` once the call's abort flag is set.
pub fn check_cancel(cancel: &AtomicBool) -> Result<()> {
    if cancel.load(Ordering::Relaxed) {
        Err(CompactError::Aborted)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn an_io_error_names_the_path_says_disk_full_and_keeps_the_os_error_as_its_source() {
        let e = CompactError::io(Path::new("/out/part-1.parquet.tmp"), &io::Error::from_raw_os_error(28));
        let text = e.to_string();
        assert!(text.contains("/out/part-1.parquet.tmp") && text.contains("disk full"), "{text}");
        let source = e.source().and_then(|s| s.downcast_ref::<io::Error>()).map(|s| s.raw_os_error());
        assert_eq!(source, Some(Some(28)));
        assert!(CompactError::io_msg(Path::new("/out"), "output file already exists").source().is_none());
    }

    #[test]
    fn a_corrupt_input_keeps_the_decoders_error_as_its_source_and_names_file_and_column() {
        let e =
            CompactError::corrupt(Path::new("/in/a.parquet"), Some("ts".into()), parquet::errors::ParquetError::EOF("short page".into()));
        assert_eq!((e.path(), e.column()), (Some("/in/a.parquet"), Some("ts")));
        let source = e.source().and_then(|s| s.downcast_ref::<parquet::errors::ParquetError>()).map(|s| s.to_string());
        assert_eq!(source.as_deref(), Some("EOF: short page"));
        assert!(CompactError::corrupt(Path::new("/in/a.parquet"), None, "a message").source().is_none());
    }
}
