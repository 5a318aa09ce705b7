//! OS: what a call asks of the operating system beyond `std` — here, how many file descriptors
//! the process may still open (the soft `RLIMIT_NOFILE` from `getrlimit`, less the descriptors
//! open now, counted in `/proc/self/fd` on Linux and `/dev/fd` on macOS; `None` where the
//! platform tells neither), and so how many runs a call's merges may hold open at once
//! (`open_runs_limit`, used by `merge` and `sort`); and a file's identity (`file_identity`).
//!
//! Memory: nothing kept; a directory listing while counting.

/// The most runs a merge of a call holds open at once, whatever its memory would allow: each
/// holds a file descriptor (an input's, or a spilled run's), and a call must work at any file
/// count under the descriptors its process has (256 by default on macOS). More runs than a
/// merge takes that overlap are merged in passes (`sort`), or an input merge gives way to the
/// sort (`merge`).
pub const MAX_OPEN_RUNS: usize = 256;
/// Descriptors left to the rest of a call (the output being written, a spilled run being
/// written, verification's reader, a delete file) when the process's limit is what sizes the
/// fan-in.
const OTHER_DESCRIPTORS: u64 = 16;

/// The most runs a merge of this call holds open at once, when up to `calls` calls may run at
/// once: `MAX_OPEN_RUNS`, or, where fewer, half the descriptors the process has left when the
/// call starts (`descriptors_left`), less `OTHER_DESCRIPTORS` per call, shared by the
/// calls (at least 2). Under `ulimit -n 256` with two calls at once: 51.
pub fn open_runs_limit(calls: usize) -> usize {
    let calls = calls.max(1) as u64;
    match descriptors_left() {
        Some(left) => (left.saturating_sub(OTHER_DESCRIPTORS * calls) / (2 * calls)).clamp(2, MAX_OPEN_RUNS as u64) as usize,
        None => MAX_OPEN_RUNS,
    }
}

/// A file's device and inode (Unix; `None` elsewhere): the same file under two names.
#[cfg(unix)]
pub fn file_identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
pub fn file_identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Descriptors this process may still open: its soft limit less those open now (`None` where
/// either is unknown or the limit is infinite).
pub fn descriptors_left() -> Option<u64> {
    let limit = soft_descriptor_limit()?;
    let open = open_descriptors()?;
    Some(limit.saturating_sub(open))
}

#[cfg(unix)]
fn soft_descriptor_limit() -> Option<u64> {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given and reads nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0;
    (ok && rl.rlim_cur != libc::RLIM_INFINITY).then_some(rl.rlim_cur)
}

#[cfg(not(unix))]
fn soft_descriptor_limit() -> Option<u64> {
    None
}

fn open_descriptors() -> Option<u64> {
    let dir = if cfg!(target_os = "linux") {
        "/proc/self/fd"
    } else if cfg!(target_os = "macos") {
        "/dev/fd"
    } else {
        return None;
    };
    // (the listing's own descriptor is among those counted: one too many, on the safe side)
    std::fs::read_dir(dir).ok().map(|d| d.count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn descriptors_left_are_the_soft_limit_less_those_open() {
        // The soft limit as the kernel states it: "Max open files  <soft>  <hard>  files".
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        let soft: u64 = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let open = std::fs::read_dir("/proc/self/fd").map(|d| d.count() as u64).unwrap_or(0);
        let left = descriptors_left();
        assert!(soft > 0 && open > 2, "{limits}");
        // (other tests' threads open and close files meanwhile: within a few)
        assert!(left.is_some_and(|l| l + open <= soft + 16 && l + open + 16 >= soft), "soft {soft}, open {open}, left {left:?}");
    }
}
