//! The N-API side of `planCompaction`: converts its arguments, plans on a blocking thread of
//! the addon's runtime (planning may read footers and partition columns), and returns the
//! plan as the README and index.d.ts describe it. Memory: the parsed arguments and the plan.

use crate::error::CompactError;
use crate::options::contract::{CompactOptions, CompactionPlanResult, PlanAction, PlanGroup};
use crate::options::values::Obj;
use crate::planning::facts::{plan_compaction as plan_files, CompactionPlan, Key};
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

/// Decides, per partition tuple, whether compacting it changes anything: rewrite or keep, with
/// reasons. Reads nothing the caller passed in `files` (size, partition, sort order); reads
/// footers (and partition columns whose statistics do not settle them) otherwise.
#[napi(ts_args_type = "files: Array<string | InputFile>, opts: Partial<CompactOptions>", ts_return_type = "Promise<CompactionPlanResult>")]
pub fn plan_compaction<'env>(env: &'env Env, files: Unknown<'env>, opts: Unknown<'env>) -> Result<PromiseRaw<'env, CompactionPlanResult>> {
    let prepared = prepare(&files, &opts);
    let work = async move {
        let outcome = match prepared {
            Err(e) => Err(e),
            Ok((inputs, options)) => {
                match tokio::task::spawn_blocking(move || crate::contain::guard(|| plan_files(&inputs, &options))).await {
                    Ok(r) => r,
                    Err(e) => Err(CompactError::Internal(format!("worker failed: {e}"))),
                }
            }
        };
        Ok(outcome)
    };
    env.spawn_future_with_callback(work, move |env, outcome| match outcome {
        Ok(plan) => Ok(to_js(plan)),
        Err(e) => Err(crate::node::js_error(env, &e)),
    })
}

type Prepared = (Vec<crate::planning::facts::PlanInput>, crate::planning::facts::PlanOptions);

fn prepare(files: &Unknown, opts: &Unknown) -> std::result::Result<Prepared, CompactError> {
    let js = |e: napi::Error| CompactError::InvalidOptions(e.reason.clone());
    let inputs = crate::options::plan_inputs(&crate::node::parse_files(files)?)?;
    if opts.get_type().map_err(js)? != ValueType::Object {
        return Err(CompactError::InvalidOptions("'opts' must be an object".into()));
    }
    let obj: Object = unsafe { opts.cast().map_err(js)? };
    let parsed: CompactOptions = crate::node::parse_value::<Obj<CompactOptions>>(&obj, "")?.0;
    Ok((inputs, crate::planning::facts::PlanOptions::from_config(crate::options::plan::plan_options(&parsed)?)?))
}

fn json(k: &Key) -> serde_json::Value {
    use serde_json::Value;
    match k {
        Key::Null => Value::Null,
        Key::Bool(b) => Value::Bool(*b),
        Key::Int(n) => i64::try_from(*n).map(Value::from).unwrap_or_else(|_| Value::String(n.to_string())),
        Key::Float(bits) => serde_json::Number::from_f64(f64::from_bits(*bits)).map(Value::Number).unwrap_or(Value::Null),
        Key::Text(s) => Value::String(s.clone()),
    }
}

fn to_js(plan: CompactionPlan) -> CompactionPlanResult {
    let index = |v: Vec<usize>| v.into_iter().map(|i| i as u32).collect();
    CompactionPlanResult {
        paths: plan.paths,
        due: plan.due,
        groups: plan
            .groups
            .into_iter()
            .map(|g| PlanGroup {
                partition: g.partition.iter().map(|(name, k)| (name.clone(), json(k))).collect(),
                action: if g.rewrite { PlanAction::Rewrite } else { PlanAction::Keep },
                reasons: g.reasons.iter().map(|r| r.word().to_string()).collect(),
                rewrite: index(g.rewrite_files),
                keep: index(g.keep_files),
                expected_files: g.expected_files as i64,
            })
            .collect(),
        rewrite_files: plan.rewrite_files as u32,
        rewrite_bytes: plan.rewrite_bytes as i64,
        keep_files: plan.keep_files as u32,
        keep_bytes: plan.keep_bytes as i64,
    }
}
