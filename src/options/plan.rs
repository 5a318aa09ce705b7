//! The options of `planCompaction`: the layout options of `compactGeneration` (the same names,
//! so a caller passes one object to both) and the planning rules.

use super::{integer, invalid, partition_by, sort_by, RawValue, DEFAULT_TARGET_FILE_BYTES, KNOWN_KEYS, MAX_SAFE_INTEGER};
use crate::error::{CompactError, Result};
use crate::iceberg::partition::PartitionField;
use crate::options::SortKey;

/// The planning rules' keys (accepted by `compactGeneration` too, beside its `plan`).
pub const PLAN_KEYS: &[&str] = &["minFileBytes", "maxFileBytes", "minInputFiles", "dedupeScope"];

/// Validates `planCompaction`'s options: `entries` are all own enumerable keys of the JS object.
/// `compactGeneration`'s other options are accepted and not used.
pub fn plan_options(entries: &[(String, RawValue)]) -> Result<PlanConfig> {
    let get = |key: &str| -> RawValue { entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or(RawValue::Undefined) };
    for (key, _) in entries {
        if !KNOWN_KEYS.contains(&key.as_str()) && !PLAN_KEYS.contains(&key.as_str()) && key != "plan" && key != "keep" {
            return Err(invalid(format!("unknown option '{key}'")));
        }
    }
    let bytes = |key: &str| -> Result<Option<u64>> { Ok(integer(&get(key), key, 0.0, MAX_SAFE_INTEGER)?.map(|n| n as u64)) };
    let target =
        integer(&get("targetFileBytes"), "targetFileBytes", 1024.0, MAX_SAFE_INTEGER)?.map_or(DEFAULT_TARGET_FILE_BYTES, |n| n as u64);
    let min_input_files = integer(&get("minInputFiles"), "minInputFiles", 1.0, 1e9)?.map(|n| n as usize);
    let sort_by = sort_by(&get("sortBy"))?;
    let sort_order_id = integer(&get("sortOrderId"), "sortOrderId", 0.0, i32::MAX as f64)?.map_or(0, |n| n as i32);
    if sort_order_id > 0 && sort_by.is_none() {
        return Err(invalid("'sortOrderId' claims a sort order, but no 'sortBy' was given".into()));
    }
    match get("dedupeBy") {
        RawValue::Undefined | RawValue::Null => {}
        RawValue::String(s) if !s.is_empty() => {}
        v => return Err(invalid(format!("'dedupeBy' must be a column name, got {}", v.type_name()))),
    }
    match get("dedupeScope") {
        RawValue::Undefined | RawValue::Null => {}
        RawValue::String(s) if s == "call" || s == "tuple" => {}
        v => return Err(invalid(format!("'dedupeScope' must be 'call' or 'tuple', got {v:?}"))),
    }
    let (min, max, min_input_files) = band(target, bytes("minFileBytes")?, bytes("maxFileBytes")?, min_input_files)?;
    Ok(PlanConfig { target, min, max, min_input_files, partition_by: partition_by(&get("partitionBy"))?, sort_by, sort_order_id })
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
pub fn plan_selection(plan: &RawValue, keep: &RawValue, scope: &RawValue) -> Result<Option<PlanSelection>> {
    let in_place = match keep {
        RawValue::Undefined | RawValue::Null => false,
        RawValue::String(s) if s == "link" => false,
        RawValue::String(s) if s == "in-place" => true,
        v => return Err(invalid(format!("'keep' must be 'link' or 'in-place', got {v:?}"))),
    };
    let tuple_scope = matches!(scope, RawValue::String(s) if s == "tuple");
    let entries = match plan {
        RawValue::Undefined | RawValue::Null => {
            if in_place {
                return Err(invalid("'keep' needs a 'plan'".into()));
            }
            return Ok(None);
        }
        RawValue::Object(entries) => entries,
        v => return Err(invalid(format!("'plan' must be a planCompaction result, got {}", v.type_name()))),
    };
    let get = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or(RawValue::Undefined);
    let RawValue::Array(raw_paths) = get("paths") else { return Err(invalid("'plan.paths' must be an array of paths".into())) };
    let paths = raw_paths
        .iter()
        .map(|p| match p {
            RawValue::String(s) => Ok(s.clone()),
            v => Err(invalid(format!("'plan.paths' must hold strings, got {}", v.type_name()))),
        })
        .collect::<Result<Vec<String>>>()?;
    let RawValue::Array(raw_groups) = get("groups") else { return Err(invalid("'plan.groups' must be an array".into())) };
    let mut groups = Vec::with_capacity(raw_groups.len());
    for (i, g) in raw_groups.iter().enumerate() {
        let RawValue::Object(fields) = g else { return Err(invalid(format!("'plan.groups[{i}]' must be an object"))) };
        let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or(RawValue::Undefined);
        let rewrite = match field("action") {
            RawValue::String(a) if a == "rewrite" => true,
            RawValue::String(a) if a == "keep" => false,
            v => return Err(invalid(format!("'plan.groups[{i}].action' must be 'rewrite' or 'keep', got {v:?}"))),
        };
        let indexes = |key: &str| -> Result<Vec<usize>> {
            let RawValue::Array(items) = field(key) else { return Err(invalid(format!("'plan.groups[{i}].{key}' must be an array"))) };
            items
                .iter()
                .map(|v| Ok(integer(v, &format!("plan.groups[{i}].{key}"), 0.0, (paths.len().max(1) - 1) as f64)?.unwrap_or(0.0) as usize))
                .collect()
        };
        groups.push(SelectedGroup { rewrite, rewrite_files: indexes("rewrite")?, keep_files: indexes("keep")? });
    }
    Ok(Some(PlanSelection { paths, groups, in_place, tuple_scope }))
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

    fn raw(pairs: &[(&str, RawValue)]) -> Vec<(String, RawValue)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn defaults_ranges_and_unknown_keys() {
        let o = plan_options(&raw(&[("outDir", RawValue::String("x".into()))])).unwrap();
        assert_eq!((o.target, o.min, o.max, o.min_input_files), (128 << 20, 96 << 20, 241_591_910, 5));
        let bad = |pairs: &[(&str, RawValue)]| plan_options(&raw(pairs)).is_err();
        assert!(bad(&[("targetFileBytes", RawValue::Number(2048.0)), ("minFileBytes", RawValue::Number(4096.0))]));
        assert!(bad(&[("targetFileBytes", RawValue::Number(2048.0)), ("maxFileBytes", RawValue::Number(2048.0))]));
        assert!(bad(&[("minInputFiles", RawValue::Number(0.0))]));
        assert!(bad(&[("dedupeScope", RawValue::String("file".into()))]));
        assert!(bad(&[("minFiles", RawValue::Number(2.0))]));
        assert!(!bad(&[
            ("targetFileBytes", RawValue::Number(2048.0)),
            ("minFileBytes", RawValue::Number(2048.0)),
            ("minInputFiles", RawValue::Number(1.0))
        ]));
    }
}
