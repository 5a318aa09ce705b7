//! Group: assign the inputs' row groups to partition tuples by decoding only the partition
//! source columns, so that each tuple can then be read and written on its own, with one open
//! input and one open output file. A row group holding rows of several tuples is marked
//! `mixed` and its batches are filtered when each of its tuples is written.
//!
//! Rows the table deleted are dropped as they are read, so they belong to no tuple.
//!
//! Memory: the partition columns of one batch; per tuple, the list of its row groups.

use crate::budget::ReadLimits;
use crate::dedupe::Deduper;
use crate::divert::Diverter;
use crate::error::CompactError;
use crate::error::Result;
use crate::iceberg::deletes::DeleteIndex;
use crate::iceberg::partition::Partitioner;
use crate::order::OrderCheck;
use crate::plan::Plan;
use crate::read::{all_segments, read_segments, RowFilters, Segment};
use arrow_array::{BooleanArray, RecordBatch};
use roaring::RoaringTreemap;
use std::sync::atomic::AtomicBool;

/// What grouping found: the tuples, and (with `partitionBy`) the rows equality deletes
/// removed, counted here once (a row group is read for each of its tuples, or for none when
/// no row survives).
pub struct Groups {
    pub tuples: Vec<TupleGroup>,
    pub equality_deleted: Option<u64>,
}

/// The row groups of one partition tuple (or of the whole call, without `partitionBy`).
#[derive(Debug, Clone, PartialEq)]
pub struct TupleGroup {
    /// The partitioner's tuple id; `None` without `partitionBy`.
    pub tuple: Option<usize>,
    pub segments: Vec<Segment>,
    /// The compressed input bytes its rows come from (shares of mixed row groups by rows).
    pub input_bytes: f64,
    /// With `sortBy`: its rows already arrive in order (see `order::OrderCheck`).
    pub presorted: bool,
}

/// Groups in order of first appearance (`files` order, then row order).
/// With `partitionBy` and `dedupeBy`, grouping also settles dedupe for the whole call: tuples
/// are written one at a time, but the first occurrence of a key is the first in `files` order,
/// whichever tuple it is in. The key column (and divert's, whose rows take no part in dedupe)
/// is decoded with the partition columns, and later occurrences are recorded by position.
pub struct FirstPass<'a, 'b> {
    pub deduper: &'a mut Deduper,
    pub diverter: Option<&'a Diverter<'b>>,
    /// Per input: positions of later occurrences of a key.
    pub duplicates: Vec<Option<RoaringTreemap>>,
}

/// Rows the table deleted count toward no tuple.
pub fn group(
    plan: &Plan,
    partitioner: Option<&mut Partitioner>,
    deletes: Option<&DeleteIndex>,
    mut first_pass: Option<&mut FirstPass>,
    mut order: Option<&mut OrderCheck>,
    limits: &ReadLimits,
    cancel: &AtomicBool,
) -> Result<Groups> {
    let Some(partitioner) = partitioner else {
        // The input bytes of the rows that survive position deletes (equality deletes are
        // found only while reading).
        let input_bytes = plan
            .inputs
            .iter()
            .enumerate()
            .map(|(i, input)| {
                let deleted = deletes.map(|d| d.positions_deleted(i, input.rows)).unwrap_or(0);
                input.data_bytes as f64 * (input.rows.saturating_sub(deleted)) as f64 / input.rows.max(1) as f64
            })
            .sum();
        let mut presorted = false;
        if let Some(order) = order {
            // Only the sort keys are decoded (equality deletes, found again while reading,
            // are counted there).
            let filters = RowFilters { deletes, ..RowFilters::default() };
            let roots = order.roots().to_vec();
            read_segments(plan, &all_segments(plan), Some(&roots), limits, cancel, filters, |segment, batch| {
                order.observe(&batch.batch, None, segment.input, segment.row_group)
            })?;
            presorted = order.in_order(0);
        }
        return Ok(Groups {
            tuples: vec![TupleGroup { tuple: None, segments: all_segments(plan), input_bytes, presorted }],
            equality_deleted: None,
        });
    };
    let mut roots = partitioner.source_roots();
    if let Some(order) = order.as_deref() {
        roots.extend_from_slice(order.roots());
        roots.sort_unstable();
        roots.dedup();
    }
    if let Some(fp) = first_pass.as_deref_mut() {
        roots.extend(plan.arrow_schema.index_of(fp.deduper.column_name()).ok());
        roots.extend(fp.diverter.map(|d| d.column()));
        roots.sort_unstable();
        roots.dedup();
        fp.duplicates = vec![None; plan.inputs.len()];
    }
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
    let filters = RowFilters { deletes, positions: first_pass.is_some(), ..RowFilters::default() };
    let mut equality_deleted = 0u64;
    read_segments(plan, &all_segments(plan), Some(&roots), limits, cancel, filters, |segment, mut batch| {
        equality_deleted += batch.deleted;
        if batch.batch.num_rows() == 0 {
            return Ok(());
        }
        if let Some(fp) = first_pass.as_deref_mut() {
            // Diverted rows take no part in dedupe: neither recorded nor dropped.
            let diverted = fp.diverter.map(|d| d.matches_in(&batch.batch)).filter(|m| m.iter().any(|x| *x));
            let filtered;
            let (rows, positions): (&RecordBatch, Vec<u64>) = match &diverted {
                Some(m) => {
                    let keep: BooleanArray = m.iter().map(|d| Some(!*d)).collect();
                    filtered = arrow_select::filter::filter_record_batch(&batch.batch, &keep)
                        .map_err(|e| CompactError::Internal(format!("divert: {e}")))?;
                    (&filtered, batch.positions.iter().zip(m).filter(|(_, d)| !**d).map(|(p, _)| *p).collect())
                }
                None => (&batch.batch, std::mem::take(&mut batch.positions)),
            };
            let first = fp.deduper.first_occurrences(rows)?;
            for (is_first, pos) in first.into_iter().zip(positions) {
                if !is_first {
                    if let Some(slot) = fp.duplicates.get_mut(segment.input) {
                        slot.get_or_insert_with(RoaringTreemap::new).insert(pos);
                    }
                }
            }
        }
        if current.as_ref().map(|(s, _)| s) != Some(segment) {
            finish(&mut groups, current.take());
            current = Some((segment.clone(), Vec::new()));
        }
        let ids = partitioner.tuple_ids(&batch.batch)?;
        if let Some(order) = order.as_deref_mut() {
            order.observe(&batch.batch, Some(&ids), segment.input, segment.row_group)?;
        }
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
                groups.push(TupleGroup { tuple: Some(groups.len()), segments: Vec::new(), input_bytes: 0.0, presorted: false });
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
    if let Some(order) = order {
        for g in groups.iter_mut() {
            g.presorted = g.tuple.is_some_and(|t| order.in_order(t));
        }
    }
    Ok(Groups { tuples: groups, equality_deleted: Some(equality_deleted) })
}
