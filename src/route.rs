//! Route: how one tuple's rows reach the writer, chosen from plain facts about the tuple —
//! streamed as they are read (no `sortBy`, or rows already in order), merged from the inputs'
//! sorted row groups (each in order, and no call-order dedupe that must see rows in `files`
//! order), or sorted: buffered, sorted and spilled as needed (`sort`).
//!
//! Memory: nothing; each route's own bound is its stage's (`read`, `merge`, `sort`).

/// A tuple's route; `M` is the merge's plan (`merge::MergePlan`).
#[derive(Debug, Clone, PartialEq)]
pub enum Route<M> {
    Stream,
    Merge(M),
    Sort,
}

/// What decides a tuple's route.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteFacts {
    /// The call has `sortBy`.
    pub sort_by: bool,
    /// The tuple's surviving rows already arrive in `sortBy` order (`order::OrderCheck`).
    pub presorted: bool,
    /// Dedupe runs as rows are read, in `files` order (not settled by grouping beforehand).
    pub call_order_dedupe: bool,
}

/// The route for `facts`; `merge` plans a merge from the inputs, `None` where one cannot be
/// planned (a row group out of order or shared with other tuples, too many runs for the
/// memory bound), and is asked only where a merge could be the route.
pub fn choose<M>(facts: RouteFacts, merge: impl FnOnce() -> Option<M>) -> Route<M> {
    if !facts.sort_by || facts.presorted {
        return Route::Stream;
    }
    if !facts.call_order_dedupe {
        if let Some(plan) = merge() {
            return Route::Merge(plan);
        }
    }
    Route::Sort
}

impl<M> Route<M> {
    /// Rows go through a sort buffer.
    pub fn sorts(&self) -> bool {
        matches!(self, Route::Sort)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(sort_by: bool, presorted: bool, call_order_dedupe: bool) -> RouteFacts {
        RouteFacts { sort_by, presorted, call_order_dedupe }
    }

    #[test]
    fn unsorted_calls_and_rows_in_order_stream() {
        let asked = std::cell::Cell::new(false);
        let merge = || {
            asked.set(true);
            Some(1)
        };
        assert_eq!(choose(facts(false, false, false), merge), Route::Stream);
        assert_eq!(choose(facts(true, true, true), merge), Route::Stream);
        assert!(!asked.get(), "no merge is planned for a streamed tuple");
    }

    #[test]
    fn sorted_row_groups_merge_unless_dedupe_needs_files_order() {
        assert_eq!(choose(facts(true, false, false), || Some(7)), Route::Merge(7));
        assert_eq!(choose(facts(true, false, true), || Some(7)), Route::Sort);
    }

    #[test]
    fn a_merge_that_cannot_be_planned_sorts() {
        let r: Route<u8> = choose(facts(true, false, false), || None);
        assert!(r.sorts());
    }
}
