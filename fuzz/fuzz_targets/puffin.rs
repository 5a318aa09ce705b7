//! Fuzz target `puffin`: `targets::puffin` (see `fuzz/targets.rs`) under libFuzzer.
#![no_main]

#[allow(dead_code)]
#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    targets::puffin(data);
});
