//! Contain: panics kept from crossing into Node — a decoding step of parquet-rs over input data
//! (some corrupt encodings trip an assertion there), and a whole call.
//!
//! Memory: nothing.

use crate::error::{CompactError, Result};
use crate::testhooks::disabled;

/// Runs a decoding step of parquet-rs over input data. Some corrupt encodings trip an assertion
/// in parquet-rs (a varint longer than 10 bytes in a level run, say): that panic is contained
/// here and returned as a message, for the caller to report as a corrupt input.
/// (The panic hook still prints the panic to stderr: installing a quiet one cost ~23 MB of peak
/// RSS on the seed shape, for a message that only a corrupt file triggers.)
pub fn contain<T>(step: impl FnOnce() -> T) -> std::result::Result<T, String> {
    if disabled("input") {
        return Ok(step());
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(step))
        .map_err(|payload| format!("the decoder failed: {}", panic_message(&*payload)))
}

/// The message a panic was raised with.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

pub fn guard<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(CompactError::Internal(format!("panic: {}", crate::contain::panic_message(&*payload)))),
    }
}
