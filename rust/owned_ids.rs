//! Ids of a call (or of a whole batch) held in two flat buffers, and the fusion of a window of them.

use std::fmt;

use crate::error::FusionError;
use crate::fusion::{self, FuseParams, Fusion, ScoredLists};
use crate::lists::RankedLists;

mod batch;
mod content_keys;
mod paths;
mod texts;

pub use batch::OwnedBatch;
pub use paths::{ListPath, QueryPath, Shape, LISTS, RUNS};
pub use texts::Texts;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IdKind {
    Str,
    Int,
}

impl IdKind {
    fn article(self) -> &'static str {
        match self {
            Self::Str => "a str",
            Self::Int => "an int",
        }
    }
}

/// All ids of a call (or of a whole batch), copied into two flat buffers: str ids as one UTF-8
/// arena plus end offsets, int ids as one `i64` vector. `bounds` delimits the lists.
pub struct OwnedIds {
    pub kind: Option<(IdKind, String)>,
    pub texts: Texts,
    pub ints: Vec<i64>,
    pub bounds: Vec<usize>,
}

impl Default for OwnedIds {
    fn default() -> Self {
        Self::new()
    }
}

impl OwnedIds {
    #[must_use]
    pub fn new() -> Self {
        Self { kind: None, texts: Texts::default(), ints: Vec::new(), bounds: vec![0] }
    }

    /// Empties the buffers (keeping their memory) for the next chunk of a batch. The id kind stays:
    /// one batch is one call, all str or all int.
    pub fn clear(&mut self) {
        self.texts.clear();
        self.ints.clear();
        self.bounds.clear();
        self.bounds.push(0);
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.texts.len() + self.ints.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends one str id.
    #[inline]
    pub fn push_str(&mut self, text: &str) {
        self.texts.push(text);
    }

    /// Records the kind of the id at `path` (the first one fixes the kind of the call); refuses a
    /// call that mixes str and int ids.
    pub fn set_kind(&mut self, kind: IdKind, path: impl FnOnce() -> String) -> Result<(), FusionError> {
        match &self.kind {
            Some((seen, _)) if *seen == kind => Ok(()),
            Some((seen, first)) => Err(FusionError::wrong_type(format!(
                "{} is {}, but {first} is {}: all ids in one call must be str, or all int",
                path(),
                kind.article(),
                seen.article()
            ))),
            None => {
                self.kind = Some((kind, path()));
                Ok(())
            }
        }
    }

    /// Appends the ids of an integer array (the list at `path`); each must fit in `i64`.
    pub fn push_ints<T>(&mut self, values: &[T], path: ListPath) -> Result<(), FusionError>
    where
        T: Copy + fmt::Display,
        i64: TryFrom<T>,
    {
        // Checked first, then converted by a plain map: a fallible collect would neither reserve the
        // length nor vectorize the widening; for the types that always fit, the check compiles away.
        if let Some(pos) = values.iter().position(|&v| i64::try_from(v).is_err()) {
            return Err(path.too_large(pos, values[pos]));
        }
        if !values.is_empty() {
            self.set_kind(IdKind::Int, || format!("{path}[0]"))?;
        }
        self.ints.extend(values.iter().map(|&v| i64::try_from(v).unwrap_or_default()));
        Ok(())
    }

    #[must_use]
    pub fn kind_is(&self, kind: IdKind) -> bool {
        matches!(self.kind, Some((seen, _)) if seen == kind)
    }

    /// Str id number `i` (counting over all lists) of a str call.
    #[must_use]
    pub fn str_at(&self, i: usize) -> &str {
        self.texts.get(i)
    }

    /// Fuses the lists that `bounds` (a window of `self.bounds`) delimits, with `scores` aligned with
    /// all ids of `self`. The result indexes all ids of `self`. Str ids get a view of this query
    /// only, built here (on the worker thread in a batch), rather than one view of the whole batch:
    /// such a view costs 16 bytes per id of memory traffic, the largest single cost of a 10k-query
    /// batch measured with it.
    pub fn fuse(&self, bounds: &[usize], scores: Option<&[f64]>, params: &FuseParams) -> Result<Fusion, FusionError> {
        let (first, end) = (bounds.first().copied().unwrap_or(0), bounds.last().copied().unwrap_or(0));
        let local_bounds: Vec<usize> = bounds.iter().map(|b| b - first).collect();
        let scores = scores.map(|s| &s[first..end]);
        let mut fused = if self.kind_is(IdKind::Str) {
            let strs: Vec<&str> = (first..end).map(|i| self.str_at(i)).collect();
            fusion::fuse(&ScoredLists { ids: RankedLists::new(&strs, &local_bounds), scores }, params)?
        } else {
            fusion::fuse(&ScoredLists { ids: RankedLists::new(&self.ints[first..end], &local_bounds), scores }, params)?
        };
        for hit in &mut fused.hits {
            hit.item += first;
        }
        for contribution in fused.explain.iter_mut().flatten().flatten() {
            contribution.item = contribution.item.map(|item| item + first);
        }
        Ok(fused)
    }
}

/// Borrowed views of all ids of a call, for the general kernel (which sees a whole call at once).
pub enum IdsView<'a> {
    Str(Vec<&'a str>),
    Int(&'a [i64]),
}

impl OwnedIds {
    #[must_use]
    pub fn view(&self) -> IdsView<'_> {
        if self.kind_is(IdKind::Str) {
            IdsView::Str(self.texts.iter().collect())
        } else {
            IdsView::Int(&self.ints)
        }
    }
}

/// Runs of ids and one score per id, NaN where a run has none.
pub struct OwnedRuns {
    pub ids: OwnedIds,
    /// Empty while no run has scores: lists without them leave nothing to fill, nothing to scan.
    pub(crate) scores: Vec<f64>,
}

impl Default for OwnedRuns {
    fn default() -> Self {
        Self::new()
    }
}

impl OwnedRuns {
    #[must_use]
    pub fn new() -> Self {
        Self { ids: OwnedIds::new(), scores: Vec::new() }
    }

    pub fn clear(&mut self) {
        self.ids.clear();
        self.scores.clear();
    }

    /// Appends the score of the next id (at `path`, in messages): a finite number.
    #[inline]
    pub fn push_score(&mut self, score: f64, path: impl FnOnce() -> String) -> Result<(), FusionError> {
        if !score.is_finite() {
            return Err(FusionError::invalid(format!(
                "{} is {score}; scores must be finite numbers (drop the hit or give it a real score)",
                path()
            )));
        }
        self.scores.push(score);
        Ok(())
    }

    /// Appends the scores of the last run's ids (the run at `path`, in messages): finite numbers.
    pub fn push_scores(&mut self, scores: &[f64], path: ListPath) -> Result<(), FusionError> {
        for (pos, &score) in scores.iter().enumerate() {
            self.push_score(score, || format!("{path} scores[{pos}]"))?;
        }
        Ok(())
    }

    /// Checks that the last run (`path`, in messages) got one score per id.
    pub fn check_last_run_scores(&self, path: impl fmt::Display) -> Result<(), FusionError> {
        // Every run before it has one score per id, so its ids and its scores start at the same index.
        let start = self.ids.bounds[self.ids.bounds.len() - 2];
        let (ids, scores) = (self.ids.len() - start, self.scores.len() - start);
        if ids == scores {
            return Ok(());
        }
        Err(FusionError::invalid(format!("{path} has {ids} ids but {scores} scores; give one score per id")))
    }

    /// Scores for the kernel: `None` when no run has any, so rank methods never look at them.
    #[must_use]
    pub fn scores(&self) -> Option<&[f64]> {
        (self.scores.len() == self.ids.len() && self.scores.iter().any(|s| !s.is_nan()))
            .then_some(self.scores.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn str_ids_round_trip_and_clear_keeps_the_kind() {
        let mut ids = OwnedIds::new();
        ids.set_kind(IdKind::Str, || "lists[0][0]".into()).unwrap();
        for id in ["a", "bé", ""] {
            ids.push_str(id);
        }
        ids.bounds.push(ids.len());
        assert_eq!((0..3).map(|i| ids.str_at(i)).collect::<Vec<_>>(), ["a", "bé", ""]);
        ids.clear();
        assert!(ids.is_empty());
        assert_eq!(ids.bounds, [0]);
        assert!(ids.kind_is(IdKind::Str));
    }

    #[test]
    fn mixing_kinds_names_both_places() {
        let mut ids = OwnedIds::new();
        ids.set_kind(IdKind::Int, || "lists[0][0]".into()).unwrap();
        let err = ids.set_kind(IdKind::Str, || "lists[1][2]".into()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "lists[1][2] is a str, but lists[0][0] is an int: all ids in one call must be str, or all int"
        );
    }

    #[test]
    fn a_window_is_fused_with_items_indexing_all_ids() {
        let mut ids = OwnedIds::new();
        ids.set_kind(IdKind::Int, || "q".into()).unwrap();
        ids.ints.extend([1, 2, 3, 3]);
        ids.bounds.extend([2, 3, 4]);
        let fused = ids.fuse(&ids.bounds[1..], None, &FuseParams::default()).unwrap();
        assert_eq!(fused.hits.len(), 1);
        assert_eq!(fused.hits[0].item, 2);
    }

    #[test]
    fn scores_reach_the_kernel_only_when_some_run_has_them() {
        let mut runs = OwnedRuns::new();
        runs.ids.ints.extend([1, 2]);
        assert_eq!(runs.scores(), None); // no scores at all
        runs.scores.extend([f64::NAN, f64::NAN]);
        assert_eq!(runs.scores(), None); // every run without scores
        runs.scores[1] = 0.5;
        assert_eq!(runs.scores().map(<[f64]>::len), Some(2));
        runs.clear();
        assert!(runs.ids.is_empty() && runs.scores.is_empty());
    }

    #[test]
    fn a_run_takes_finite_scores_one_per_id() {
        let mut runs = OwnedRuns::new();
        runs.ids.ints.extend([1, 2]);
        runs.ids.bounds.push(2);
        let path = ListPath::of_call("runs", 0);
        let err = runs.push_scores(&[0.5, f64::INFINITY], path).unwrap_err();
        assert_eq!(
            err.to_string(),
            "runs[0] scores[1] is inf; scores must be finite numbers (drop the hit or give it a real score)"
        );
        let err = runs.check_last_run_scores(path).unwrap_err();
        assert_eq!(err.to_string(), "runs[0] has 2 ids but 1 scores; give one score per id");
        runs.push_score(0.25, || unreachable!()).unwrap();
        assert_eq!(runs.check_last_run_scores(path), Ok(()));
    }

    #[test]
    fn int_arrays_widen_to_i64_and_refuse_what_does_not_fit() {
        let mut ids = OwnedIds::new();
        ids.push_ints::<u8>(&[], ListPath::of_call("lists", 0)).unwrap();
        assert!(ids.kind.is_none()); // an empty array fixes no kind
        ids.push_ints(&[3u16, 65535], ListPath::of_call("lists", 0)).unwrap();
        assert_eq!(ids.ints, [3, 65535]);
        let refused = ids.push_ints(&[1, u64::MAX], ListPath::of_call("lists", 1)).unwrap_err().to_string();
        assert!(refused.starts_with("lists[1][1] = 18446744073709551615 does not fit"), "{refused}");
        assert_eq!(ids.ints.len(), 2); // nothing of a refused array is kept
    }
}
