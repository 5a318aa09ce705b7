//! Heap: hand memory the allocator keeps after a stage freed it back to the OS.

/// glibc keeps memory freed by a thread in that thread's malloc arena for reuse; in a
/// long-lived server the pool threads would each keep the high-water mark of the largest call
/// they ran. `malloc_trim(0)` returns the free pages of every arena to the OS.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_free_memory() {
    extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: glibc's malloc_trim only touches the allocator's own free lists; no arguments
    // beyond the pad, which 0 makes minimal.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() {}
