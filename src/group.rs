//! Group: assign the inputs' row groups to partition tuples by decoding only the partition
//! source columns, so that each tuple can then be read and written on its own, with one open
//! input and one open output file. A row group holding rows of several tuples is marked
//! `mixed` and its batches are filtered when each of its tuples is written.
//!
//! Memory: the partition columns of one batch; per tuple, the list of its row groups.

use crate::error::Result;
use crate::iceberg::partition::Partitioner;
use crate::plan::Plan;
use crate::read::{all_segments, read_segments, ReadLimits, Segment};
use std::sync::atomic::AtomicBool;

/// The row groups of one partition tuple (or of the whole call, without `partitionBy`).
#[derive(Debug, Clone, PartialEq)]
pub struct TupleGroup {
    /// The partitioner's tuple id; `None` without `partitionBy`.
    pub tuple: Option<usize>,
    pub segments: Vec<Segment>,
    /// The compressed input bytes its rows come from (shares of mixed row groups by rows).
    pub input_bytes: f64,
}

/// Groups in order of first appearance (`files` order, then row order).
pub fn group(plan: &Plan, partitioner: Option<&mut Partitioner>, limits: &ReadLimits, cancel: &AtomicBool) -> Result<Vec<TupleGroup>> {
    let Some(partitioner) = partitioner else {
        return Ok(vec![TupleGroup { tuple: None, segments: all_segments(plan), input_bytes: plan.total_data_bytes as f64 }]);
    };
    let roots = partitioner.source_roots();
    let mut groups: Vec<TupleGroup> = Vec::new();
    // Tuples seen in the row group being read, to mark it mixed once it is complete.
    let mut current: Option<(Segment, Vec<usize>)> = None;
    let finish = |groups: &mut Vec<TupleGroup>, done: Option<(Segment, Vec<usize>)>| {
        if let Some((_, tuples)) = done {
            if tuples.len() > 1 {
                for t in tuples {
                    if let Some(last) = groups.get_mut(t).and_then(|g| g.segments.last_mut()) {
                        last.mixed = true;
                    }
                }
            }
        }
    };
    read_segments(plan, &all_segments(plan), Some(&roots), limits, cancel, |segment, batch| {
        if current.as_ref().map(|(s, _)| s) != Some(segment) {
            finish(&mut groups, current.take());
            current = Some((segment.clone(), Vec::new()));
        }
        let ids = partitioner.tuple_ids(&batch.batch)?;
        let n = ids.len().max(1) as f64;
        let mut counts: Vec<(usize, usize)> = Vec::new();
        for id in ids {
            match counts.iter_mut().find(|(t, _)| *t == id) {
                Some((_, c)) => *c += 1,
                None => counts.push((id, 1)),
            }
        }
        for (t, c) in counts {
            while groups.len() <= t {
                groups.push(TupleGroup { tuple: Some(groups.len()), segments: Vec::new(), input_bytes: 0.0 });
            }
            let g = &mut groups[t];
            g.input_bytes += batch.input_bytes * c as f64 / n;
            if g.segments.last() != Some(segment) {
                g.segments.push(segment.clone());
            }
            if let Some((_, seen)) = current.as_mut() {
                if !seen.contains(&t) {
                    seen.push(t);
                }
            }
        }
        Ok(())
    })?;
    finish(&mut groups, current.take());
    Ok(groups)
}
