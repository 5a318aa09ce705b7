//! Differential: the bounded run of the coverage-guided fuzz targets (`fuzz/targets.rs`, run by
//! cargo-fuzz under libFuzzer, `fuzz/README.md`) in `npm test`: each target's committed seeds
//! (`fuzz/seeds/<target>/`, including the regression seeds fuzzing found) and a few thousand
//! seeded random mutations of them go through the same target functions, uninstrumented. A
//! disagreement with the independent decoder (`snap`, `lz4_flex`, `roaring` and the spec's
//! rule), a panic, or memory past what an input justifies fails the test, and the input is
//! written to `target/differential-failures/` to be committed as a seed.
#![cfg(feature = "test-hooks")]

#[allow(dead_code)]
#[path = "../fuzz/targets.rs"]
mod targets;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

/// The committed seeds of a target, by name.
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds").join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let path = e.unwrap().path();
            (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap())
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{} holds no seeds", dir.display());
    out
}

/// One to four of libFuzzer's kinds of mutation: a bit flipped, a byte set (to an edge value or
/// any), bytes inserted, a range deleted or repeated, a piece of another seed spliced in. The
/// first byte (the target's mode) is kept three times in four.
fn mutate(r: &mut targets::Rng, input: &[u8], others: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=r.index(4) {
        let keep_mode = usize::from(v.len() > 1 && r.index(4) != 0);
        let at = keep_mode + r.index(v.len().saturating_sub(keep_mode));
        match r.index(6) {
            0 if at < v.len() => v[at] ^= 1 << r.index(8),
            1 if at < v.len() => v[at] = [0, 1, 0x7f, 0x80, 0xff, r.next() as u8][r.index(6)],
            2 => {
                let n = 1 + r.index(8);
                let bytes: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
                v.splice(at.min(v.len())..at.min(v.len()), bytes);
            }
            3 if at < v.len() => {
                let end = (at + 1 + r.index(16)).min(v.len());
                v.drain(at..end);
            }
            4 if at < v.len() => {
                let end = (at + 1 + r.index(16)).min(v.len());
                let piece = v[at..end].to_vec();
                v.splice(at..at, piece);
            }
            _ => {
                let other = &others[r.index(others.len())].1;
                if !other.is_empty() {
                    let from = r.index(other.len());
                    let end = (from + 1 + r.index(32)).min(other.len());
                    let at = at.min(v.len());
                    v.splice(at..at, other[from..end].iter().copied());
                }
            }
        }
    }
    v
}

/// Seeds that build megabytes (`large-*`, `program-*`): mutated fewer times than the rest.
fn heavy(name: &str) -> bool {
    name.starts_with("large-") || name.starts_with("program-")
}

/// Regression seeds (inputs that crashed a target: `crash-*` found by fuzzing, `issue*` built
/// from an issue): each is run in a child process of its own (this test binary again, `ONE`
/// naming the seed), so that one that aborts the process (a failed allocation) or is killed
/// fails the test naming it instead of ending the test binary.
fn isolated(seed: &str) -> bool {
    seed.starts_with("crash-") || seed.starts_with("issue")
}

/// In a child process: the one seed (`<target>/<seed>`) to run.
const ONE: &str = "GENCOMPACT_DIFFERENTIAL_ONE";

/// The seed a child process runs, if this is one and it runs `name`'s test.
fn one(name: &str) -> Option<Vec<u8>> {
    let one = std::env::var(ONE).ok()?;
    let seed = one.strip_prefix(name)?.strip_prefix('/')?;
    Some(std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds").join(name).join(seed)).unwrap())
}

/// Runs the seed `name/seed` in a child process running `test` alone: its failure, if it failed.
fn run_isolated(test: &str, name: &str, seed: &str) -> Option<String> {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ONE, format!("{name}/{seed}"))
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    if out.status.success() {
        return None;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("note:")).collect();
    Some(format!("{} ({}): {}", seed, out.status, said[said.len().saturating_sub(3)..].join(" / ")))
}

/// Runs `target` on every seed of `name` (a regression seed in a child process, `isolated`),
/// `mutations` mutations of its light seeds and `heavy_mutations` of its heavy ones; returns
/// what each input run here gave, and fails listing the inputs that failed. `test` is the
/// calling test's name; in a child process it runs the one seed asked for and returns `None`.
fn run<T>(test: &str, name: &str, target: impl Fn(&[u8]) -> T, mutations: usize, heavy_mutations: usize) -> Option<Vec<Option<T>>> {
    if let Some(input) = one(name) {
        target(&input);
        return None;
    }
    let seeds = seeds(name);
    let mut failures: Vec<String> = seeds.iter().filter(|(n, _)| isolated(n)).filter_map(|(n, _)| run_isolated(test, name, n)).collect();
    let seeds: Vec<(String, Vec<u8>)> = seeds.into_iter().filter(|(n, _)| !isolated(n)).collect();
    let (heavy_seeds, light_seeds): (Vec<_>, Vec<_>) = seeds.iter().partition(|(n, _)| heavy(n));
    let mut r = targets::Rng(0x00C0_FFEE ^ name.len() as u64);
    let mut outcomes = Vec::new();
    let mut plan: Vec<&(String, Vec<u8>)> = Vec::new();
    for (n, from) in [(mutations, &light_seeds), (heavy_mutations, &heavy_seeds)] {
        for _ in 0..n {
            plan.extend(from.get(r.index(from.len())).copied());
        }
    }
    let inputs = seeds.iter().map(|(n, s)| (n.clone(), s.clone())).chain(
        plan.into_iter().enumerate().map(|(i, (seed_name, seed))| (format!("mutation {i} of {seed_name}"), mutate(&mut r, seed, &seeds))),
    );
    for (what, input) in inputs {
        match catch_unwind(AssertUnwindSafe(|| target(&input))) {
            Ok(out) => outcomes.push(Some(out)),
            Err(e) => {
                let msg =
                    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
                let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/differential-failures");
                let file = dir.join(format!("{name}-{}", failures.len()));
                let _ = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&file, &input));
                failures.push(format!("{what} ({} bytes, saved as {}): {msg}", input.len(), file.display()));
                outcomes.push(None);
            }
        }
    }
    assert!(failures.is_empty(), "{name}: {} of {} inputs failed:\n{}", failures.len(), outcomes.len(), failures.join("\n"));
    Some(outcomes)
}

/// What a decoder target's inputs did: the largest output both decoded, and how many both
/// rejected.
fn summary<T: Copy + Ord + Default>(outcomes: &[Option<Option<T>>]) -> (T, usize) {
    let largest = outcomes.iter().flatten().flatten().copied().max().unwrap_or_default();
    (largest, outcomes.iter().flatten().filter(|o| o.is_none()).count())
}

/// Above `streamed::LARGE_PAGE`: what the streamed readers are used for.
const LARGE_PAGE: usize = 4 << 20;

#[test]
fn the_streamed_snappy_reader_agrees_with_snap_on_seeds_and_mutations() {
    let Some(outcomes) = run("the_streamed_snappy_reader_agrees_with_snap_on_seeds_and_mutations", "snappy", targets::snappy, 2000, 40)
    else {
        return;
    };
    let (largest, rejected) = summary(&outcomes);
    assert!(largest > LARGE_PAGE, "no input decoded above the streaming threshold (largest {largest})");
    assert!(rejected > 0, "no input was rejected");
}

#[test]
fn the_streamed_lz4_reader_agrees_with_lz4_flex_on_seeds_and_mutations() {
    let Some(outcomes) = run("the_streamed_lz4_reader_agrees_with_lz4_flex_on_seeds_and_mutations", "lz4", targets::lz4, 2000, 40) else {
        return;
    };
    let (largest, rejected) = summary(&outcomes);
    assert!(largest > LARGE_PAGE, "no input decoded above the streaming threshold (largest {largest})");
    assert!(rejected > 0, "no input was rejected");
}

#[test]
fn the_spill_frame_reader_reads_back_runs_and_survives_damaged_ones() {
    let Some(outcomes) =
        run("the_spill_frame_reader_reads_back_runs_and_survives_damaged_ones", "spill_frames", targets::spill_frames, 400, 0)
    else {
        return;
    };
    let read = outcomes.iter().flatten().filter(|o| **o == Some(true)).count();
    let rejected = outcomes.iter().flatten().filter(|o| **o == Some(false)).count();
    assert!(read > 0 && rejected > 0, "{read} runs read back, {rejected} rejected");
}

#[test]
fn deletion_vectors_read_as_roaring_and_the_spec_read_them() {
    let Some(outcomes) = run("deletion_vectors_read_as_roaring_and_the_spec_read_them", "puffin", targets::puffin, 3000, 0) else { return };
    let (largest, rejected) = summary(&outcomes);
    assert!(largest > 0 && rejected > 0, "largest vector read {largest}, {rejected} rejected");
}
