//! Heap: hand memory the allocators keep after a stage freed it back to the OS.

/// glibc keeps memory freed by a thread in that thread's malloc arena for reuse; in a
/// long-lived server the pool threads would each keep the high-water mark of the largest call
/// they ran. `malloc_trim(0)` returns the free pages of every arena to the OS, and the large
/// blocks the addon's own allocator kept for reuse (`alloc`) are unmapped.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim only touches the allocator's own free lists; no
        // arguments beyond the pad, which 0 makes minimal.
        unsafe {
            malloc_trim(0);
        }
    }
    #[cfg(target_os = "linux")]
    crate::alloc::release_kept();
}
