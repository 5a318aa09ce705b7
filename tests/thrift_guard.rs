//! The strict Thrift reader (`gencompact::thrift`, what `guard` runs over every footer and page
//! header) against parquet-rs's own parser, on footers and page headers parquet-rs writes and on
//! seeded mutations of them (bit flips, bytes set, inserted, removed, slices repeated, cuts).
//! Whenever the strict reader accepts, parquet-rs must read the same thing: no panic, and the
//! same row counts, value counts, sizes and offsets (footers) or page type, value count and
//! encoding (page headers). Where parquet-rs refuses what the strict reader accepted (a missing
//! required field, an unknown enum value) the call still ends in parquet-rs's error; where the
//! strict reader refuses what parquet-rs reads, it is stricter (a field repeated, another wire
//! type): both are counted and printed, neither is a disagreement.
//!
//! `GENCOMPACT_THRIFT_CASES` sets the mutations per seed (default 400);
//! `GENCOMPACT_THRIFT_SEEDS=<dir>` writes the seeds there as the `thrift` fuzz target takes them
//! (`fuzz/seeds/thrift`: a first byte even for a footer, odd for a page header).

mod thrift_check;

use thrift_check::{check_footer, check_page, footer_error, footer_seeds, page_error, page_seeds, Tally};

fn cases() -> usize {
    std::env::var("GENCOMPACT_THRIFT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400)
}

/// xorshift64*: the mutations are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut m = seed.to_vec();
    for _ in 0..1 + rng.below(3) {
        if m.is_empty() {
            m.push(rng.next() as u8);
            continue;
        }
        let i = rng.below(m.len());
        match rng.below(7) {
            0 => m[i] ^= 1 << rng.below(8),
            1 => m[i] = rng.next() as u8,
            2 => m.insert(i, rng.next() as u8),
            3 => {
                m.remove(i);
            }
            4 => {
                // repeat a slice: a field or struct written twice
                let len = 1 + rng.below(16.min(m.len() - i));
                let slice = m[i..i + len].to_vec();
                let at = rng.below(m.len());
                m.splice(at..at, slice);
            }
            5 => m.truncate(i),
            _ => {
                // a varint made wide: 0xff bytes inserted
                for _ in 0..1 + rng.below(10) {
                    m.insert(i, 0xff);
                }
            }
        }
    }
    m
}

#[test]
fn the_strict_reader_and_parquet_rs_agree_on_footers() {
    let mut tally = Tally::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    if let Ok(dir) = std::env::var("GENCOMPACT_THRIFT_SEEDS") {
        std::fs::create_dir_all(&dir).unwrap();
        for (i, seed) in footer_seeds().iter().enumerate() {
            std::fs::write(format!("{dir}/footer-{i}"), [&[0u8][..], seed].concat()).unwrap();
        }
        for (i, (_, seed)) in page_seeds().iter().enumerate() {
            std::fs::write(format!("{dir}/page-{i}"), [&[(2 * i + 1) as u8][..], seed].concat()).unwrap();
        }
    }
    for seed in footer_seeds() {
        assert_eq!(footer_error(&seed), None, "a footer parquet-rs wrote is refused");
        tally.add(check_footer(&seed));
        for _ in 0..cases() {
            tally.add(check_footer(&mutate(&seed, &mut rng)));
        }
    }
    println!("footers: {tally:?}");
    assert!(tally.both_reject > 0 && tally.stricter > 0, "the mutations reach neither refusal: {tally:?}");
}

#[test]
fn the_strict_reader_and_parquet_rs_agree_on_page_headers() {
    let mut tally = Tally::default();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (column, seed) in page_seeds() {
        assert_eq!(page_error(&seed), None, "a page parquet-rs wrote is refused");
        tally.add(check_page(&column, &seed, false));
        for _ in 0..cases() {
            tally.add(check_page(&column, &mutate(&seed, &mut rng), false));
        }
    }
    println!("page headers: {tally:?}");
    assert!(tally.both_reject > 0 && tally.stricter > 0, "the mutations reach neither refusal: {tally:?}");
}
