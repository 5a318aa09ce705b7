//! The options of `planCompaction`: the layout options of `compactGeneration` (the same names,
//! so a caller passes one object to both) and the planning rules.

use super::{integer, invalid, partition_by, sort_by, RawValue, DEFAULT_TARGET_FILE_BYTES, KNOWN_KEYS, MAX_SAFE_INTEGER};
use crate::error::Result;
use crate::planning::facts::PlanOptions;
use crate::planning::Rules;
use crate::planning::{PlanSelection, SelectedGroup};

/// The planning rules' keys (accepted by `compactGeneration` too, beside its `plan`).
pub const PLAN_KEYS: &[&str] = &["minFileBytes", "maxFileBytes", "minInputFiles", "dedupeScope"];

/// Validates `planCompaction`'s options: `entries` are all own enumerable keys of the JS object.
/// `compactGeneration`'s other options are accepted and not used.
pub fn plan_options(entries: &[(String, RawValue)]) -> Result<PlanOptions> {
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
    let rules = Rules::new(target, bytes("minFileBytes")?, bytes("maxFileBytes")?, min_input_files, sort_by.is_some())?;
    Ok(PlanOptions { rules, partition_by: partition_by(&get("partitionBy"))?, sort_by, sort_order_id })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, RawValue)]) -> Vec<(String, RawValue)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn defaults_ranges_and_unknown_keys() {
        let o = plan_options(&raw(&[("outDir", RawValue::String("x".into()))])).unwrap();
        assert_eq!((o.rules.target, o.rules.min, o.rules.max, o.rules.min_input_files), (128 << 20, 96 << 20, 241_591_910, 5));
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
