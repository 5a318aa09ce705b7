//! Fuzz target `thrift`: the strict Thrift reader `guard` runs over every footer and page header
//! (`src/thrift.rs`) against parquet-rs's own parser, by the comparison `tests/thrift_guard.rs`
//! runs bounded in `npm test` (`tests/thrift_check`): wherever the strict reader accepts,
//! parquet-rs must read the same counts, sizes and offsets, and never panic. The first byte picks
//! a footer (even) or a page header (odd, of one of the seed files' columns).
#![no_main]

#[allow(dead_code)]
#[path = "../../tests/thrift_check/mod.rs"]
mod thrift_check;

use parquet::schema::types::ColumnDescPtr;
use std::sync::OnceLock;

static COLUMNS: OnceLock<Vec<ColumnDescPtr>> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else { return };
    if pick % 2 == 0 {
        thrift_check::check_footer(bytes);
    } else {
        let columns = COLUMNS.get_or_init(|| thrift_check::page_seeds().into_iter().map(|(c, _)| c).collect());
        thrift_check::check_page(&columns[usize::from(pick / 2) % columns.len()], bytes, true);
    }
});
