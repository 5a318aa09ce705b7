//! Union: one dictionary per dictionary column for all the runs of a merge, built run by run.
//!
//! Every run's chunks share their run's dictionary (`gather::share`), but the runs'
//! dictionaries differ, and gathering rows from many runs made arrow merge their values for
//! every output batch (hashing each referenced value again, batch after batch). With the union,
//! built once from each run's first chunk, each chunk's keys are remapped as it is read
//! (`remap`), every source of an output batch shares one dictionary, and `interleave` gathers
//! keys only. A column whose runs' values would not fit the cap together, or whose dictionary
//! holds a null value, is left as it was.
//!
//! The union is built one run at a time (`UnionBuilder::add`): a run's first chunk can be
//! dropped as soon as it has been added, so a merge that opens its runs only when it reaches
//! them (`sort`) needs no run open to build it. A chunk is remapped only if its dictionary is
//! the one its run's first chunk had (`Seen`, taken by the reader when it reads that chunk):
//! a chunk whose buffer could not share a dictionary keeps its own.
//!
//! Memory: the union values and an index of them (a hash and an i32 per value), at most the
//! cap the caller gives for all columns together, and per run and column a mapping of one i32
//! per dictionary entry.

use crate::dictionary::has_dictionary;
use crate::error::{CompactError, Result};
use crate::gather::{remap_keys, ValueSet};
use arrow_array::cast::AsArray;
use arrow_array::types::{ByteArrayType, GenericBinaryType, GenericStringType, Int32Type};
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, StructArray};
use arrow_data::ArrayData;
use arrow_schema::DataType;

/// The union of the runs' dictionaries (see the module doc).
pub struct Union {
    columns: Vec<Node>,
    bytes: usize,
}

enum Node {
    Keep,
    /// The union values, and each run's mapping into them (`None`: an empty run, or one whose
    /// first chunk had no dictionary here).
    Dict(ArrayRef, Vec<Option<Vec<i32>>>),
    Struct(Vec<Node>),
}

/// The dictionaries a run's first chunk had, one per `Node::Dict` (depth first): the run's
/// own, which its mapping is for.
pub struct Seen(Vec<Option<ArrayData>>);

/// Builds a `Union` from the runs' first chunks, added in run order.
pub struct UnionBuilder {
    columns: Option<Vec<Building>>,
    /// Bytes left of the cap.
    room: usize,
    runs: usize,
}

enum Building {
    Keep,
    Dict(Box<dyn ValuesUnion>, Vec<Option<Vec<i32>>>),
    Struct(Vec<Building>),
}

impl UnionBuilder {
    pub fn new(cap: usize) -> Self {
        UnionBuilder { columns: None, room: cap, runs: 0 }
    }

    /// Adds the next run by its first chunk (`None`: an empty run).
    pub fn add(&mut self, first: Option<&RecordBatch>) {
        let run = self.runs;
        self.runs += 1;
        let Some(first) = first else { return };
        let columns = self.columns.get_or_insert_with(|| first.columns().iter().map(|c| building(c.data_type())).collect());
        for (node, array) in columns.iter_mut().zip(first.columns()) {
            add_node(node, run, Some(array), &mut self.room);
        }
    }

    pub fn finish(self) -> Union {
        let runs = self.runs;
        let columns: Vec<Node> = self.columns.unwrap_or_default().into_iter().map(|b| finish_node(b, runs)).collect();
        let bytes = columns.iter().map(node_bytes).sum();
        Union { columns, bytes }
    }
}

fn building(data_type: &DataType) -> Building {
    match data_type {
        DataType::Dictionary(key, value) if **key == DataType::Int32 => {
            let set: Option<Box<dyn ValuesUnion>> = match value.as_ref() {
                DataType::Utf8 => Some(Box::new(ValueSet::<GenericStringType<i32>>::default())),
                DataType::LargeUtf8 => Some(Box::new(ValueSet::<GenericStringType<i64>>::default())),
                DataType::Binary => Some(Box::new(ValueSet::<GenericBinaryType<i32>>::default())),
                DataType::LargeBinary => Some(Box::new(ValueSet::<GenericBinaryType<i64>>::default())),
                _ => None,
            };
            set.map(|s| Building::Dict(s, Vec::new())).unwrap_or(Building::Keep)
        }
        DataType::Struct(fields) if fields.iter().any(|f| has_dictionary(f.data_type())) => {
            Building::Struct(fields.iter().map(|f| building(f.data_type())).collect())
        }
        _ => Building::Keep,
    }
}

fn add_node(node: &mut Building, run: usize, array: Option<&ArrayRef>, room: &mut usize) {
    match node {
        Building::Keep => {}
        Building::Dict(set, mappings) => {
            let Some(dictionary) = array.and_then(|a| a.as_dictionary_opt::<Int32Type>()) else { return };
            match set.add(dictionary.values(), room) {
                Some(mapping) => {
                    mappings.resize_with(run, || None);
                    mappings.push(Some(mapping));
                }
                None => {
                    // (the column is left as it was: its values go back to the room)
                    *room += set.bytes();
                    *node = Building::Keep;
                }
            }
        }
        Building::Struct(children) => {
            let s = array.and_then(|a| a.as_struct_opt());
            for (f, child) in children.iter_mut().enumerate() {
                add_node(child, run, s.map(|s| s.column(f)), room);
            }
        }
    }
}

fn finish_node(node: Building, runs: usize) -> Node {
    match node {
        Building::Keep => Node::Keep,
        Building::Dict(set, mut mappings) => {
            mappings.resize_with(runs, || None);
            Node::Dict(set.finish(), mappings)
        }
        Building::Struct(children) => Node::Struct(children.into_iter().map(|c| finish_node(c, runs)).collect()),
    }
}

fn node_bytes(node: &Node) -> usize {
    match node {
        Node::Keep => 0,
        Node::Dict(values, _) => values.get_array_memory_size(),
        Node::Struct(children) => children.iter().map(node_bytes).sum(),
    }
}

impl Union {
    /// Bytes of the union values.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The dictionaries of a run's first chunk (see `Seen`).
    pub fn seen(&self, first: &RecordBatch) -> Seen {
        let mut seen = Vec::new();
        for (node, array) in self.columns.iter().zip(first.columns()) {
            seen_node(node, Some(array), &mut seen);
        }
        Seen(seen)
    }

    /// `chunk` of run `run`, whose first chunk had the dictionaries `seen`, with its dictionary
    /// columns over the union's values.
    pub fn remap(&self, run: usize, seen: &Seen, chunk: RecordBatch) -> Result<RecordBatch> {
        if self.columns.iter().all(|n| matches!(n, Node::Keep)) {
            return Ok(chunk);
        }
        let mut next = 0;
        let columns = chunk
            .columns()
            .iter()
            .zip(&self.columns)
            .map(|(array, node)| remap_node(node, run, seen, &mut next, array.clone()))
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new_with_options(chunk.schema(), columns, &RecordBatchOptions::new().with_row_count(Some(chunk.num_rows())))
            .map_err(|e| CompactError::Internal(format!("sharing dictionaries: {e}")))
    }
}

fn seen_node(node: &Node, array: Option<&ArrayRef>, seen: &mut Vec<Option<ArrayData>>) {
    match node {
        Node::Keep => {}
        Node::Dict(..) => seen.push(array.and_then(|a| a.as_dictionary_opt::<Int32Type>()).map(|d| d.values().to_data())),
        Node::Struct(children) => {
            let s = array.and_then(|a| a.as_struct_opt());
            for (f, child) in children.iter().enumerate() {
                seen_node(child, s.map(|s| s.column(f)), seen);
            }
        }
    }
}

fn remap_node(node: &Node, run: usize, seen: &Seen, next: &mut usize, array: ArrayRef) -> Result<ArrayRef> {
    match node {
        Node::Keep => Ok(array),
        Node::Dict(values, runs) => {
            let first = seen.0.get(*next).and_then(Option::as_ref);
            *next += 1;
            let Some(dictionary) = array.as_dictionary_opt::<Int32Type>() else { return Ok(array) };
            match (runs.get(run).and_then(Option::as_ref), first) {
                // (a chunk whose dictionary is not its run's first — one the run's buffer could
                // not share — keeps its own)
                (Some(mapping), Some(first)) if dictionary.values().to_data().ptr_eq(first) => remap_keys(dictionary, mapping, values),
                _ => Ok(array),
            }
        }
        Node::Struct(children) => {
            let Some(s) = array.as_struct_opt() else {
                *next += children.iter().map(dict_nodes).sum::<usize>();
                return Ok(array);
            };
            let columns =
                s.columns().iter().zip(children).map(|(c, n)| remap_node(n, run, seen, next, c.clone())).collect::<Result<Vec<_>>>()?;
            StructArray::try_new(s.fields().clone(), columns, s.nulls().cloned())
                .map(|s| std::sync::Arc::new(s) as ArrayRef)
                .map_err(|e| CompactError::Internal(format!("sharing dictionaries: {e}")))
        }
    }
}

fn dict_nodes(node: &Node) -> usize {
    match node {
        Node::Keep => 0,
        Node::Dict(..) => 1,
        Node::Struct(children) => children.iter().map(dict_nodes).sum(),
    }
}

/// The distinct values of the dictionaries added, copied, with their indexes.
trait ValuesUnion {
    /// Adds every value of `values` (all of them: later chunks of a run may use entries its
    /// first chunk does not); the new index of each. `None` if the values would not fit `room`
    /// (their bytes are taken from it as they are added), a value is null, or past i32 indexes.
    fn add(&mut self, values: &ArrayRef, room: &mut usize) -> Option<Vec<i32>>;
    /// Bytes taken from the room so far.
    fn bytes(&self) -> usize;
    fn finish(self: Box<Self>) -> ArrayRef;
}

impl<T: ByteArrayType> ValuesUnion for ValueSet<T> {
    fn add(&mut self, values: &ArrayRef, room: &mut usize) -> Option<Vec<i32>> {
        let values = values.as_bytes_opt::<T>()?;
        if values.null_count() > 0 {
            return None;
        }
        let mut mapping = Vec::with_capacity(values.len());
        for k in 0..values.len() {
            let before = self.bytes;
            mapping.push(ValueSet::add(self, values.value(k))?);
            // (a new value's bytes come from the room)
            *room = room.checked_sub(self.bytes - before)?;
        }
        Some(mapping)
    }

    fn bytes(&self) -> usize {
        self.bytes
    }

    fn finish(self: Box<Self>) -> ArrayRef {
        ValueSet::finish(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gather::interleave;
    use crate::gather::tests::{batch, rows};
    use arrow_array::{DictionaryArray, Int32Array};
    use arrow_buffer::NullBuffer;
    use std::sync::Arc;

    #[test]
    fn a_union_gives_every_runs_chunks_one_dictionary_and_keeps_their_rows() {
        // Three runs, each a first chunk and a later one over the same (run's) dictionary; the
        // later chunks use entries their first chunks do not.
        let runs: Vec<(RecordBatch, RecordBatch)> = [(vec!["a", "b", "c"], 0), (vec!["c", "d"], 1), (vec!["e", "a", "f", "b"], 2)]
            .into_iter()
            .map(|(values, run)| {
                let first = batch(&values, &[Some(0), None, Some(0), Some(0)]);
                let last = (values.len() - 1) as i32;
                let keys: Vec<Option<i32>> = vec![Some(last), Some(run % 2), None, Some(last)];
                // (the later chunk over the very same dictionary arrays as the first)
                let columns = first
                    .columns()
                    .iter()
                    .map(|c| {
                        let values_of = |a: &ArrayRef| a.as_dictionary::<Int32Type>().values().clone();
                        let dict = |a: &ArrayRef| -> ArrayRef {
                            Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys.clone()), values_of(a)).unwrap())
                        };
                        match c.data_type() {
                            DataType::Struct(f) => {
                                let s = c.as_struct();
                                let nulls = NullBuffer::from(vec![true, false, true, true]);
                                Arc::new(StructArray::try_new(f.clone(), vec![dict(s.column(0))], Some(nulls)).unwrap()) as ArrayRef
                            }
                            _ => dict(c),
                        }
                    })
                    .collect();
                (first.clone(), RecordBatch::try_new(first.schema(), columns).unwrap())
            })
            .collect();
        // (built run by run: each first chunk a copy, dropped once added)
        let build = |cap: usize| {
            let mut builder = UnionBuilder::new(cap);
            for (first, _) in &runs {
                let copy = first.clone();
                builder.add(Some(&copy));
            }
            builder.finish()
        };
        let union = build(1 << 20);
        assert!(union.bytes() > 0);
        let mut remapped = Vec::new();
        for (r, (first, later)) in runs.iter().enumerate() {
            for chunk in [first, later] {
                let got = union.remap(r, &union.seen(first), chunk.clone()).unwrap();
                assert_eq!(rows(&got), rows(chunk), "run {r}: the same rows");
                remapped.push(got);
            }
        }
        // every chunk of every run now shares one dictionary per column (in the struct too)
        let shared = |b: &RecordBatch| {
            let g = b.column(1).as_struct().column(0).as_dictionary::<Int32Type>().values().to_data();
            (b.column(0).as_dictionary::<Int32Type>().values().to_data(), g)
        };
        let (s0, g0) = shared(&remapped[0]);
        assert!(remapped.iter().all(|b| shared(b).0.ptr_eq(&s0) && shared(b).1.ptr_eq(&g0)));
        // so gathering from them keeps it, and gives the rows arrow gives from the originals
        let indices = vec![(5, 3), (0, 0), (3, 0), (1, 0), (4, 2)];
        let originals: Vec<&RecordBatch> = runs.iter().flat_map(|(f, l)| [f, l]).collect();
        let expected = rows(&arrow_select::interleave::interleave_record_batch(&originals, &indices).unwrap());
        let got = interleave(&remapped.iter().collect::<Vec<_>>(), &indices).unwrap();
        assert_eq!(rows(&got), expected);
        assert!(got.column(0).as_dictionary::<Int32Type>().values().to_data().ptr_eq(&s0));
        // a cap too small for the values: left as they were
        let none = build(4);
        let kept = none.remap(1, &none.seen(&runs[1].0), runs[1].1.clone()).unwrap();
        assert!(shared(&kept).0.ptr_eq(&shared(&runs[1].1).0));
    }

    #[test]
    fn a_chunk_over_another_dictionary_than_its_runs_first_keeps_its_own() {
        // Run 0's first chunk over ["a", "b"]; a later chunk over ["x", "y"] (as long): the
        // run's mapping is for its first dictionary only.
        let first = batch(&["a", "b"], &[Some(0), Some(1), Some(1)]);
        let other = batch(&["x", "y"], &[Some(1), Some(0), None]);
        let mut builder = UnionBuilder::new(1 << 20);
        builder.add(None);
        builder.add(Some(&first));
        let union = builder.finish();
        let seen = union.seen(&first);
        let got = union.remap(1, &seen, other.clone()).unwrap();
        assert_eq!(rows(&got), rows(&other));
        assert!(got
            .column(0)
            .as_dictionary::<Int32Type>()
            .values()
            .to_data()
            .ptr_eq(&other.column(0).as_dictionary::<Int32Type>().values().to_data()));
        // while the first chunk itself is remapped onto the union
        let remapped = union.remap(1, &seen, first.clone()).unwrap();
        assert_eq!(rows(&remapped), rows(&first));
        assert!(!remapped
            .column(0)
            .as_dictionary::<Int32Type>()
            .values()
            .to_data()
            .ptr_eq(&first.column(0).as_dictionary::<Int32Type>().values().to_data()));
    }
}
