//! What the ranked lists of an entry point are ([`Shape`]), where a list sits in the arguments
//! ([`ListPath`], [`QueryPath`]), and the messages refusing a list or an id, naming its place.

use std::fmt;

use crate::args::a_or_an;
use crate::error::FusionError;

/// What the lists of an entry point are: their names in messages, and whether they may carry scores.
pub struct Shape {
    pub root: &'static str,
    pub what: &'static str,
    pub batch_what: &'static str,
    /// One list of a query, in messages: "list" or "run".
    pub noun: &'static str,
    pub scored: bool,
    /// The fusion options the entry points taking these lists read (`None`: every one).
    pub options: Option<&'static [&'static str]>,
}

impl Shape {
    /// Whether the entry points taking these lists read the fusion option `name`.
    #[must_use]
    pub fn reads(&self, name: &str) -> bool {
        self.options.is_none_or(|options| options.contains(&name))
    }
}

/// The lists of `rrf` and `rrf_batch`: ranked ids, no scores.
pub const LISTS: Shape = Shape {
    root: "lists",
    what: "ranked id lists",
    batch_what: "queries (each a sequence of ranked id lists)",
    noun: "list",
    scored: false,
    options: Some(&crate::fusion::RRF_OPTIONS),
};

/// The runs of `fuse` and `fuse_batch`: ranked ids, or ids with scores.
pub const RUNS: Shape = Shape {
    root: "runs",
    what: "runs (ranked id lists, or (id, score) pairs)",
    batch_what: "queries (each a sequence of runs)",
    noun: "run",
    scored: true,
    options: None,
};

/// `queries[q]` in messages, formatted only when an error needs it.
#[derive(Clone, Copy)]
pub struct QueryPath(pub usize);

impl fmt::Display for QueryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "queries[{}]", self.0)
    }
}

/// Where a list sits in the arguments, for error messages: `lists[2]` or `queries[7][2]`.
#[derive(Clone, Copy)]
pub struct ListPath {
    pub root: &'static str,
    pub query: Option<usize>,
    pub list: usize,
}

impl fmt::Display for ListPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.query {
            Some(q) => write!(f, "{}[{q}][{}]", self.root, self.list),
            None => write!(f, "{}[{}]", self.root, self.list),
        }
    }
}

impl ListPath {
    /// List `list` of a single call's argument `root`.
    #[must_use]
    pub fn of_call(root: &'static str, list: usize) -> Self {
        Self { root, query: None, list }
    }

    /// List `list` of query `query` of a batch.
    #[must_use]
    pub fn of_query(query: usize, list: usize) -> Self {
        Self { root: "queries", query: Some(query), list }
    }

    /// The list is a single str or bytes: most likely one list given where a sequence of them is due.
    #[must_use]
    pub fn not_a_list(self, type_name: &str) -> FusionError {
        FusionError::wrong_type(format!(
            "{self} is {} but must be a ranked list of ids; wrap a single list in a list: [['a', 'b']]",
            a_or_an(type_name)
        ))
    }

    /// The list is a set or a dict: no rank order.
    #[must_use]
    pub fn unordered(self, type_name: &str) -> FusionError {
        FusionError::wrong_type(format!(
            "{self} is {} which has no rank order; pass a list, tuple or 1-D integer array",
            a_or_an(type_name)
        ))
    }

    /// The list cannot be iterated.
    #[must_use]
    pub fn not_iterable(self, type_name: &str) -> FusionError {
        FusionError::wrong_type(format!(
            "{self} is {} but must be a ranked list of ids (list, tuple or 1-D integer array)",
            a_or_an(type_name)
        ))
    }

    /// The list is an array whose elements are not integers.
    #[must_use]
    pub fn not_integers(self, type_name: &str, dtype: &str) -> FusionError {
        FusionError::wrong_type(format!(
            "{self} is {} of dtype {dtype}; ranked lists must hold str or int ids (use an integer dtype)",
            a_or_an(type_name)
        ))
    }

    /// Item `pos` of a run that started with `(id, score)` pairs is no pair.
    #[must_use]
    pub fn not_a_pair(self, pos: usize, type_name: &str) -> FusionError {
        FusionError::wrong_type(format!(
            "{self}[{pos}] is {} but the run started with (id, score) pairs; give every hit as a pair",
            a_or_an(type_name)
        ))
    }

    /// Item `pos` is neither a str nor an int.
    #[must_use]
    pub fn not_an_id(self, pos: usize, type_name: &str) -> FusionError {
        FusionError::wrong_type(format!(
            "{self}[{pos}] is {}; ids must be str, or int (Python or NumPy integers)",
            a_or_an(type_name)
        ))
    }

    /// The str id `pos` holds a lone surrogate.
    #[must_use]
    pub fn not_utf8(self, pos: usize) -> FusionError {
        FusionError::invalid(format!("{self}[{pos}] is not valid Unicode (a lone surrogate); ids must encode as UTF-8"))
    }

    /// The int id `pos` is `value`, beyond `i64`.
    #[must_use]
    pub fn too_large(self, pos: usize, value: impl fmt::Display) -> FusionError {
        FusionError::invalid(format!(
            "{self}[{pos}] = {value} does not fit in a signed 64-bit integer; int ids must be in [-2**63, 2**63 - 1]"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_the_list_and_its_query() {
        assert_eq!(ListPath::of_query(7, 2).to_string(), "queries[7][2]");
        assert_eq!(ListPath::of_call("runs", 1).to_string(), "runs[1]");
        assert_eq!(QueryPath(3).to_string(), "queries[3]");
        assert!(LISTS.reads("k") && !LISTS.reads("method") && RUNS.reads("method"));
        assert_eq!(
            ListPath::of_call("lists", 0).too_large(4, 1u64 << 63).to_string(),
            "lists[0][4] = 9223372036854775808 does not fit in a signed 64-bit integer; int ids must be in [-2**63, 2**63 - 1]"
        );
    }
}
