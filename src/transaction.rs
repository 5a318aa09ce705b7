//! Transaction: the files a call creates, published together or not at all. Each is created
//! exclusively (never through an existing path, or a symlink planted at its name) under a
//! temporary name, then given its final name by a hard link — a rename where the file system
//! has none, never replacing a file — and everything the call created is removed again unless
//! it commits: on an error, an abort or a panic alike. The data files (`write::Outputs`) and the
//! divert side file (`divert`) share it.
//!
//! Memory: one path per file created.

use crate::error::{CompactError, Result};
use crate::testhooks;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

#[derive(Debug, Default)]
pub struct Transaction {
    created: Vec<PathBuf>,
    committed: bool,
}

impl Transaction {
    /// Creates `tmp` for writing, exclusively (`exclusive` is off only under a test switch).
    pub fn create(&mut self, tmp: &Path, exclusive: bool) -> Result<File> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(exclusive)
            .create(true)
            .truncate(!exclusive)
            .open(tmp)
            .map_err(|e| CompactError::io(tmp, &e))?;
        self.created.push(tmp.to_path_buf());
        Ok(file)
    }

    /// Gives the written file `tmp` its final name `to`, never replacing a file; `tmp` stays
    /// until `remove_tmp`.
    pub fn link(&mut self, tmp: &Path, to: &Path) -> Result<()> {
        std::fs::hard_link(tmp, to)
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists || to.exists() {
                    Err(e)
                } else {
                    // Filesystems without hard links: a rename (checked above not to replace).
                    std::fs::rename(tmp, to)
                }
            })
            .map_err(|e| CompactError::io(to, &e))?;
        self.created.push(to.to_path_buf());
        Ok(())
    }

    /// Removes a temporary name once its file has its final one.
    pub fn remove_tmp(&mut self, tmp: &Path) -> Result<()> {
        if tmp.exists() {
            std::fs::remove_file(tmp).map_err(|e| CompactError::io(tmp, &e))?;
        }
        Ok(())
    }

    /// A path created beside the transaction's own files (a kept file's link), removed with
    /// them unless the call commits.
    pub fn adopt(&mut self, path: PathBuf) {
        self.created.push(path);
    }

    pub fn commit(&mut self) {
        self.committed = true;
    }

    pub fn committed(&self) -> bool {
        self.committed
    }

    /// Removes everything created, unless committed (or the `cleanup` test switch is off).
    pub fn roll_back(&mut self) {
        if self.committed || testhooks::disabled("cleanup") {
            return;
        }
        for p in self.created.drain(..) {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.roll_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_committed_is_removed_and_nothing_is_replaced() {
        let dir = std::env::temp_dir().join(format!("gencompact-tx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (tmp, to, taken) = (dir.join("a.tmp"), dir.join("a"), dir.join("b"));
        std::fs::write(&taken, b"someone else's").unwrap();
        let mut tx = Transaction::default();
        std::io::Write::write_all(&mut tx.create(&tmp, true).unwrap(), b"ours").unwrap();
        assert!(tx.create(&tmp, true).is_err(), "created exclusively");
        assert!(tx.link(&tmp, &taken).is_err(), "never replaces a file");
        tx.link(&tmp, &to).unwrap();
        tx.remove_tmp(&tmp).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"ours");
        drop(tx);
        assert!(!to.exists() && !tmp.exists(), "rolled back");
        assert_eq!(std::fs::read(&taken).unwrap(), b"someone else's");
        let mut tx = Transaction::default();
        tx.create(&tmp, true).unwrap();
        tx.link(&tmp, &to).unwrap();
        tx.commit();
        drop(tx);
        assert!(to.exists(), "committed files stay");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
