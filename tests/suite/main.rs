//! The Rust core's integration tests, as one test program (one link of parquet and arrow
//! instead of one per file). `fuzz` and `memory` stay programs of their own: the first counts
//! the process's allocations, the second its accounted memory across calls.

#[path = "../common/mod.rs"]
mod common;

#[path = "core.rs"]
mod compaction;
mod deletes;
mod dictionary;
mod footers;
mod pagecheck;
mod pages;
mod rolling;
mod sort;
mod streamed;
mod views;
