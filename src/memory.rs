//! Memory: the accountant of one call, shared by all of its threads. Every stage that holds
//! buffers — decoded batches (read-ahead, sort buffers, merge fan-in, verify), the column
//! decoders' pages, dictionaries, the encoders' open row group, spill readers and writers — holds
//! a `Reservation` of the accountant for them, sized before it allocates where the size is
//! known in advance (a batch's rows are chosen from an estimate) and resized to what it really
//! holds afterwards; the pages of the inputs are accounted as their headers are read
//! (`guard`). Memory that exists is always accounted (`Reservation::resize`), so the peak is
//! what the call held by its own count; decoding waits briefly for room
//! (`Accountant::wait_for`), and a stage that can do without may ask first
//! (`Reservation::try_resize`). The writer never flushes on pressure: row groups are cut on
//! their rows alone, so that the output bytes do not depend on timing.
//! The shape is that of DataFusion's `MemoryPool` / `MemoryReservation`, reduced to what one
//! call needs: one pool, reservations that return their bytes when dropped, a recorded peak.
//!
//! The call's limit is 3 × `batchBytes` + 64 MiB (the README's bound). Besides, every call's
//! bytes count in one process-wide total (`process_peak`); concurrent calls are admitted by the
//! call gate (`gate`), which with `GENCOMPACT_MEMORY_LIMIT` set also keeps the sum of their
//! bounds within that many bytes. The sum of the running calls' bounds (`process_bound`) tells
//! the allocator (`alloc`) how much freed memory it may keep for reuse.
//!
//! Memory: a few atomics per call.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Bytes every call may hold besides its batches: the documented bound is
/// `BOUND_BATCHES` × `batchBytes` + this.
pub const FIXED_BYTES: usize = 64 << 20;
pub const BOUND_BATCHES: usize = 3;

/// The documented peak memory of a call with this `batchBytes`.
pub fn call_bound(batch_bytes: usize) -> usize {
    batch_bytes.saturating_mul(BOUND_BATCHES).saturating_add(FIXED_BYTES)
}

static PROCESS_USED: AtomicUsize = AtomicUsize::new(0);
static PROCESS_PEAK: AtomicUsize = AtomicUsize::new(0);
static PROCESS_BOUND: AtomicUsize = AtomicUsize::new(0);

/// The sum of the bounds of the calls running now (0 when none is).
pub fn process_bound() -> usize {
    PROCESS_BOUND.load(Ordering::Relaxed)
}

/// The most bytes all calls of this process held at once, by their accountants.
pub fn process_peak() -> usize {
    PROCESS_PEAK.load(Ordering::Relaxed)
}

/// Bytes all calls of this process hold now, by their accountants.
pub fn process_used() -> usize {
    PROCESS_USED.load(Ordering::Relaxed)
}

#[derive(Clone)]
pub struct Accountant {
    inner: Arc<Inner>,
}

struct Inner {
    limit: usize,
    /// The call's bound, counted in the process's (`process_bound`) while the call runs.
    bound: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
    /// Woken whenever bytes are returned, for stages that wait for room.
    freed: (Mutex<()>, Condvar),
}

impl std::fmt::Debug for Accountant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Accountant {{ limit: {}, used: {}, peak: {} }}", self.limit(), self.used(), self.peak())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        PROCESS_BOUND.fetch_sub(self.bound, Ordering::Relaxed);
    }
}

impl Accountant {
    pub fn new(limit: usize) -> Self {
        Accountant::counted(limit, 0)
    }

    /// An accountant for a call with this `batchBytes` (limit: `call_bound`), whose bound
    /// counts in the process's while it lives.
    pub fn for_batch_bytes(batch_bytes: usize) -> Self {
        let bound = call_bound(batch_bytes);
        Accountant::counted(bound, bound)
    }

    /// An accountant of `limit` bytes whose `bound` counts in the process's while it lives.
    fn counted(limit: usize, bound: usize) -> Self {
        PROCESS_BOUND.fetch_add(bound, Ordering::Relaxed);
        Accountant {
            inner: Arc::new(Inner {
                limit,
                bound,
                used: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
                freed: (Mutex::new(()), Condvar::new()),
            }),
        }
    }

    pub fn limit(&self) -> usize {
        self.inner.limit
    }

    pub fn used(&self) -> usize {
        self.inner.used.load(Ordering::Relaxed)
    }

    /// The most bytes held at once so far.
    pub fn peak(&self) -> usize {
        self.inner.peak.load(Ordering::Relaxed)
    }

    /// Bytes not reserved.
    pub fn available(&self) -> usize {
        self.limit().saturating_sub(self.used())
    }

    /// An empty reservation.
    pub fn reservation(&self) -> Reservation {
        Reservation { accountant: self.clone(), bytes: 0 }
    }

    /// A reservation of `bytes` that exist already (or must: see `Reservation::resize`).
    pub fn hold(&self, bytes: usize) -> Reservation {
        let mut r = self.reservation();
        r.resize(bytes);
        r
    }

    /// Waits until `bytes` more fit the limit, or until `gone()` says to stop waiting, polling
    /// it every few milliseconds. Returns whether they fit. A stage that cannot make progress
    /// otherwise waits here for another thread of the call to return bytes.
    pub fn wait_for(&self, bytes: usize, gone: impl Fn() -> bool) -> bool {
        let (lock, freed) = &self.inner.freed;
        let Ok(mut guard) = lock.lock() else { return false };
        loop {
            if self.used().saturating_add(bytes) <= self.limit() {
                return true;
            }
            if gone() {
                return false;
            }
            guard = match freed.wait_timeout(guard, Duration::from_millis(5)) {
                Ok((g, _)) => g,
                Err(_) => return false,
            };
        }
    }

    fn add(&self, bytes: usize) {
        let now = self.inner.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.inner.peak.fetch_max(now, Ordering::Relaxed);
        let process = PROCESS_USED.fetch_add(bytes, Ordering::Relaxed) + bytes;
        PROCESS_PEAK.fetch_max(process, Ordering::Relaxed);
    }

    fn sub(&self, bytes: usize) {
        self.inner.used.fetch_sub(bytes, Ordering::Relaxed);
        PROCESS_USED.fetch_sub(bytes, Ordering::Relaxed);
        self.inner.freed.1.notify_all();
    }

    /// Adds `bytes` if they fit the limit (atomically with other threads' reservations).
    fn try_add(&self, bytes: usize) -> bool {
        let limit = self.limit();
        let before =
            self.inner.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| used.checked_add(bytes).filter(|n| *n <= limit));
        let fits = before.is_ok();
        if let Ok(before) = before {
            self.inner.peak.fetch_max(before + bytes, Ordering::Relaxed);
            let process = PROCESS_USED.fetch_add(bytes, Ordering::Relaxed) + bytes;
            PROCESS_PEAK.fetch_max(process, Ordering::Relaxed);
        }
        fits
    }
}

/// Bytes a stage holds, returned to the accountant when dropped.
pub struct Reservation {
    accountant: Accountant,
    bytes: usize,
}

impl std::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reservation({})", self.bytes)
    }
}

impl Reservation {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn accountant(&self) -> &Accountant {
        &self.accountant
    }

    /// Sets the reservation to `bytes` if the growth fits the limit; shrinking always succeeds.
    /// `false` leaves it as it was: the stage spills, flushes or waits instead.
    pub fn try_resize(&mut self, bytes: usize) -> bool {
        if bytes <= self.bytes {
            self.resize(bytes);
            return true;
        }
        if self.accountant.try_add(bytes - self.bytes) {
            self.bytes = bytes;
            true
        } else {
            false
        }
    }

    /// Sets the reservation to `bytes`, over the limit if need be: for memory that exists
    /// already (a decoded batch measured after decoding), or that a stage cannot do without
    /// (a single row larger than the bound). The peak records it.
    pub fn resize(&mut self, bytes: usize) {
        match bytes.cmp(&self.bytes) {
            std::cmp::Ordering::Greater => self.accountant.add(bytes - self.bytes),
            std::cmp::Ordering::Less => self.accountant.sub(self.bytes - bytes),
            std::cmp::Ordering::Equal => {}
        }
        self.bytes = bytes;
    }

    /// Moves `bytes` (at most all) of this reservation into a new one: for buffers handed to
    /// another owner.
    pub fn split(&mut self, bytes: usize) -> Reservation {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Reservation { accountant: self.accountant.clone(), bytes }
    }

    /// Takes over `other`'s bytes.
    pub fn merge(&mut self, mut other: Reservation) {
        self.bytes += std::mem::take(&mut other.bytes);
    }

    pub fn free(&mut self) {
        self.resize(0);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.accountant.sub(self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_bound_counts_in_the_process_while_its_accountant_lives() {
        // (other tests' calls may run at the same time: they only add to the sum)
        let a = Accountant::for_batch_bytes(1 << 40);
        let bound = call_bound(1 << 40);
        assert!(process_bound() >= bound, "{} < {bound}", process_bound());
        let b = a.clone();
        drop(a);
        assert!(process_bound() >= bound, "a clone keeps it counted");
        drop(b);
        assert!(process_bound() < bound, "{} after the accountant is gone", process_bound());
    }

    #[test]
    fn reservations_account_their_bytes_until_dropped_and_the_peak_stays() {
        let a = Accountant::new(100);
        let mut r = a.reservation();
        assert!(r.try_resize(60));
        let mut s = a.reservation();
        assert!(!s.try_resize(41), "41 more than the 40 left");
        assert_eq!(s.bytes(), 0);
        assert!(s.try_resize(40));
        assert_eq!(a.used(), 100);
        let moved = r.split(10);
        assert_eq!((r.bytes(), moved.bytes(), a.used()), (50, 10, 100));
        drop(moved);
        drop(s);
        assert_eq!(a.used(), 50);
        r.resize(150);
        assert_eq!(a.peak(), 150, "memory that exists is accounted even over the limit");
        drop(r);
        assert_eq!((a.used(), a.peak()), (0, 150));
    }

    #[test]
    fn a_waiting_stage_gets_room_when_another_thread_returns_bytes() {
        let a = Accountant::new(100);
        let held = a.hold(90);
        let waiter = {
            let a = a.clone();
            std::thread::spawn(move || a.wait_for(50, || false))
        };
        std::thread::sleep(Duration::from_millis(30));
        drop(held);
        assert!(waiter.join().unwrap());
        assert!(!a.wait_for(500, || true), "a wait that is given up reports no room");
    }

    #[test]
    fn threads_reserving_at_once_never_pass_the_limit() {
        let a = Accountant::new(1000);
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let a = a.clone();
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        let mut r = a.reservation();
                        if r.try_resize(300) {
                            assert!(a.used() <= 1000);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(a.peak() <= 1000, "peak {}", a.peak());
        assert_eq!(a.used(), 0);
    }
}
