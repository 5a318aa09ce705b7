//! Alloc: the addon's global allocator. Blocks under `LARGE` come from the system allocator
//! (glibc malloc); larger ones — decoded value buffers that grow page by page, pages, encoded
//! column chunks, spill frames — are mappings of their own, and a freed one is kept for reuse,
//! up to `KEEP_BYTES` for the process (less where the running calls hold more: `keep_cap`), or
//! unmapped.
//!
//! Why: glibc serves a block under its mmap threshold from the arena of the thread that asks,
//! and raises that threshold (up to 32 MiB) the first time a mapped block is freed. After that
//! every large block lives in some thread's arena, and an arena gives memory back only from
//! its top, and only above its trim threshold (64 MiB by then): with the pool, encoder, verify
//! and spill threads each holding an arena, memory the call had freed long before stayed
//! resident, tens of MiB per arena, and the process's peak exceeded the call's accounted peak
//! by 80 MiB or more. Kept ranges here serve any thread, and what is not kept is unmapped.
//!
//! A block is served from the smallest kept range that holds it (the rest of the range stays
//! kept; a freed block is joined with the kept ranges beside it), so its pages are already
//! there: the kernel neither faults in nor zeroes fresh ones. A block that grows takes the kept
//! range right after it, in place, where that range holds the growth (a buffer cut from the
//! front of a range doubles into its rest); else a kept range that holds the grown block, and
//! its bytes are copied (cheaper than fresh pages); when no kept range holds it, it grows with
//! `mremap`, in place or moved without a copy. A new block that no kept range holds grows the
//! largest kept range into it; zeroed, only that range's old bytes are zeroed, not its growth
//! (fresh pages, zero, left untouched). Beyond that cap (or `SLOTS` ranges) the smallest kept ranges
//! are unmapped, and every kept range is unmapped at the end of a call (`heap`).
//!
//! Memory: the blocks in use, plus at most `KEEP_BYTES` of kept ranges for the process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;

/// Blocks of this size and up are mapped.
pub const LARGE: usize = 128 << 10;
/// Freed large blocks kept for reuse, in bytes, for the whole process: at most this, and no
/// more than the running calls' bounds leave beside what their accountants hold and
/// `ALLOWANCE` (`keep_cap`), but always `MIN_KEEP`.
pub const KEEP_BYTES: usize = 64 << 20;
/// What the system allocator's free lists and arenas, the threads' stacks and the rest of the
/// process take beside the blocks the accountants count, under the calls' bounds.
pub(crate) const ALLOWANCE: usize = 40 << 20;
/// Kept however much the calls hold: a few blocks of a batch's size, reused from one batch to
/// the next.
const MIN_KEEP: usize = 8 << 20;

/// How many bytes of freed blocks may be kept now (see `KEEP_BYTES`): memory kept for reuse
/// saves the kernel's work of handing out fresh pages, but counts in the process's memory as
/// much as memory in use.
fn keep_cap() -> usize {
    let bound = crate::memory::process_bound();
    if bound == 0 {
        return KEEP_BYTES;
    }
    bound.saturating_sub(crate::memory::process_used()).saturating_sub(ALLOWANCE).clamp(MIN_KEEP, KEEP_BYTES)
}
/// At most this many kept ranges.
const SLOTS: usize = 256;
const PAGE: usize = 4096;

/// The allocator (`#[global_allocator]` in `lib.rs`).
pub struct Allocator;

/// Ranges to unmap: at most every kept range and the one freed.
type Unmap = [(usize, usize); SLOTS + 1];

/// Free mapped ranges kept for reuse.
struct Kept {
    ranges: [(usize, usize); SLOTS],
    n: usize,
    bytes: usize,
}

static KEPT: Mutex<Kept> = Mutex::new(Kept { ranges: [(0, 0); SLOTS], n: 0, bytes: 0 });

fn pages(size: usize) -> Option<usize> {
    size.checked_add(PAGE - 1).map(|s| s & !(PAGE - 1))
}

fn large(layout: &Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= PAGE
}

impl Kept {
    fn remove(&mut self, i: usize) -> (usize, usize) {
        let r = self.ranges[i];
        self.n -= 1;
        self.ranges[i] = self.ranges[self.n];
        self.bytes -= r.1;
        r
    }

    /// `len` bytes from the smallest kept range that holds them (its rest stays kept).
    fn fit(&mut self, len: usize) -> Option<usize> {
        let live = &self.ranges[..self.n];
        let i = (0..live.len()).filter(|&i| live[i].1 >= len).min_by_key(|&i| live[i].1)?;
        let (start, have) = live[i];
        if have == len {
            self.remove(i);
        } else {
            self.ranges[i] = (start + len, have - len);
            self.bytes -= len;
        }
        Some(start)
    }

    /// `extra` bytes from the kept range that starts at `end`, if it holds them (its rest
    /// stays kept): a block that ends at `end` grows into them in place.
    fn take_at(&mut self, end: usize, extra: usize) -> bool {
        let Some(i) = (0..self.n).find(|&i| self.ranges[i].0 == end && self.ranges[i].1 >= extra) else { return false };
        let (start, have) = self.ranges[i];
        if have == extra {
            self.remove(i);
        } else {
            self.ranges[i] = (start + extra, have - extra);
            self.bytes -= extra;
        }
        true
    }

    /// The largest kept range, taken whole.
    fn largest(&mut self) -> Option<(usize, usize)> {
        let i = (0..self.n).max_by_key(|&i| self.ranges[i].1)?;
        Some(self.remove(i))
    }

    /// Keeps a freed range, joined with the kept ranges it touches (a block split off a range
    /// comes back beside its rest); puts in `unmap` what goes to stay within `keep_cap` and
    /// `SLOTS` — the smallest ranges, or this one — and returns how many.
    fn keep(&mut self, start: usize, len: usize, unmap: &mut Unmap) -> usize {
        self.keep_within(start, len, keep_cap(), unmap)
    }

    /// `keep`, with at most `cap` bytes kept.
    fn keep_within(&mut self, mut start: usize, mut len: usize, cap: usize, unmap: &mut Unmap) -> usize {
        if len > cap {
            unmap[0] = (start, len);
            return 1;
        }
        let mut i = 0;
        while i < self.n {
            let (s, l) = self.ranges[i];
            if s + l == start || start + len == s {
                self.remove(i);
                start = start.min(s);
                len += l;
            } else {
                i += 1;
            }
        }
        let mut out = 0;
        let full = |k: &Kept, len: usize| k.n == SLOTS || k.bytes + len > cap;
        while full(self, len) && self.n > 0 {
            let smallest = (0..self.n).min_by_key(|&i| self.ranges[i].1).unwrap_or(0);
            if self.ranges[smallest].1 >= len {
                break;
            }
            unmap[out] = self.remove(smallest);
            out += 1;
        }
        if full(self, len) {
            unmap[out] = (start, len);
            out += 1;
            // (the cap came down since the ranges were kept: the larger ones go too, down to it)
            while self.bytes > cap && self.n > 0 {
                let smallest = (0..self.n).min_by_key(|&i| self.ranges[i].1).unwrap_or(0);
                unmap[out] = self.remove(smallest);
                out += 1;
            }
            return out;
        }
        self.ranges[self.n] = (start, len);
        self.n += 1;
        self.bytes += len;
        out
    }
}

/// A zeroed large block from the kept ranges `kept`: only the bytes used before are zeroed (a
/// kept range grown in place by `mremap` zeroes its old bytes, not its growth, whose fresh
/// pages are zero and are not touched — not faulted in — here).
unsafe fn zeroed_in(kept: &Mutex<Kept>, layout: Layout) -> *mut u8 {
    match pages(layout.size()).and_then(|len| map_in(kept, len)) {
        Some((p, used)) => {
            std::ptr::write_bytes(p, 0, used.min(layout.size()));
            p
        }
        None => std::ptr::null_mut(),
    }
}

fn kept() -> std::sync::MutexGuard<'static, Kept> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// A mapped block of `len` bytes (a multiple of the page size), and how many bytes from its
/// start may have been used before (the rest are fresh pages, zero): a kept range that holds
/// it (all of it), or else the largest kept range grown to it (that range's bytes; its growth
/// is fresh), or else a new mapping (none).
unsafe fn map(len: usize) -> Option<(*mut u8, usize)> {
    map_in(&KEPT, len)
}

/// `map`, from the kept ranges `kept`.
unsafe fn map_in(kept: &Mutex<Kept>, len: usize) -> Option<(*mut u8, usize)> {
    let lock = || kept.lock().unwrap_or_else(|e| e.into_inner());
    let fit = lock().fit(len);
    if let Some(start) = fit {
        return Some((start as *mut u8, len));
    }
    let largest = lock().largest();
    if let Some((start, have)) = largest {
        if let Some(p) = remap(start as *mut u8, have, len) {
            return Some((p, have.min(len)));
        }
        // (a range joined from two mappings cannot be remapped as one)
        release(start, have);
    }
    let p = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
    (p != libc::MAP_FAILED).then_some((p as *mut u8, 0))
}

/// Grows a mapped range with `mremap`, in place or moved (its pages move without a copy; the
/// new ones are fresh). Fails for a range joined from two mappings.
unsafe fn remap(start: *mut u8, have: usize, len: usize) -> Option<*mut u8> {
    let p = libc::mremap(start as *mut libc::c_void, have, len, libc::MREMAP_MAYMOVE);
    if p == libc::MAP_FAILED {
        return None;
    }
    Some(p as *mut u8)
}

unsafe fn release(start: usize, len: usize) {
    libc::munmap(start as *mut libc::c_void, len);
}

/// Unmaps every kept range (at the end of a call: an idle process holds no freed memory).
pub fn release_kept() {
    loop {
        // (unmapped outside the lock)
        let range = {
            let mut k = kept();
            if k.n == 0 {
                return;
            }
            let last = k.n - 1;
            k.remove(last)
        };
        // SAFETY: a kept range is mapped memory no block holds.
        unsafe { release(range.0, range.1) };
    }
}

/// Frees a mapped range: kept, or unmapped.
unsafe fn unmap(start: *mut u8, len: usize) {
    let mut out: Unmap = [(0, 0); SLOTS + 1];
    let n = kept().keep(start as usize, len, &mut out);
    for &(s, l) in &out[..n] {
        release(s, l);
    }
}

/// The allocator's work; `GlobalAlloc` below adds the test builds' count.
impl Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !large(&layout) {
            return System.alloc(layout);
        }
        match pages(layout.size()).and_then(|len| map(len)) {
            Some((p, _)) => p,
            None => std::ptr::null_mut(),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !large(&layout) {
            return System.alloc_zeroed(layout);
        }
        zeroed_in(&KEPT, layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !large(&layout) {
            return System.dealloc(ptr, layout);
        }
        if let Some(len) = pages(layout.size()) {
            unmap(ptr, len);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else { return std::ptr::null_mut() };
        match (large(&layout), large(&new_layout)) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => {
                let (Some(old_len), Some(new_len)) = (pages(layout.size()), pages(new_size)) else { return std::ptr::null_mut() };
                if new_len == old_len {
                    ptr
                } else if new_len < old_len {
                    unmap(ptr.add(new_len), old_len - new_len);
                    ptr
                } else {
                    // A kept range right after the block lends it the pages it grows by, in
                    // place; else a kept range that holds the grown block is used as it is (a
                    // copy of the old bytes costs less than faulting in fresh pages); else the
                    // block grows.
                    let fit = {
                        let mut k = kept();
                        if k.take_at(ptr as usize + old_len, new_len - old_len) {
                            return ptr;
                        }
                        k.fit(new_len)
                    };
                    if let Some(p) = fit {
                        std::ptr::copy_nonoverlapping(ptr, p as *mut u8, layout.size());
                        unmap(ptr, old_len);
                        return p as *mut u8;
                    }
                    if let Some(p) = remap(ptr, old_len, new_len) {
                        return p;
                    }
                    // (a block cut from a range joined from two mappings is copied)
                    let Some((p, _)) = map(new_len) else { return std::ptr::null_mut() };
                    std::ptr::copy_nonoverlapping(ptr, p, layout.size());
                    unmap(ptr, old_len);
                    p
                }
            }
            _ => {
                let p = self.alloc(new_layout);
                if !p.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                p
            }
        }
    }
}

// SAFETY: blocks under `LARGE` (or aligned beyond a page) are the system allocator's; larger
// ones are whole mappings of `pages(size)` bytes (or pieces of kept ranges that size) owned by
// the block until it is freed. The layout a block is freed or reallocated with tells which (the
// GlobalAlloc contract: the size it was allocated or last reallocated with).
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = Allocator::alloc(self, layout);
        counted::add(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = Allocator::alloc_zeroed(self, layout);
        counted::add(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Allocator::dealloc(self, ptr, layout);
        counted::sub(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = Allocator::realloc(self, ptr, layout, new_size);
        if !p.is_null() {
            counted::sub(layout.size());
            counted::add(p, new_size);
        }
        p
    }
}

/// Bytes of the blocks in use as asked for (capacity reserved included), and their peak since
/// `reset`: test builds only (`test-hooks`), where the fuzz tests bound every call's peak.
#[cfg(feature = "test-hooks")]
pub mod counted {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static NOW: AtomicUsize = AtomicUsize::new(0);
    static PEAK: AtomicUsize = AtomicUsize::new(0);

    pub(super) fn add(p: *mut u8, n: usize) {
        if !p.is_null() {
            let now = NOW.fetch_add(n, Ordering::Relaxed) + n;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
    }

    pub(super) fn sub(n: usize) {
        NOW.fetch_sub(n, Ordering::Relaxed);
    }

    /// Bytes in use now; the peak starts again from here.
    pub fn reset() -> usize {
        let now = NOW.load(Ordering::SeqCst);
        PEAK.store(now, Ordering::SeqCst);
        now
    }

    pub fn peak() -> usize {
        PEAK.load(Ordering::SeqCst)
    }
}

#[cfg(not(feature = "test-hooks"))]
mod counted {
    #[inline(always)]
    pub(super) fn add(_: *mut u8, _: usize) {}
    #[inline(always)]
    pub(super) fn sub(_: usize) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn empty() -> Kept {
        Kept { ranges: [(0, 0); SLOTS], n: 0, bytes: 0 }
    }

    #[test]
    fn kept_ranges_serve_best_fit_split_and_join_again() {
        let mut k = empty();
        let mut out: Unmap = [(0, 0); SLOTS + 1];
        assert_eq!(k.keep_within(0x1000_0000, 4 * MIB, KEEP_BYTES, &mut out), 0);
        assert_eq!(k.keep_within(0x2000_0000, MIB, KEEP_BYTES, &mut out), 0);
        // the smallest range that holds a block serves it
        assert_eq!(k.fit(MIB), Some(0x2000_0000));
        // a larger one is split: the block from its start, the rest kept
        assert_eq!(k.fit(MIB), Some(0x1000_0000));
        assert_eq!((k.n, k.bytes), (1, 3 * MIB));
        assert_eq!(k.ranges[0], (0x1000_0000 + MIB, 3 * MIB));
        // freed, the block joins the rest it was cut from
        assert_eq!(k.keep_within(0x1000_0000, MIB, KEEP_BYTES, &mut out), 0);
        assert_eq!((k.n, k.bytes), (1, 4 * MIB));
        assert_eq!(k.ranges[0], (0x1000_0000, 4 * MIB));
        assert_eq!(k.fit(5 * MIB), None);
        assert_eq!(k.largest(), Some((0x1000_0000, 4 * MIB)));
        assert_eq!((k.n, k.bytes), (0, 0));
    }

    #[test]
    fn a_block_cut_from_a_kept_range_grows_into_its_rest_in_place() {
        let mut k = empty();
        let mut out: Unmap = [(0, 0); SLOTS + 1];
        assert_eq!(k.keep_within(0x1000_0000, 8 * MIB, KEEP_BYTES, &mut out), 0);
        assert_eq!(k.keep_within(0x3000_0000, 2 * MIB, KEEP_BYTES, &mut out), 0);
        let block = k.fit(3 * MIB).unwrap_or(0);
        assert_eq!(block, 0x1000_0000);
        // it doubles into the pages right after it, which stay where they are
        assert!(k.take_at(block + 3 * MIB, 3 * MIB));
        assert_eq!((k.n, k.bytes), (2, 4 * MIB));
        assert!(k.ranges[..k.n].contains(&(0x1000_0000 + 6 * MIB, 2 * MIB)));
        // not where the range after it is too short, nor from a range elsewhere
        assert!(!k.take_at(block + 6 * MIB, 3 * MIB));
        assert!(!k.take_at(block + 4 * MIB, MIB));
        // the whole rest, and the range is gone
        assert!(k.take_at(block + 6 * MIB, 2 * MIB));
        assert_eq!((k.n, k.bytes), (1, 2 * MIB));
        assert_eq!(k.ranges[0], (0x3000_0000, 2 * MIB));
    }

    #[test]
    fn beyond_the_bound_the_smallest_ranges_are_unmapped() {
        let mut k = empty();
        let mut out: Unmap = [(0, 0); SLOTS + 1];
        let n = KEEP_BYTES / (4 * MIB);
        for i in 0..n {
            assert_eq!(k.keep_within(0x1000_0000 + i * 8 * MIB, 4 * MIB - (i % 2) * PAGE, KEEP_BYTES, &mut out), 0);
        }
        let smallest = k.ranges[..k.n].iter().map(|r| r.1).min();
        assert_eq!(k.keep_within(0x7000_0000, 4 * MIB, KEEP_BYTES, &mut out), 1);
        assert_eq!(Some(out[0].1), smallest);
        assert!(k.bytes <= KEEP_BYTES);
        // a range larger than the bound is not kept at all
        assert_eq!(k.keep_within(0x9000_0000, KEEP_BYTES + PAGE, KEEP_BYTES, &mut out), 1);
        assert_eq!(out[0], (0x9000_0000, KEEP_BYTES + PAGE));
        assert_eq!(k.ranges[..k.n].iter().map(|r| r.1).sum::<usize>(), k.bytes);
        // under a lower cap (the calls hold more), the next range freed makes room down to it
        let cap = KEEP_BYTES / 4;
        let n = k.keep_within(0xa000_0000, 4 * MIB, cap, &mut out);
        assert!(n > 1 && k.bytes <= cap, "{n} unmapped, {} kept", k.bytes);
    }

    #[test]
    fn a_buffer_grown_and_shrunk_across_the_threshold_keeps_its_bytes() {
        let mut v: Vec<u8> = Vec::new();
        for round in 0..40u8 {
            v.extend_from_slice(&vec![round; 100_000]);
        }
        assert_eq!(v.len(), 4_000_000);
        assert!(v.chunks(100_000).enumerate().all(|(i, c)| c.iter().all(|&b| b == i as u8)));
        v.truncate(1_500_000);
        v.shrink_to_fit();
        assert!(v.chunks(100_000).enumerate().all(|(i, c)| c.iter().all(|&b| b == i as u8)));
        v.truncate(1000);
        v.shrink_to_fit();
        assert!(v.iter().all(|&b| b == 0));
    }

    #[test]
    fn a_zeroed_block_is_zero_though_its_pages_were_used_before() {
        for round in 1..=8u8 {
            let a = vec![round; 3 * MIB];
            drop(a);
            let b = vec![0u8; 3 * MIB - PAGE];
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    /// Pages of `[p, p + len)` resident in memory (`mincore`).
    fn resident(p: *mut u8, len: usize) -> usize {
        let mut v = vec![0u8; len.div_ceil(PAGE)];
        assert_eq!(unsafe { libc::mincore(p as *mut libc::c_void, len, v.as_mut_ptr()) }, 0);
        v.iter().filter(|&&b| b & 1 == 1).count()
    }

    /// A zeroed block served by growing a kept range with `mremap` zeroes that range's old
    /// bytes only: its growth is fresh pages, which are zero and stay untouched (not resident).
    /// (It zeroed the whole block, faulting in every page of it, when a grown range counted as
    /// not fresh.)
    #[test]
    fn a_zeroed_block_grown_from_a_kept_range_zeroes_only_the_old_bytes() {
        let k = Mutex::new(empty());
        unsafe {
            let old = MIB;
            let p =
                libc::mmap(std::ptr::null_mut(), old, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
            assert_ne!(p, libc::MAP_FAILED);
            std::ptr::write_bytes(p as *mut u8, 0xab, old);
            let mut out: Unmap = [(0, 0); SLOTS + 1];
            assert_eq!(k.lock().unwrap().keep_within(p as usize, old, KEEP_BYTES, &mut out), 0);
            let len = 64 * MIB;
            let b = zeroed_in(&k, Layout::from_size_align(len, 8).unwrap());
            assert!(!b.is_null());
            assert_eq!(k.lock().unwrap().n, 0, "the kept range was grown into the block");
            let growth = resident(b.add(old), len - old);
            assert_eq!(growth, 0, "{growth} pages of the growth were touched");
            let block = std::slice::from_raw_parts(b, len);
            assert!(block[..old].iter().all(|&x| x == 0), "the range's old bytes were zeroed");
            assert!(block[old..].iter().step_by(PAGE).all(|&x| x == 0));
            // a block a kept range holds is zeroed whole; a new mapping is fresh
            libc::munmap(b as *mut libc::c_void, len);
            let p = libc::mmap(
                std::ptr::null_mut(),
                4 * MIB,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            std::ptr::write_bytes(p as *mut u8, 0xcd, 4 * MIB);
            assert_eq!(k.lock().unwrap().keep_within(p as usize, 4 * MIB, KEEP_BYTES, &mut out), 0);
            let c = zeroed_in(&k, Layout::from_size_align(3 * MIB, 8).unwrap());
            assert_eq!(c, p as *mut u8);
            assert!(std::slice::from_raw_parts(c, 3 * MIB).iter().all(|&x| x == 0));
            libc::munmap(p, 4 * MIB);
            let (d, used) = map_in(&Mutex::new(empty()), 8 * MIB).unwrap();
            assert_eq!((used, resident(d, 8 * MIB)), (0, 0), "a new mapping is fresh and untouched");
            libc::munmap(d as *mut libc::c_void, 8 * MIB);
        }
    }

    #[test]
    fn blocks_aligned_beyond_a_page_come_from_the_system_allocator() {
        let layout = Layout::from_size_align(2 * MIB, 1 << 16).unwrap();
        unsafe {
            let p = Allocator.alloc(layout);
            assert!(!p.is_null());
            assert_eq!(p as usize % (1 << 16), 0);
            Allocator.dealloc(p, layout);
        }
    }
}
