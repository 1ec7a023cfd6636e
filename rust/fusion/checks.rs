//! The checks that keep fusion from ranking what it cannot order: lists without the scores a score
//! method reads, and scores or normalised values that left the range of a float.

use super::gather::{Candidate, Gathered};
use super::norm::Norm;
use super::ScoredLists;
use crate::error::FusionError;
use crate::keys::FusionKey;

/// The refusal of list `list`, without the scores `method` fuses (`FuseParams::unscored_list`).
pub(super) fn no_scores(list: usize, method: &str) -> FusionError {
    FusionError::invalid(format!(
        "runs[{list}] has no scores but method '{method}' fuses scores; pass (id, score) pairs or an (ids, scores) tuple, or use a rank method such as rrf"
    ))
}

/// The first non-empty list of those `included` without a score for every id (NaN: none given).
pub(super) fn unscored<T>(lists: &ScoredLists<'_, T>, included: &dyn Fn(usize) -> bool) -> Option<usize> {
    (0..lists.ids.len()).filter(|&l| included(l) && !lists.ids.list(l).is_empty()).find(|&list| {
        let start = lists.ids.start(list);
        !lists.scores.is_some_and(|s| s[start..start + lists.ids.list(list).len()].iter().all(|v| !v.is_nan()))
    })
}

/// Finite inputs can still sum (or normalise) beyond the largest float: refuse rather than rank an
/// inf or NaN score. The message names the document and what to change.
pub(super) fn check_finite<T: FusionKey>(
    scores: &[f64],
    candidates: &[Candidate],
    items: &[T],
    method: &str,
    fix: &str,
) -> Result<(), FusionError> {
    let Some(at) = scores.iter().position(|s| !s.is_finite()) else { return Ok(()) };
    Err(FusionError::invalid(format!(
        "the fused score of id {:?} is {} under method '{method}': its terms overflow the range of a float (about 1.8e308); {fix}",
        items[candidates[at].best_item as usize],
        scores[at],
    )))
}

/// A normalisation whose range overflows a float leaves NaN (inf / inf, inf - inf); combmax, combmin
/// and combmed would hide it in a comparison, so it is refused here, for every method alike.
pub(super) fn check_normalised<T: FusionKey>(gathered: &Gathered, items: &[T], norm: Norm) -> Result<(), FusionError> {
    let Some(entry) = gathered.entries.iter().find(|e| e.value.is_nan()) else { return Ok(()) };
    Err(FusionError::invalid(format!(
        "the normalised score of id {:?} is NaN under norm '{}': the list's score range overflows the range of a float (about 1.8e308); scale the scores down",
        items[gathered.candidates[entry.candidate as usize].best_item as usize],
        norm.name(),
    )))
}
/// The one check that a batch's weights fit each query: one weight per list (`noun`: "list" or "run").
pub fn check_query_weights(weights: Option<&[f64]>, q: usize, lists: usize, noun: &str) -> Result<(), FusionError> {
    match weights {
        Some(w) if w.len() != lists => Err(FusionError::of_option(
            "weights",
            format!(
                "queries[{q}] has {lists} {noun}s but weights has {} entries; every query needs one weight per {noun}",
                w.len()
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::check_query_weights;

    #[test]
    fn weights_count_the_lists_of_each_query() {
        assert!(check_query_weights(None, 0, 3, "list").is_ok());
        assert!(check_query_weights(Some(&[1.0, 2.0]), 0, 2, "run").is_ok());
        let refused = check_query_weights(Some(&[1.0]), 4, 2, "run").unwrap_err().to_string();
        assert_eq!(refused, "queries[4] has 2 runs but weights has 1 entries; every query needs one weight per run");
    }
}
