//! The N-API side of `planCompaction`: converts its arguments, plans on a blocking thread of
//! the addon's runtime (planning may read footers and partition columns), and returns the
//! plan as the README and index.d.ts describe it.

use crate::error::CompactError;
use crate::planning::facts::{plan_compaction as plan_files, CompactionPlan, Key};
use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

/// One partition tuple's decision.
#[napi(object, object_from_js = false)]
pub struct PlanGroup {
    /// The tuple's partition values, typed as `OutputFile.partition`.
    #[napi(ts_type = "Record<string, unknown>")]
    pub partition: serde_json::Map<String, serde_json::Value>,
    #[napi(ts_type = "'rewrite' | 'keep'")]
    pub action: String,
    /// Why it is rewritten (stable words: 'deletes', 'oversize', 'unsorted', 'small-files',
    /// 'fills-target', 'spans-tuples', 'forced'); empty when kept.
    pub reasons: Vec<String>,
    /// Indexes into `files` of the files a rewrite reads.
    pub rewrite: Vec<u32>,
    /// Indexes into `files` of the files left as they are.
    pub keep: Vec<u32>,
    /// Files the rewrite writes (0 when kept).
    pub expected_files: i64,
}

/// What `planCompaction` decided.
#[napi(object, object_from_js = false)]
pub struct CompactionPlanResult {
    /// The planned files' paths, in `files` order.
    pub paths: Vec<String>,
    /// Some group is to be rewritten.
    pub due: bool,
    /// One per partition tuple, in order of first appearance.
    pub groups: Vec<PlanGroup>,
    pub rewrite_files: u32,
    pub rewrite_bytes: i64,
    pub keep_files: u32,
    pub keep_bytes: i64,
}

/// Options of `planCompaction` (the TypeScript shape; values are validated in Rust): the
/// layout options of `compactGeneration` — pass the same object — and the planning rules.
#[allow(dead_code)]
#[napi(object, object_to_js = false)]
pub struct PlanOptions {
    /// As in `CompactOptions`; other `CompactOptions` keys are accepted and not used.
    pub target_file_bytes: Option<f64>,
    #[napi(ts_type = "Array<{ column: string; transform?: string; name?: string }>")]
    pub partition_by: Option<Vec<String>>,
    #[napi(ts_type = "Array<{ column: string; descending?: boolean; nullsFirst?: boolean }>")]
    pub sort_by: Option<Vec<String>>,
    /// A file whose `sortOrderId` (from its manifest) equals this non-zero id is known sorted.
    pub sort_order_id: Option<f64>,
    pub dedupe_by: Option<String>,
    /// Files of at least this size (and at most `maxFileBytes`), with no deletes, one tuple and
    /// (with `sortBy`) known sorted, are sealed: always kept. Default 0.75 × targetFileBytes.
    pub min_file_bytes: Option<f64>,
    /// Files above this are split. Default 1.8 × targetFileBytes.
    pub max_file_bytes: Option<f64>,
    /// Unsealed files in a tuple that make it due (when rewriting them writes fewer files).
    /// Default 5; a caller that knows a day is closed may pass 2 (or 1).
    pub min_input_files: Option<f64>,
    /// 'call' (default) or 'tuple' (the dedupe key embeds the partition columns, so kept files
    /// of other tuples need not be read).
    #[napi(ts_type = "'call' | 'tuple'")]
    pub dedupe_scope: Option<String>,
}

/// Decides, per partition tuple, whether compacting it changes anything: rewrite or keep, with
/// reasons. Reads nothing the caller passed in `files` (size, partition, sort order); reads
/// footers (and partition columns whose statistics do not settle them) otherwise.
#[napi(ts_args_type = "files: Array<string | InputFile>, opts: PlanOptions", ts_return_type = "Promise<CompactionPlanResult>")]
pub fn plan_compaction<'env>(env: &'env Env, files: Unknown<'env>, opts: Unknown<'env>) -> Result<PromiseRaw<'env, CompactionPlanResult>> {
    let prepared = prepare(env, &files, &opts);
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

fn prepare(env: &Env, files: &Unknown, opts: &Unknown) -> std::result::Result<Prepared, CompactError> {
    let invalid = |m: &str| CompactError::InvalidOptions(m.into());
    let js = |e: napi::Error| CompactError::InvalidOptions(e.reason.clone());
    let files = crate::node::raw_value_at(env, files, 0, crate::node::MAX_FILE_DEPTH + 1).map_err(js)?;
    let crate::options::RawValue::Array(items) = files else {
        return Err(invalid("'files' must be an array of file paths or { path, … }"));
    };
    let inputs = crate::options::plan_inputs(&items)?;
    if opts.get_type().map_err(js)? != ValueType::Object {
        return Err(invalid("'opts' must be an object"));
    }
    let crate::options::RawValue::Object(entries) = crate::node::raw_value_at(env, opts, 0, crate::node::MAX_OPTION_DEPTH).map_err(js)?
    else {
        return Err(invalid("'opts' must be a plain object"));
    };
    Ok((inputs, crate::planning::facts::PlanOptions::from_config(crate::options::plan::plan_options(&entries)?)?))
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
                action: if g.rewrite { "rewrite" } else { "keep" }.into(),
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
