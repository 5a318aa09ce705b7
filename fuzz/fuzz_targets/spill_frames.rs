//! Fuzz target `spill_frames`: `targets::spill_frames` (see `fuzz/targets.rs`) under libFuzzer.
#![no_main]

#[allow(dead_code)]
#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    targets::spill_frames(data);
});
