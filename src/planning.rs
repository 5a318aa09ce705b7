//! Planning: which partition tuples a compaction should rewrite, and which files it should
//! keep as they are (`planCompaction` in the README and index.d.ts). A pure decision over
//! facts about each file — its size, the tuples its rows belong to, whether the table holds
//! deletes against it, whether it is known sorted — so it is tested without files; the facts
//! are gathered by `planning_facts`.
//!
//! The rules start from Iceberg's rewrite planner (a file is left alone when its size lies in
//! a band around the target; a group is rewritten when enough of its files lie outside the
//! band, or it has deletes, or its order is wrong) and add the rule that makes planning
//! converge without bookkeeping: a group is rewritten only when the rewrite changes something
//! measurable (fewer files than the ones it reads, deletes removed, order gained, an oversize
//! file split, a file spanning tuples split, or the caller forcing it). Planning the outcome
//! of a plan, with nothing new, therefore finds nothing to do.
//!
//! Memory: a few words per file and per tuple.

pub mod facts;

use crate::error::Result;

/// The rules of a plan, in bytes of data file on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    pub target: u64,
    /// Files of at least this size (and at most `max`) are left alone.
    pub min: u64,
    pub max: u64,
    /// Unsealed files in a group that make it worth rewriting.
    pub min_input_files: usize,
    /// `sortBy` is set: files not known sorted make their group due.
    pub sorted: bool,
}

impl Rules {
    /// Defaults: `min` 0.75 × target, `max` 1.8 × target, five input files.
    pub fn new(target: u64, min: Option<u64>, max: Option<u64>, min_input_files: Option<usize>, sorted: bool) -> Result<Rules> {
        let (min, max, min_input_files) = crate::options::plan::band(target, min, max, min_input_files)?;
        Ok(Rules { target, min, max, min_input_files, sorted })
    }

    /// A file left alone whatever its group does.
    pub fn sealed(&self, f: &FileFacts) -> bool {
        (self.min..=self.max).contains(&f.bytes) && !f.deletes && !f.forced && f.tuples.len() == 1 && (!self.sorted || f.sorted)
    }

    /// Files a rewrite of `bytes` writes.
    pub fn expected_files(&self, bytes: f64) -> u64 {
        ((bytes / self.target.max(1) as f64).ceil() as u64).max(1)
    }
}

/// What planning knows about one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileFacts {
    pub bytes: u64,
    /// The tuples its rows belong to (ids numbered by the caller, the same id for equal
    /// tuples) with the share of its rows in each; one entry without `partitionBy`.
    pub tuples: Vec<(usize, f64)>,
    /// The table deletes rows of it.
    pub deletes: bool,
    /// Known sorted by `sortBy`.
    pub sorted: bool,
    /// The caller asks for it to be rewritten.
    pub forced: bool,
}

/// Why a group is rewritten (the README's stable words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    Deletes,
    Oversize,
    Unsorted,
    SmallFiles,
    FillsTarget,
    SpansTuples,
    Forced,
}

impl Reason {
    pub fn word(self) -> &'static str {
        match self {
            Reason::Deletes => "deletes",
            Reason::Oversize => "oversize",
            Reason::Unsorted => "unsorted",
            Reason::SmallFiles => "small-files",
            Reason::FillsTarget => "fills-target",
            Reason::SpansTuples => "spans-tuples",
            Reason::Forced => "forced",
        }
    }
}

/// The decision for one tuple.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupPlan {
    pub tuple: usize,
    pub rewrite: bool,
    /// Empty when kept.
    pub reasons: Vec<Reason>,
    /// Indexes into the planned files.
    pub rewrite_files: Vec<usize>,
    pub keep_files: Vec<usize>,
    /// Files the rewrite writes (0 when kept).
    pub expected_files: u64,
    /// Bytes the rewrite reads for this tuple (a file spanning tuples counts by its share).
    pub rewrite_bytes: f64,
}

/// The decision for all tuples, in order of first appearance.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub groups: Vec<GroupPlan>,
    pub due: bool,
    /// Files rewritten in some group (a file spanning tuples counts once), and their bytes.
    pub rewrite_files: usize,
    pub rewrite_bytes: u64,
    pub keep_files: usize,
    pub keep_bytes: u64,
}

/// Decides every tuple's action.
pub fn decide(files: &[FileFacts], rules: &Rules) -> Decision {
    let mut order: Vec<usize> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        for &(tuple, _) in &f.tuples {
            let at = match order.iter().position(|&t| t == tuple) {
                Some(at) => at,
                None => {
                    order.push(tuple);
                    members.push(Vec::new());
                    order.len() - 1
                }
            };
            if members[at].last() != Some(&i) {
                members[at].push(i);
            }
        }
    }
    let groups: Vec<GroupPlan> = order.iter().zip(&members).map(|(&tuple, m)| decide_group(tuple, m, files, rules)).collect();
    let mut rewritten = vec![false; files.len()];
    for g in groups.iter().filter(|g| g.rewrite) {
        for &i in &g.rewrite_files {
            rewritten[i] = true;
        }
    }
    let bytes = |want: bool| files.iter().zip(&rewritten).filter(|(_, r)| **r == want).map(|(f, _)| f.bytes).sum();
    Decision {
        due: groups.iter().any(|g| g.rewrite),
        rewrite_files: rewritten.iter().filter(|r| **r).count(),
        rewrite_bytes: bytes(true),
        keep_files: rewritten.iter().filter(|r| !**r).count(),
        keep_bytes: bytes(false),
        groups,
    }
}

fn decide_group(tuple: usize, members: &[usize], files: &[FileFacts], rules: &Rules) -> GroupPlan {
    let (unsealed, sealed): (Vec<usize>, Vec<usize>) = members.iter().partition(|&&i| !rules.sealed(&files[i]));
    let share = |i: usize| files[i].tuples.iter().filter(|(t, _)| *t == tuple).map(|(_, s)| *s).sum::<f64>();
    let bytes: f64 = unsealed.iter().map(|&i| files[i].bytes as f64 * share(i)).sum();
    let expected = rules.expected_files(bytes);
    let any = |p: &dyn Fn(&FileFacts) -> bool| unsealed.iter().any(|&i| p(&files[i]));
    let mut reasons = Vec::new();
    let mut push = |on: bool, r: Reason| {
        if on {
            reasons.push(r)
        }
    };
    push(any(&|f| f.deletes), Reason::Deletes);
    push(any(&|f| f.bytes > rules.max), Reason::Oversize);
    push(rules.sorted && any(&|f| !f.sorted), Reason::Unsorted);
    push(unsealed.len() >= rules.min_input_files, Reason::SmallFiles);
    push(unsealed.len() >= 2 && bytes >= rules.target as f64, Reason::FillsTarget);
    push(any(&|f| f.tuples.len() > 1), Reason::SpansTuples);
    push(any(&|f| f.forced), Reason::Forced);
    // Only a rewrite that changes something measurable is worth doing.
    let fewer = (expected as usize) < unsealed.len();
    let changes = fewer || reasons.iter().any(|r| !matches!(r, Reason::SmallFiles | Reason::FillsTarget));
    let rewrite = !reasons.is_empty() && changes;
    if !rewrite {
        return GroupPlan {
            tuple,
            rewrite: false,
            reasons: Vec::new(),
            rewrite_files: Vec::new(),
            keep_files: members.to_vec(),
            expected_files: 0,
            rewrite_bytes: 0.0,
        };
    }
    GroupPlan { tuple, rewrite, reasons, rewrite_files: unsealed, keep_files: sealed, expected_files: expected, rewrite_bytes: bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    fn file(bytes: u64, tuple: usize) -> FileFacts {
        FileFacts { bytes, tuples: vec![(tuple, 1.0)], deletes: false, sorted: true, forced: false }
    }

    fn rules() -> Rules {
        Rules::new(100 * MB, None, None, None, false).unwrap()
    }

    #[test]
    fn defaults_and_validation() {
        let r = rules();
        assert_eq!((r.min, r.max, r.min_input_files), (75 * MB, 180 * MB, 5));
        assert!(Rules::new(100, Some(101), None, None, false).is_err());
        assert!(Rules::new(100, None, Some(100), None, false).is_err());
        assert!(Rules::new(100, None, None, Some(0), false).is_err());
        assert!(Rules::new(100, Some(100), Some(101), Some(1), false).is_ok());
    }

    #[test]
    fn a_compacted_tuple_is_kept_and_small_files_of_another_are_rewritten() {
        let mut files = vec![file(90 * MB, 0), file(20 * MB, 0)];
        files.extend((0..5).map(|_| file(MB, 1)));
        let d = decide(&files, &rules());
        assert!(d.due);
        assert!(!d.groups[0].rewrite && d.groups[0].reasons.is_empty() && d.groups[0].keep_files == vec![0, 1]);
        assert_eq!(d.groups[1].reasons, vec![Reason::SmallFiles]);
        assert_eq!(d.groups[1].rewrite_files, vec![2, 3, 4, 5, 6]);
        assert_eq!(d.groups[1].expected_files, 1);
        assert_eq!((d.rewrite_files, d.rewrite_bytes, d.keep_files, d.keep_bytes), (5, 5 * MB, 2, 110 * MB));
    }

    #[test]
    fn a_rewrite_that_would_write_as_many_files_is_not_done() {
        // Four small files under minInputFiles; two that together fill more than one target
        // but would still be two files.
        let files = vec![file(MB, 0), file(MB, 0), file(MB, 0), file(MB, 0), file(70 * MB, 1), file(60 * MB, 1)];
        let d = decide(&files, &rules());
        assert!(!d.due, "{d:?}");
        // Three that fill two files from three are rewritten.
        let files = vec![file(70 * MB, 0), file(60 * MB, 0), file(50 * MB, 0)];
        let d = decide(&files, &rules());
        assert_eq!(d.groups[0].reasons, vec![Reason::FillsTarget]);
        assert_eq!(d.groups[0].expected_files, 2);
    }

    #[test]
    fn deletes_oversize_order_spans_and_force_each_make_a_group_due_alone() {
        let r = Rules::new(100 * MB, None, None, None, true).unwrap();
        let cases: Vec<(FileFacts, Reason)> = vec![
            (FileFacts { deletes: true, ..file(90 * MB, 0) }, Reason::Deletes),
            (file(200 * MB, 0), Reason::Oversize),
            (FileFacts { sorted: false, ..file(90 * MB, 0) }, Reason::Unsorted),
            (FileFacts { forced: true, ..file(90 * MB, 0) }, Reason::Forced),
        ];
        for (f, reason) in cases {
            let d = decide(&[f, file(90 * MB, 0)], &r);
            assert_eq!(d.groups[0].reasons, vec![reason]);
            assert_eq!(d.groups[0].rewrite_files, vec![0], "the sealed file is kept");
            assert_eq!(d.groups[0].keep_files, vec![1]);
        }
        let spanning = FileFacts { tuples: vec![(0, 0.5), (1, 0.5)], ..file(90 * MB, 0) };
        let d = decide(&[spanning, file(90 * MB, 1)], &r);
        assert_eq!(d.groups.len(), 2);
        assert!(d.groups.iter().all(|g| g.rewrite && g.reasons == vec![Reason::SpansTuples] && g.rewrite_files == vec![0]));
        assert_eq!((d.rewrite_files, d.keep_files), (1, 1), "a spanning file counts once");
        assert!((d.groups[0].rewrite_bytes - 45.0 * MB as f64).abs() < 1.0);
    }

    #[test]
    fn without_sort_by_order_does_not_matter() {
        let d = decide(&[FileFacts { sorted: false, ..file(90 * MB, 0) }], &rules());
        assert!(!d.due);
    }

    /// xorshift64*: deterministic inputs for the property tests.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
        fn chance(&mut self, percent: u64) -> bool {
            self.below(100) < percent
        }
    }

    fn random_rules(rng: &mut Rng) -> Rules {
        let target = (1 << 10) + rng.below(1 << 30);
        let min = 2 + target / 10 + rng.below(target - target / 10 - 1);
        let max = target + 1 + rng.below(2 * target);
        let min_input_files = 1 + rng.below(8) as usize;
        let sorted = rng.chance(50);
        let defaults = rng.chance(30);
        if defaults {
            return Rules::new(target, None, None, None, sorted).unwrap();
        }
        Rules::new(target, Some(min), Some(max), Some(min_input_files), sorted).unwrap()
    }

    fn random_files(rng: &mut Rng, rules: &Rules, tuples: usize) -> Vec<FileFacts> {
        (0..1 + rng.below(60))
            .map(|_| {
                let t = rng.below(tuples as u64) as usize;
                let spans = rng.chance(5);
                let tuples = if spans { vec![(t, 0.5), ((t + 1) % tuples, 0.5)] } else { vec![(t, 1.0)] };
                let bytes = 1 + rng.below(rules.max * 2);
                FileFacts { bytes, tuples, deletes: rng.chance(5), sorted: rng.chance(70), forced: rng.chance(2) }
            })
            .collect()
    }

    /// The outcome of a rewrite: kept files stay, each rewritten tuple's bytes (times a
    /// compression factor) are written as balanced files, as the writer cuts them: as many
    /// as the bytes written fill targets, sorted, without deletes.
    fn apply(files: &[FileFacts], d: &Decision, rules: &Rules, factor: f64) -> Vec<FileFacts> {
        let rewritten: Vec<usize> = d.groups.iter().filter(|g| g.rewrite).flat_map(|g| g.rewrite_files.clone()).collect();
        let mut out: Vec<FileFacts> = files.iter().enumerate().filter(|(i, _)| !rewritten.contains(i)).map(|(_, f)| f.clone()).collect();
        for g in d.groups.iter().filter(|g| g.rewrite) {
            let written = ((g.rewrite_bytes * factor).round() as u64).max(1);
            let n = rules.expected_files(written as f64);
            for k in 0..n {
                let bytes = written / n + u64::from(k < written % n);
                out.push(FileFacts { bytes, tuples: vec![(g.tuple, 1.0)], deletes: false, sorted: true, forced: false });
            }
        }
        out
    }

    #[test]
    fn property_planning_the_outcome_of_a_plan_finds_nothing_due() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for case in 0..3000 {
            let rules = random_rules(&mut rng);
            let tuples = 1 + rng.below(12) as usize;
            let files = random_files(&mut rng, &rules, tuples);
            let d = decide(&files, &rules);
            let factor = 0.3 + rng.below(170) as f64 / 100.0;
            let after = apply(&files, &d, &rules, factor);
            let again = decide(&after, &rules);
            assert!(!again.due, "case {case}: {rules:?}\nfiles {files:?}\nplan {d:?}\nafter {after:?}\nagain {again:?}");
        }
    }

    #[test]
    fn property_new_files_in_k_tuples_make_exactly_those_tuples_due() {
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        for case in 0..2000 {
            let rules = random_rules(&mut rng);
            let tuples = 1 + rng.below(12) as usize;
            let files = random_files(&mut rng, &rules, tuples);
            let converged = apply(&files, &decide(&files, &rules), &rules, 1.0);
            let present: Vec<usize> = decide(&converged, &rules).groups.iter().map(|g| g.tuple).collect();
            let chosen: Vec<usize> = present.iter().copied().filter(|_| rng.chance(40)).collect();
            let mut grown = converged.clone();
            for &t in &chosen {
                // A wave of small files: enough of them to reach minInputFiles, and at least two.
                for _ in 0..rules.min_input_files.max(2) {
                    let bytes = 1 + rng.below(rules.min / 2);
                    grown.push(FileFacts { bytes, tuples: vec![(t, 1.0)], deletes: false, sorted: rng.chance(50), forced: false });
                }
            }
            let d = decide(&grown, &rules);
            let due: Vec<usize> = d.groups.iter().filter(|g| g.rewrite).map(|g| g.tuple).collect();
            assert_eq!(due, chosen, "case {case}: {rules:?}\nconverged {converged:?}\nplan {d:?}");
        }
    }
}
