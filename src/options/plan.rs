//! The options of `planCompaction`: the layout options of `compactGeneration` (the same
//! object, `CompactOptions`, so a caller passes one object to both) and the planning rules;
//! and `compactGeneration`'s `plan`, a `planCompaction` result handed back.
//! Memory: the options and the plan's indexes.

use super::contract::{CompactOptions, CompactionPlanResult, DedupeScope, KeepMode, PlanAction};
use super::values::Num;
use super::{integer, invalid, non_empty, partition_by, sort_by, DEFAULT_TARGET_FILE_BYTES, MAX_SAFE_INTEGER};
use crate::error::{CompactError, Result};
use crate::iceberg::partition::PartitionField;
use crate::options::SortKey;

/// Validates `planCompaction`'s options. `compactGeneration`'s other options are accepted
/// (their types are checked by parsing) and not used.
pub fn plan_options(o: &CompactOptions) -> Result<PlanConfig> {
    let bytes =
        |value: Option<Num>, key: &str| -> Result<Option<u64>> { Ok(integer(value, key, 0.0, MAX_SAFE_INTEGER)?.map(|n| n as u64)) };
    let target = integer(o.target_file_bytes, "targetFileBytes", 1024.0, MAX_SAFE_INTEGER)?.map_or(DEFAULT_TARGET_FILE_BYTES, |n| n as u64);
    let min_input_files = integer(o.min_input_files, "minInputFiles", 1.0, 1e9)?.map(|n| n as usize);
    let sort_by = sort_by(o.sort_by.as_deref())?;
    let sort_order_id = integer(o.sort_order_id, "sortOrderId", 0.0, i32::MAX as f64)?.map_or(0, |n| n as i32);
    if sort_order_id > 0 && sort_by.is_none() {
        return Err(invalid("'sortOrderId' claims a sort order, but no 'sortBy' was given".into()));
    }
    non_empty(&o.dedupe_by, "dedupeBy", "a column name")?;
    let (min, max, min_input_files) =
        band(target, bytes(o.min_file_bytes, "minFileBytes")?, bytes(o.max_file_bytes, "maxFileBytes")?, min_input_files)?;
    Ok(PlanConfig { target, min, max, min_input_files, partition_by: partition_by(o.partition_by.as_deref())?, sort_by, sort_order_id })
}

/// The planning options, validated: the layout a plan is for and its rules' figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanConfig {
    pub target: u64,
    pub min: u64,
    pub max: u64,
    pub min_input_files: usize,
    pub partition_by: Option<Vec<PartitionField>>,
    pub sort_by: Option<Vec<SortKey>>,
    pub sort_order_id: i32,
}

/// The size band and input-file count of the rules, defaults applied (`min` 0.75 × target,
/// `max` 1.8 × target, five files): `ERR_INVALID_OPTIONS` unless min <= target < max and at
/// least one file.
pub fn band(target: u64, min: Option<u64>, max: Option<u64>, min_input_files: Option<usize>) -> Result<(u64, u64, usize)> {
    let min = min.unwrap_or(target / 4 * 3 + (target % 4) * 3 / 4);
    let max = max.unwrap_or(target.saturating_mul(9) / 5);
    let min_input_files = min_input_files.unwrap_or(5);
    if min > target || target >= max {
        return Err(CompactError::InvalidOptions(format!(
            "planning needs minFileBytes <= targetFileBytes < maxFileBytes (got {min}, {target}, {max})"
        )));
    }
    if min_input_files < 1 {
        return Err(CompactError::InvalidOptions("'minInputFiles' must be at least 1".into()));
    }
    Ok((min, max, min_input_files))
}

/// `compactGeneration`'s `plan` (a `planCompaction` result for the same files), `keep`
/// (`'link'`, the default, or `'in-place'`) and `dedupeScope`; `None` without a plan.
pub fn plan_selection(
    plan: Option<&CompactionPlanResult>,
    keep: Option<KeepMode>,
    scope: Option<DedupeScope>,
) -> Result<Option<PlanSelection>> {
    let in_place = keep == Some(KeepMode::InPlace);
    let tuple_scope = scope == Some(DedupeScope::Tuple);
    let Some(plan) = plan else {
        if in_place {
            return Err(invalid("'keep' needs a 'plan'".into()));
        }
        return Ok(None);
    };
    let last = plan.paths.len().max(1) - 1;
    let mut groups = Vec::with_capacity(plan.groups.len());
    for (i, g) in plan.groups.iter().enumerate() {
        let indexes = |key: &str, items: &[u32]| -> Result<Vec<usize>> {
            items
                .iter()
                .enumerate()
                .map(|(k, &n)| {
                    Ok(integer(Some(Num(f64::from(n))), &format!("plan.groups[{i}].{key}[{k}]"), 0.0, last as f64)?.unwrap_or(0.0) as usize)
                })
                .collect()
        };
        groups.push(SelectedGroup {
            rewrite: g.action == PlanAction::Rewrite,
            rewrite_files: indexes("rewrite", &g.rewrite)?,
            keep_files: indexes("keep", &g.keep)?,
        });
    }
    Ok(Some(PlanSelection { paths: plan.paths.clone(), groups, in_place, tuple_scope }))
}

/// A plan handed back to `compactGeneration` (`opts.plan`): per tuple, what to rewrite and
/// what to keep, as indexes into `files`.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSelection {
    /// The planned files' paths: they must be the call's `files`.
    pub paths: Vec<String>,
    pub groups: Vec<SelectedGroup>,
    /// `keep: 'in-place'`: kept files stay where they are.
    pub in_place: bool,
    /// `dedupeScope: 'tuple'`: only kept files of rewritten tuples hold keys that matter.
    pub tuple_scope: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SelectedGroup {
    pub rewrite: bool,
    pub rewrite_files: Vec<usize>,
    pub keep_files: Vec<usize>,
}

impl PlanSelection {
    /// Checks the plan is for `paths` and places every file once: (files to rewrite, files to
    /// keep, kept files whose keys a rewrite must not repeat), each in `files` order.
    pub fn split(&self, paths: &[String]) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>)> {
        if self.paths != paths {
            return Err(CompactError::InvalidOptions("'plan' is for other files: its paths differ from 'files'".into()));
        }
        let mut role: Vec<Option<bool>> = vec![None; paths.len()];
        let mut seed = vec![false; paths.len()];
        for g in &self.groups {
            let chosen = if g.rewrite { &g.rewrite_files } else { &[][..] };
            let kept = if g.rewrite { &g.keep_files } else { &g.keep_files[..] };
            let kept_extra: &[usize] = if g.rewrite { &[] } else { &g.rewrite_files };
            for (&i, rewrite) in chosen.iter().map(|i| (i, true)).chain(kept.iter().chain(kept_extra).map(|i| (i, false))) {
                let Some(slot) = role.get_mut(i) else {
                    return Err(CompactError::InvalidOptions(format!("'plan' names file {i}, beyond 'files'")));
                };
                if slot.is_some_and(|r| r != rewrite) {
                    return Err(CompactError::InvalidOptions(format!("'plan' both rewrites and keeps files[{i}]")));
                }
                *slot = Some(rewrite);
                if !rewrite && (g.rewrite || !self.tuple_scope) {
                    seed[i] = true;
                }
            }
        }
        if let Some(i) = role.iter().position(Option::is_none) {
            return Err(CompactError::InvalidOptions(format!("'plan' neither rewrites nor keeps files[{i}]")));
        }
        let pick = |want: bool| (0..paths.len()).filter(|&i| role[i] == Some(want)).collect::<Vec<_>>();
        Ok((pick(true), pick(false), (0..paths.len()).filter(|&i| seed[i] && role[i] == Some(false)).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(v: serde_json::Value) -> Result<CompactOptions> {
        crate::options::parse_options(crate::options::values::js_numbers(v), |e| e.to_string())
    }

    #[test]
    fn defaults_ranges_and_unknown_keys() {
        let o = plan_options(&opts(json!({ "outDir": "x" })).unwrap()).unwrap();
        assert_eq!((o.target, o.min, o.max, o.min_input_files), (128 << 20, 96 << 20, 241_591_910, 5));
        let bad = |v: serde_json::Value| opts(v).and_then(|o| plan_options(&o)).is_err();
        assert!(bad(json!({ "targetFileBytes": 2048, "minFileBytes": 4096 })));
        assert!(bad(json!({ "targetFileBytes": 2048, "maxFileBytes": 2048 })));
        assert!(bad(json!({ "minInputFiles": 0 })));
        assert!(bad(json!({ "dedupeScope": "file" })));
        assert!(bad(json!({ "minFiles": 2 })));
        assert!(!bad(json!({ "targetFileBytes": 2048, "minFileBytes": 2048, "minInputFiles": 1 })));
        // planCompaction needs no outDir, and takes compactGeneration's other keys unused.
        assert!(!bad(json!({ "compression": "zstd", "verify": false, "outDir": null })));
    }

    #[test]
    fn plan_handed_back() {
        let plan = json!({ "paths": ["a", "b"], "due": true, "groups": [
            { "partition": { "d": 1 }, "action": "rewrite", "reasons": ["small-files"], "rewrite": [0], "keep": [1], "expectedFiles": 1 }
        ], "rewriteFiles": 1, "rewriteBytes": 10, "keepFiles": 1, "keepBytes": 10 });
        let o = opts(json!({ "outDir": "x", "plan": plan, "keep": "in-place" })).unwrap();
        let s = plan_selection(o.plan.as_ref(), o.keep, o.dedupe_scope).unwrap().unwrap();
        assert!(s.in_place && !s.tuple_scope);
        assert_eq!(s.groups, vec![SelectedGroup { rewrite: true, rewrite_files: vec![0], keep_files: vec![1] }]);
        // only paths and each group's action, rewrite and keep are needed
        let o = opts(json!({ "plan": { "paths": ["a"], "groups": [{ "action": "keep", "rewrite": [], "keep": [0] }] } })).unwrap();
        assert!(plan_selection(o.plan.as_ref(), None, None).unwrap().is_some());
        for bad in [
            json!({ "plan": { "paths": ["a"], "groups": [{ "action": "drop", "rewrite": [], "keep": [0] }] } }),
            json!({ "plan": { "paths": ["a"], "groups": [{ "action": "keep", "rewrite": [], "keep": [1] }] } }),
            json!({ "plan": { "paths": ["a"], "groups": [{ "action": "keep", "rewrite": [], "keep": [-1] }] } }),
            json!({ "plan": { "paths": "a", "groups": [] } }),
            json!({ "plan": { "paths": ["a"] } }),
            json!({ "keep": "in-place" }),
            json!({ "keep": "copy" }),
        ] {
            let r = opts(bad.clone()).and_then(|o| plan_selection(o.plan.as_ref(), o.keep, o.dedupe_scope));
            assert_eq!(r.err().map(|e| e.code()), Some("ERR_INVALID_OPTIONS"), "{bad}");
        }
    }
}
