//! General fusion: every standard method, optional scores, duplicate policies and per-hit
//! provenance (`explain`). Plain RRF without options takes the fast path in [`crate::rrf`].
//!
//! Passes: [`gather`] reads the lists once into one entry per (list, id) (the value is the rank
//! term for rank methods, the score otherwise); [`norm`] normalises scores per list; the method
//! turns each entry into a contribution; a document's score is the sum of its contributions in list
//! order; the order and tie-breaks are those of `docs/contract.md`; explain regroups the entries of the kept hits.

mod checks;
mod condorcet;
mod dedupe;
mod explain;
mod gather;
mod methods;
mod model_json;
mod norm;
mod options;
mod trained;

use std::cmp::Ordering;
use std::sync::Arc;

pub use checks::check_query_weights;
pub use dedupe::canonical_ids;
pub use explain::Contribution;
pub use gather::Duplicates;
pub use methods::{Method, MethodParams};
pub use norm::Norm;
pub use options::{
    given_twice, method_table, not_options, option_named, FusionOptions, Kind, OptionError, TopK, Value, NOT_FOR_RUNS,
    OPTIONS, RRF_OPTIONS, RUN_FILE_TOP_K,
};
pub use trained::{TrainedMethod, TrainedModel, BAYESFUSE_CUTOFFS, MAX_SIZE, SEGFUSE_BOUNDS};

use checks::{check_finite, check_normalised, no_scores};

use crate::error::FusionError;
use crate::keys::FusionKey;
use crate::lists::RankedLists;
use crate::rrf::{FusedEntry, RrfParams, TieBreak};

/// Ranked lists with optional scores: `scores[j]` is the score of `ids.items()[j]`.
#[derive(Debug, Clone, Copy)]
pub struct ScoredLists<'a, T> {
    pub ids: RankedLists<'a, T>,
    pub scores: Option<&'a [f64]>,
}

/// Options of one [`fuse`] call.
#[derive(Debug, Clone, PartialEq)]
pub struct FuseParams {
    pub method: Method,
    /// Score normalisation for score methods; `None` means min-max (ranx's default). Rank methods,
    /// DBSF and relative score fusion take none.
    pub norm: Option<Norm>,
    /// `None` means every list weighs 1.0; otherwise one finite weight >= 0 per list. A weight-0
    /// list is ignored entirely, for every method.
    pub weights: Option<Vec<f64>>,
    pub top_k: Option<usize>,
    pub tie_break: TieBreak,
    pub duplicates: Duplicates,
    /// Also return every kept hit's per-list contributions.
    pub explain: bool,
    /// A trained model (probfuse, ...): when set, it is the method and `method` is not read.
    pub trained: Option<Arc<TrainedModel>>,
}

impl Default for FuseParams {
    fn default() -> Self {
        Self {
            method: Method::Rrf { k: crate::rrf::DEFAULT_K },
            norm: None,
            weights: None,
            top_k: None,
            tie_break: TieBreak::Rank,
            duplicates: Duplicates::First,
            explain: false,
            trained: None,
        }
    }
}

impl FuseParams {
    /// Checks the options against a call with `n_lists` lists, called `noun`s in messages.
    pub fn validate(&self, n_lists: usize, noun: &str) -> Result<(), FusionError> {
        if let Some(model) = &self.trained {
            return trained::validate_params(model, self, n_lists);
        }
        self.method.validate()?;
        self.validate_weights(n_lists, noun)?;
        self.validate_norm()
    }

    /// The weights: one per list (`noun`), each finite >= 0, and only for a method with per-list
    /// weights.
    pub fn validate_weights(&self, n_lists: usize, noun: &str) -> Result<(), FusionError> {
        // Weight checks are the RRF contract's; reuse them rather than repeat the messages.
        RrfParams { weights: self.weights.clone(), ..RrfParams::default() }.validate_counted(n_lists, noun)?;
        if self.weights.is_some() && !self.method.takes_weights() {
            let name = self.method.name();
            return Err(FusionError::invalid(format!(
                "method '{name}' has no per-list weights; drop weights, or use a weighted method (wsum, wmnz, mixed, rrf, ...)"
            )));
        }
        Ok(())
    }

    /// The norm: only for a score method that lets the caller choose it.
    pub fn validate_norm(&self) -> Result<(), FusionError> {
        if let Some(norm) = self.norm.filter(|&n| n != Norm::None) {
            let name = self.method.name();
            if self.method.reads_ranks() {
                return Err(FusionError::invalid(format!(
                    "method '{name}' reads ranks only, so norm='{}' would have no effect; leave norm unset",
                    norm.name()
                )));
            }
            if self.method.own_norm().is_some() {
                return Err(FusionError::invalid(format!(
                    "method '{name}' normalises scores its own way; leave norm unset (or use combsum with a norm)"
                )));
            }
        }
        Ok(())
    }

    fn weight(&self, list: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[list])
    }

    /// The first of `lists` whose scores the method reads and which has none, with the method's
    /// name: what [`fuse`] refuses, for a caller that can name its lists (a run file) to refuse first.
    #[must_use]
    pub fn unscored_list<T>(&self, lists: &ScoredLists<'_, T>) -> Option<(usize, &'static str)> {
        match &self.trained {
            Some(model) if model.method.reads_scores() => {
                checks::unscored(lists, &|_| true).map(|list| (list, model.method.name()))
            }
            Some(_) => None,
            None if self.method.reads_ranks() => None,
            None => checks::unscored(lists, &|list| self.weight(list) != 0.0).map(|list| (list, self.method.name())),
        }
    }

    /// The normalisation a score method applies.
    fn effective_norm(&self) -> Norm {
        self.method.own_norm().or(self.norm).unwrap_or(Norm::MinMax)
    }

    /// The options of the same call on the fast RRF path, when it gives identical results.
    fn as_plain_rrf(&self) -> Option<RrfParams> {
        let Method::Rrf { k } = self.method else { return None };
        if self.trained.is_some() {
            return None;
        }
        (!self.explain && self.duplicates == Duplicates::First).then(|| RrfParams {
            k,
            weights: self.weights.clone(),
            top_k: self.top_k,
            tie_break: self.tie_break,
        })
    }
}

/// The fused hits, best first, and (when asked) each hit's contributions, aligned with `hits`.
#[derive(Debug, Clone, PartialEq)]
pub struct Fusion {
    pub hits: Vec<FusedEntry>,
    pub explain: Option<Vec<Vec<Contribution>>>,
}

/// Fuses `lists` by `params.method`.
pub fn fuse<T: FusionKey>(lists: &ScoredLists<'_, T>, params: &FuseParams) -> Result<Fusion, FusionError> {
    params.validate(lists.ids.len(), "list")?;
    if lists.ids.items().len() > u32::MAX as usize {
        return Err(FusionError::invalid(format!(
            "one call can fuse at most {} ids in all (got {}); split the call",
            u32::MAX,
            lists.ids.items().len()
        )));
    }
    if let Some((list, method)) = params.unscored_list(lists) {
        return Err(no_scores(list, method));
    }
    if let Some(model) = &params.trained {
        return trained::fuse(lists, model, params);
    }
    let method = params.method;
    let included = |list: usize| params.weight(list) != 0.0;
    if let Some(rrf_params) = params.as_plain_rrf() {
        return Ok(Fusion { hits: crate::rrf::rrf(lists.ids, &rrf_params)?, explain: None });
    }
    let rank_value = |list: usize, rank: u32| method.rank_value(rank, params.weight(list)).unwrap_or(f64::NAN);
    let rank_value = method.reads_ranks().then_some(&rank_value as &dyn Fn(usize, u32) -> f64);
    let mut gathered = gather::gather(lists, included, params.duplicates, rank_value);
    let n = gathered.candidates.len() as f64;
    if method == Method::Bordafuse {
        // ranx: N - position for a ranked document, (N - n + 1) / 2 for one the list lacks.
        norm::expand_to_all_candidates(
            &mut gathered,
            |entry, _| n - f64::from(entry.rank - 1),
            |present| 0.5 * (n - present as f64 + 1.0),
        );
    } else if !method.reads_ranks() {
        let norm = params.effective_norm();
        norm::normalise(norm, &mut gathered, |list| lists.ids.list(list).len());
        check_normalised(&gathered, lists.ids.items(), norm)?;
    }
    let weight = |list: u32| params.weight(list as usize);
    let contributions = method.contributions(&gathered.entries, gathered.candidates.len(), weight);
    let scores = if method == Method::Condorcet {
        condorcet::copeland(&gathered.entries, gathered.candidates.len(), lists.ids.len(), weight)
    } else {
        sum_in_list_order(&gathered, &contributions)
    };
    let fix = match method {
        _ if method.reads_ranks() => "scale the weights down (only their ratios matter)",
        // Its count of lists raised to gamma grows past a float long before the scores do.
        Method::CombGmnz { .. } => "lower gamma, or scale the scores or weights down",
        _ => "scale the scores or weights down",
    };
    check_finite(&scores, &gathered.candidates, lists.ids.items(), method.name(), fix)?;
    // Condorcet's score is the position, as ranx gives it: N for the first, N - 1 next, ...
    let positional = (method == Method::Condorcet).then_some(n);
    Ok(rank_candidates(lists, params, &gathered, &contributions, &scores, positional))
}

/// Each candidate's score: its contributions summed in list order (entries are stored list by list).
fn sum_in_list_order(gathered: &gather::Gathered, contributions: &[f64]) -> Vec<f64> {
    let mut scores = vec![0.0_f64; gathered.candidates.len()];
    for (entry, contribution) in gathered.entries.iter().zip(contributions) {
        scores[entry.candidate as usize] += contribution;
    }
    scores
}

/// The fused hits in order (and their explanation when asked); `positional` replaces the scores
/// by `positional - position`.
fn rank_candidates<T: FusionKey>(
    lists: &ScoredLists<'_, T>,
    params: &FuseParams,
    gathered: &gather::Gathered,
    contributions: &[f64],
    scores: &[f64],
    positional: Option<f64>,
) -> Fusion {
    let order = select(&gathered.candidates, scores, lists.ids.items(), params);
    let explain =
        params.explain.then(|| explain::regroup(&order, gathered.candidates.len(), &gathered.entries, contributions));
    let hits = order
        .iter()
        .enumerate()
        .map(|(position, &c)| FusedEntry {
            item: gathered.candidates[c as usize].best_item as usize,
            score: positional.map_or(scores[c as usize], |n| n - position as f64),
        })
        .collect();
    Fusion { hits, explain }
}

/// Candidate indices in fused order (score descending, then the tie-break), at most `top_k`.
fn select<T: FusionKey>(
    candidates: &[gather::Candidate],
    scores: &[f64],
    items: &[T],
    params: &FuseParams,
) -> Vec<u32> {
    let order = |&a: &u32, &b: &u32| -> Ordering {
        let (ca, cb) = (&candidates[a as usize], &candidates[b as usize]);
        scores[b as usize].total_cmp(&scores[a as usize]).then_with(|| match params.tie_break {
            TieBreak::Rank => (ca.best_rank, ca.best_list).cmp(&(cb.best_rank, cb.best_list)),
            TieBreak::Id => items[ca.best_item as usize].cmp(&items[cb.best_item as usize]),
        })
    };
    let mut kept: Vec<u32> = (0..candidates.len() as u32).collect();
    match params.top_k {
        Some(k) if k < kept.len() => {
            if k > 0 {
                kept.select_nth_unstable_by(k - 1, order);
            }
            kept.truncate(k);
        }
        _ => {}
    }
    kept.sort_unstable_by(order);
    kept
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact float equality is the contract under test
#[path = "fuse_tests.rs"]
mod tests;
