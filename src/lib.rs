//! gencompact: compact a generation of small Parquet files into few large, byte-targeted
//! files with a bounded heap.
//!
//! The core (`compact`, `plan`, `read`, `write`, `report`, `options`) is plain Rust and is
//! exercised by `cargo test` without Node. `node` is the thin N-API layer: option conversion,
//! the Promise, AbortSignal, the progress callback and error mapping.

pub mod ahead;
#[cfg(target_os = "linux")]
pub mod alloc;
pub mod batch;
pub mod budget;
pub mod chunks;
pub mod compact;
pub mod contain;
pub mod dedupe;
pub mod dictionary;
pub mod digest;
pub mod dirs;
pub mod divert;
pub mod encode;
pub mod error;
pub mod frames;
/// Entry points for the differential fuzz targets (`fuzz/`, `tests/differential.rs`).
#[cfg(feature = "test-hooks")]
pub mod fuzzing;
pub mod gate;
pub mod gather;
pub mod group;
pub mod guard;
pub mod heap;
pub mod hints;
pub mod holes;
pub mod hybrid;
pub mod iceberg;
pub mod keep;
pub mod kmerge;
pub mod lz4;
pub mod memory;
pub mod merge;
#[cfg_attr(test, allow(dead_code))]
mod node;
#[cfg_attr(test, allow(dead_code))]
mod node_plan;
#[cfg_attr(test, allow(dead_code))]
mod node_result;
#[cfg_attr(test, allow(dead_code))]
mod node_values;
pub mod options;
pub mod order;
pub mod os;
pub mod pagecheck;
pub mod plan;
pub mod planning;
pub mod read;
pub mod readback;
pub mod report;
pub mod route;
pub mod sizing;
pub mod snappy;
pub mod sort;
mod sortjob;
pub mod spill;
pub mod squeeze;
pub mod streamed;
pub mod testhooks;
pub mod thrift;
pub mod transaction;
pub mod unify;
pub mod union;
pub mod verify;
pub mod views;
pub mod window;
pub mod write;
pub mod writing;

pub use compact::{compact, run_guarded, Progress};
pub use error::{CompactError, Result};
pub use options::Options;
pub use report::CompactReport;

/// Large blocks mapped and kept for reuse, small ones from the system allocator (`alloc`).
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: alloc::Allocator = alloc::Allocator;
