//! Test-only switches, read from the environment (never set in production): they let the
//! tests show that each guard is what holds its property, and stop a run at a chosen point.
//! - `GENCOMPACT_TEST_DISABLE_GUARDS=a,b`: turn guards off: `input` (hostile-input checks,
//!   `guard`), `tmp-names` (outputs written under their final names at once), `cleanup` (a
//!   failed call leaves its files), `exclusive` (outputs opened through existing paths),
//!   `pages` (the checks of decompressed pages, `pagecheck`), `rows` (a row group's rows
//!   counted against its footer, `read`).
//! - `GENCOMPACT_TEST_PAUSE_AT=point`: the first time the run reaches `point` (`read`: a batch
//!   was read, nothing written; `row-group`: a row group written, its file still open;
//!   `between-files`: a file closed, the next not opened; `verify`; `publish`: the first output
//!   has its final name, the others not) it says so on stderr and sleeps, to be killed there.
//! - `GENCOMPACT_TEST_FAULT=drop-row|alter-row|panic`: a fault injected after the rows were
//!   digested (`verify::Fault`).
//! - `GENCOMPACT_TEST_NOTES=1`: stages say on stderr how far they got (`note`), for tests that
//!   must tell where a call ended (the deletes stage: rows loaded when it ended or was aborted).
//! - `GENCOMPACT_TEST_DISK_BYTES=n`: the data files of the process may take `n` bytes in all;
//!   a write past them fails as a full disk does (ENOSPC), with no file system to mount.
//!
//! Compiled in only with the cargo feature `test-hooks` (`npm test` and `scripts/cargo-test.js`
//! enable it; `npm run build`, the demo and published binaries do not): without it `disabled`
//! is always false, `pause` does nothing, no fault is injected, and the environment is never read,
//! so a variable inherited by a production process cannot switch a guard off.
//!
//! Memory: none.

#[cfg(feature = "test-hooks")]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(feature = "test-hooks")]
use std::sync::OnceLock;

/// Read once per process (it is consulted per batch and per file; tests set it in child processes).
#[cfg(feature = "test-hooks")]
pub fn disabled(guard: &str) -> bool {
    static DISABLED: OnceLock<Vec<String>> = OnceLock::new();
    DISABLED
        .get_or_init(|| {
            std::env::var("GENCOMPACT_TEST_DISABLE_GUARDS")
                .map(|v| v.split(',').map(|g| g.trim().to_string()).collect())
                .unwrap_or_default()
        })
        .iter()
        .any(|g| g == guard)
}

#[cfg(feature = "test-hooks")]
pub fn pause(point: &str) {
    static PAUSED: AtomicBool = AtomicBool::new(false);
    if std::env::var("GENCOMPACT_TEST_PAUSE_AT").is_ok_and(|p| p == point) && !PAUSED.swap(true, Ordering::SeqCst) {
        eprintln!("gencompact-test: paused at {point}");
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

/// How many of `len` bytes the next write of a data file may write: all of them, unless
/// `GENCOMPACT_TEST_DISK_BYTES` is set and used up (then ENOSPC, as from a full disk).
#[cfg(feature = "test-hooks")]
pub fn disk_room(len: usize) -> std::io::Result<usize> {
    use std::sync::atomic::AtomicI64;
    static LEFT: OnceLock<AtomicI64> = OnceLock::new();
    let left =
        LEFT.get_or_init(|| AtomicI64::new(std::env::var("GENCOMPACT_TEST_DISK_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(-1)));
    let mut now = left.load(Ordering::SeqCst);
    loop {
        if now < 0 {
            return Ok(len);
        }
        if now == 0 && len > 0 {
            return Err(std::io::Error::from_raw_os_error(28));
        }
        let take = (len as i64).min(now);
        match left.compare_exchange(now, now - take, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return Ok(take as usize),
            Err(v) => now = v,
        }
    }
}

/// Release builds: the disk's own room only.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn disk_room(len: usize) -> std::io::Result<usize> {
    Ok(len)
}

/// Release builds: every guard is on.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn disabled(_guard: &str) -> bool {
    false
}

/// Release builds: never pauses.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn pause(_point: &str) {}

/// `GENCOMPACT_TEST_FAULT` (see `verify::Fault`); `None` in release builds.
#[cfg(feature = "test-hooks")]
pub fn fault() -> Option<String> {
    std::env::var("GENCOMPACT_TEST_FAULT").ok()
}

/// Release builds: no fault is ever injected.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn fault() -> Option<String> {
    None
}

/// With `GENCOMPACT_TEST_NOTES` set, says `message()` on stderr ("gencompact-test: ...").
#[cfg(feature = "test-hooks")]
pub fn note(message: impl FnOnce() -> String) {
    if std::env::var_os("GENCOMPACT_TEST_NOTES").is_some() {
        eprintln!("gencompact-test: {}", message());
    }
}

/// Release builds: says nothing.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn note(_message: impl FnOnce() -> String) {}
