//! Holes: the bytes of a spilled run file given back to the file system while the merge that
//! consumes the run reads on (`spill::Run::open_consuming`), a hole punched in the part already
//! read at least every `STEP` bytes. The runs a merge reads shrink while the run or the files it
//! writes grow, so the temporary disk a merge needs is not its inputs and its output together —
//! what lets intermediate merges run two at once (`sort`) within the disk one at a time needs.
//! Linux only (`fallocate` with `FALLOC_FL_PUNCH_HOLE`, which ext4, XFS, btrfs and tmpfs
//! support); elsewhere, and on a file system that cannot punch holes, a run file keeps its
//! blocks until it is removed (`gives_back` tells which, for the spill directory).
//!
//! Memory: two counters per run being read.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Holes are punched once this many more bytes have been read (a merge reads a hundred runs or
/// more at once: what each has read but not given back is on disk beside the merge's output).
const STEP: u64 = 64 << 10;
/// Holes are punched in whole blocks of this many bytes.
const BLOCK: u64 = 4096;

/// Whether a merge gives back the run files it reads as it goes in `dir`: whether a hole can
/// be punched in a small file written there (and removed again).
pub fn gives_back(dir: &Path) -> bool {
    if !cfg!(target_os = "linux") {
        return false;
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!(".gencompact-{}-{n}-holes.tmp", std::process::id()));
    let Ok(mut file) = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path) else { return false };
    let punched = file.write_all(&[1u8; 2 * BLOCK as usize]).is_ok() && punch_hole(&file, 0, BLOCK);
    drop(file);
    let _ = std::fs::remove_file(&path);
    punched
}

/// Bytes read from the start of a run file, and given back.
#[derive(Default)]
pub struct Holes {
    read: u64,
    given: u64,
}

impl Holes {
    /// `bytes` more of `file` have been read, from where the last read ended: gives back what
    /// has been read, in whole blocks, once that is `STEP` more than before. Returns the bytes
    /// given back now.
    pub fn read(&mut self, file: &File, bytes: u64) -> u64 {
        self.read += bytes;
        let upto = self.read / BLOCK * BLOCK;
        if upto < self.given + STEP || !punch_hole(file, self.given, upto - self.given) {
            return 0;
        }
        let n = upto - self.given;
        self.given = upto;
        n
    }
}

/// Frees `len` bytes of `file`'s blocks from `offset` (its size stays): whether it did.
#[cfg(target_os = "linux")]
fn punch_hole(file: &File, offset: u64, len: u64) -> bool {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else { return false };
    // SAFETY: fallocate on a descriptor this process owns; it changes no memory.
    unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, offset, len) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn punch_hole(_file: &File, _offset: u64, _len: u64) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_directory_where_no_probe_can_be_written_gives_nothing_back_and_a_probe_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("gencompact-holes-probe-{}", std::process::id()));
        assert!(!gives_back(&dir.join("missing")));
        std::fs::create_dir_all(&dir).unwrap();
        // (ext4, XFS, btrfs and tmpfs punch holes: what the temporary directory is here)
        let supported = gives_back(&dir);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the probe file is removed (supported: {supported})");
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn what_has_been_read_is_given_back_in_steps_and_the_rest_stays() {
        let path = std::env::temp_dir().join(format!("gencompact-holes-{}", std::process::id()));
        let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let mut f = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path).unwrap();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
        let blocks = |f: &File| f.metadata().unwrap().blocks() * 512;
        let full = blocks(&f);
        if !gives_back(&std::env::temp_dir()) {
            // a file system that cannot punch holes: nothing is counted as given back
            let mut holes = Holes::default();
            assert_eq!(holes.read(&f, 1 << 20), 0);
            assert_eq!(blocks(&f), full);
            std::fs::remove_file(&path).unwrap();
            return;
        }
        assert!(full >= 1 << 20, "{full}");
        let mut input = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let mut holes = Holes::default();
        let mut back = vec![0u8; 40_000];
        // 40,000 bytes read: under a step, nothing given back
        input.read_exact(&mut back).unwrap();
        assert_eq!(holes.read(&input, 40_000), 0);
        assert_eq!(blocks(&f), full);
        // 80,000 read: the first 77,824 (19 whole blocks) given back
        input.read_exact(&mut back).unwrap();
        assert_eq!(holes.read(&input, 40_000), 77_824);
        assert_eq!(blocks(&f), full - 77_824);
        // the rest reads back as written, and the file keeps its size
        let mut rest = Vec::new();
        input.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, data[80_000..]);
        assert_eq!(f.metadata().unwrap().len(), 1 << 20);
        // all of it read: all given back
        assert_eq!(holes.read(&input, rest.len() as u64), (1 << 20) - 77_824);
        assert_eq!(blocks(&f), full - (1 << 20));
        std::fs::remove_file(&path).unwrap();
    }
}
