//! Directories a call creates (outDir, tmpDir, divert's directory): created with their missing
//! parents, remembered, and removed again — where empty — when the call fails. Memory: the
//! created paths.

use crate::error::{CompactError, Result};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The directories one `create` made, deepest first.
#[derive(Debug, Default)]
pub struct CreatedDirs(Vec<PathBuf>);

impl CreatedDirs {
    /// Creates `dir` (and missing parents) as the directory option `what` names.
    pub fn create(dir: &Path, what: &str) -> Result<CreatedDirs> {
        let created: Vec<PathBuf> =
            dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !d.exists()).map(Path::to_path_buf).collect();
        std::fs::create_dir_all(dir).map_err(|e| CompactError::io(dir, &e))?;
        if !std::fs::metadata(dir).map_err(|e| CompactError::io(dir, &e))?.is_dir() {
            return Err(CompactError::io_msg(dir, format!("{what} is not a directory")));
        }
        Ok(CreatedDirs(created))
    }

    /// Removes the directories `create` made, where they are empty again.
    pub fn remove_empty(&self) {
        for dir in &self.0 {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Makes a directory's entries durable (after files were linked or renamed into it).
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let d = File::open(dir).map_err(|e| CompactError::io(dir, &e))?;
        d.sync_all().map_err(|e| CompactError::io(dir, &e))?;
    }
    let _ = dir;
    Ok(())
}
