//! Weighted Reciprocal Rank Fusion, exactly as `docs/contract.md` defines it:
//! `score(d) = Σ_i w_i / (k + rank_i(d))` summed in list order, first occurrence wins inside a list,
//! weight-0 lists ignored, deterministic ties, partial top-k equal to the prefix of the full sort.
//!
//! Why it is built this way (the measurements, and what was tried and rejected, are in
//! `docs/performance.md`): ids are accumulated in an open-addressing table reused per thread, keyed by
//! a seeded two-word hash of the inline id, with a branch-free found/new probe, because in a branchy
//! probe the found/new branch is the most mispredicted one; candidates are dense, so top-k is a
//! float-compare filter for small k and introselect otherwise, over a strict total order (score, then
//! a key no two candidates share) that makes the partial result the exact prefix of the full sort.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::str::FromStr;

use crate::error::FusionError;
use crate::keys::{FusionKey, KeySeeds};
use crate::lists::RankedLists;

/// The `k` most systems use (Elasticsearch, OpenSearch, Milvus, ranx, pyserini).
pub const DEFAULT_K: f64 = 60.0;

/// How candidates with exactly equal scores are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TieBreak {
    /// Better best rank first, then the id whose best rank came in the earlier list.
    #[default]
    Rank,
    /// Ascending id (code points for str, numeric for ints), as pyserini, trectools, Milvus, Weaviate.
    Id,
}

impl TieBreak {
    /// The names `tie_break=` accepts.
    pub const BY_NAME: &'static [(&'static str, Self)] = &[("rank", Self::Rank), ("id", Self::Id)];
    pub const NAMES: [&'static str; Self::BY_NAME.len()] = crate::names::names(Self::BY_NAME);
}

impl FromStr for TieBreak {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::names::parse(Self::BY_NAME, "tie_break", s)
    }
}

/// Options of one fusion call. Validate with [`RrfParams::validate`] (the kernel does it for you).
#[derive(Debug, Clone, PartialEq)]
pub struct RrfParams {
    pub k: f64,
    /// `None` means every list weighs 1.0; otherwise one finite weight ≥ 0 per list.
    pub weights: Option<Vec<f64>>,
    /// `None` keeps every candidate.
    pub top_k: Option<usize>,
    pub tie_break: TieBreak,
}

impl Default for RrfParams {
    fn default() -> Self {
        Self { k: DEFAULT_K, weights: None, top_k: None, tie_break: TieBreak::Rank }
    }
}

impl RrfParams {
    /// Checks the options against a call with `n_lists` lists.
    pub fn validate(&self, n_lists: usize) -> Result<(), FusionError> {
        self.validate_counted(n_lists, "list")
    }

    /// [`Self::validate`], the lists called `noun`s in messages (a run fusion's are runs).
    pub fn validate_counted(&self, n_lists: usize, noun: &str) -> Result<(), FusionError> {
        if !(self.k.is_finite() && self.k > 0.0) {
            return Err(FusionError::of_option(
                "k",
                format!("k must be a finite number > 0 (got {}); 60 is the usual value", self.k),
            ));
        }
        if let Some(weights) = &self.weights {
            if weights.len() != n_lists {
                return Err(FusionError::of_option(
                    "weights",
                    format!(
                    "weights has {} entries but {}; give one weight per {noun}, or none (each {noun} then weighs 1)",
                    weights.len(),
                    if n_lists == 1 { format!("there is 1 {noun}") } else { format!("there are {n_lists} {noun}s") }
                ),
                ));
            }
            if let Some((i, w)) = weights.iter().enumerate().find(|(_, w)| !(w.is_finite() && **w >= 0.0)) {
                return Err(FusionError::of_option(
                    "weights",
                    format!("weights[{i}] must be a finite number >= 0 (got {w})"),
                ));
            }
            // A finite total bounds every RRF score (each term w / (k + rank) is at most w), so the
            // kernel never has to look for a score that overflowed.
            let total: f64 = weights.iter().sum();
            if !total.is_finite() {
                return Err(FusionError::invalid(format!(
                    "weights sum to {total}, beyond the largest float; only their ratios matter, so scale them down"
                )));
            }
        }
        Ok(())
    }

    fn weight(&self, list: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[list])
    }
}

/// One fused id: where its best occurrence sits in the flat input, and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusedEntry {
    /// Index into [`RankedLists::items`] of the id's best-ranked occurrence (earliest list on equal rank).
    pub item: usize,
    pub score: f64,
}

/// One candidate while scores accumulate. The id is stored inline ([`FusionKey::Inline`]) so that a
/// table probe checks it without a further load through the input (see the notes at the top).
#[derive(Debug, Clone, Copy)]
struct Candidate<K> {
    key: K,
    score: f64,
    /// Best occurrence as `rank << 32 | list`: the tie-break key of `tie_break="rank"`, and a plain `min`
    /// keeps it (an equal rank in a later list compares greater, so the earlier list stays).
    best: u64,
    /// The last list the id was counted in (a repeat inside a list is skipped).
    last_list: u32,
}

impl<K> Candidate<K> {
    /// Index into [`RankedLists::items`] of the best occurrence.
    fn item<T>(&self, lists: &RankedLists<'_, T>) -> usize {
        lists.start((self.best & 0xFFFF_FFFF) as usize) + (self.best >> 32) as usize - 1
    }
}

/// Fuses `lists` by weighted RRF and returns the fused ids best first (at most `top_k`).
pub fn rrf<T: FusionKey>(lists: RankedLists<'_, T>, params: &RrfParams) -> Result<Vec<FusedEntry>, FusionError> {
    params.validate(lists.len())?;
    if lists.items().len() > u32::MAX as usize {
        return Err(FusionError::invalid(format!(
            "one call can fuse at most {} ids in all (got {}); split the call",
            u32::MAX,
            lists.items().len()
        )));
    }
    let mut candidates = accumulate(lists, params);
    let items = lists.items();
    let order = |a: &Candidate<T::Inline>, b: &Candidate<T::Inline>| -> Ordering {
        b.score.total_cmp(&a.score).then_with(|| match params.tie_break {
            TieBreak::Rank => a.best.cmp(&b.best),
            TieBreak::Id => items[a.item(&lists)].cmp(&items[b.item(&lists)]),
        })
    };
    select_top(&mut candidates, params.top_k, |c| c.score, order);
    Ok(candidates.iter().map(|c| FusedEntry { item: c.item(&lists), score: c.score }).collect())
}

thread_local! {
    /// Per-thread scratch reused across calls, so a call allocates only its output.
    static SLOTS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Not a list index: marks a candidate not yet counted in any list.
const NO_LIST: u32 = u32::MAX;

fn accumulate<T: FusionKey>(lists: RankedLists<'_, T>, params: &RrfParams) -> Vec<Candidate<T::Inline>> {
    let seeds = KeySeeds::new();
    let items = lists.items();
    // One more than the ids: the slot after the last candidate is scratch for the next new one.
    let mut candidates: Vec<Candidate<T::Inline>> = Vec::with_capacity(lists.total_len() + 1);
    SLOTS.with_borrow_mut(|slots| {
        // Open addressing, linear probing, load <= 1/2. A slot holds `fingerprint << 32 | (index + 1)`
        // (0 = empty); the 32-bit fingerprint rejects almost every other id without touching it.
        let capacity = (lists.total_len() * 2).next_power_of_two().max(16);
        let mask = capacity - 1;
        slots.clear();
        slots.resize(capacity, 0);
        for list_index in 0..lists.len() {
            let weight = params.weight(list_index);
            if weight == 0.0 {
                continue; // a weight-0 list contributes neither score nor candidates
            }
            let list_u32 = list_index as u32;
            let list = lists.list(list_index);
            for (position, &id) in list.iter().enumerate() {
                // Rank is the 1-based list position; a skipped duplicate does not renumber later ids.
                let rank = position as u32 + 1;
                let term = weight / (params.k + f64::from(rank));
                let best = u64::from(rank) << 32 | u64::from(list_u32);
                let key = id.inline();
                let hash = id.hash_with(key, &seeds);
                let fingerprint = hash >> 32;
                // Branch-free on found / not found (as a branch, the kernel's most mispredicted one):
                // the id is first written as a fresh candidate after the last one; a probe that
                // ends on an empty slot points at it, one that finds the id points at the old one.
                let new = candidates.len();
                candidates.push(Candidate { key, score: 0.0, best, last_list: NO_LIST });
                let mut at = (hash as usize) & mask;
                let index = loop {
                    let slot = slots[at];
                    // Empty, or the same fingerprint, tested with one well-predicted branch (the
                    // first probe almost always ends the search): either makes the min < 2^32.
                    if slot.min(slot ^ fingerprint << 32) < 1 << 32 {
                        let index = if slot == 0 { new } else { (slot & 0xFFFF_FFFF) as usize - 1 };
                        let other = &candidates[index];
                        if id.same(key, other.key, || items[other.item(&lists)]) {
                            break index;
                        }
                    }
                    at = (at + 1) & mask;
                };
                slots[at] = fingerprint << 32 | (index as u64 + 1);
                candidates.truncate(new + usize::from(index == new));
                let candidate = &mut candidates[index];
                if candidate.last_list == list_u32 {
                    continue; // repeated inside this list: only the first occurrence counts
                }
                candidate.last_list = list_u32;
                candidate.score += term; // 0.0 + term == term: a new candidate scores exactly its term
                candidate.best = candidate.best.min(best);
            }
        }
    });
    candidates
}

/// Up to this many hits, `top_k` selection keeps a small sorted buffer in one pass over the
/// candidates (measured ~4× faster than introselect for k = 10 of 400); above it, introselect.
const SMALL_TOP_K: usize = 64;

/// Leaves the first `top_k` of `order` in `candidates`, sorted. `order` must be a strict total order.
fn select_top<C: Copy>(
    candidates: &mut Vec<C>,
    top_k: Option<usize>,
    score: impl Fn(&C) -> f64,
    order: impl Fn(&C, &C) -> Ordering,
) {
    match top_k {
        Some(0) => candidates.clear(),
        Some(k) if k <= SMALL_TOP_K && k < candidates.len() => {
            let mut best: Vec<C> = Vec::with_capacity(k + 1);
            // The score of the worst kept once `k` are kept. Scores are never NaN or -0.0, so a
            // lower score is worse in `order` too: a plain float compare rejects most candidates.
            let mut threshold = f64::NEG_INFINITY;
            for c in candidates.iter() {
                if score(c) < threshold || (best.len() == k && order(c, &best[k - 1]) != Ordering::Less) {
                    continue; // not better than the worst kept: most candidates stop here
                }
                let at = best.partition_point(|kept| order(kept, c) == Ordering::Less);
                best.insert(at, *c);
                best.truncate(k);
                if best.len() == k {
                    threshold = score(&best[k - 1]);
                }
            }
            *candidates = best;
        }
        Some(k) if k < candidates.len() => {
            candidates.select_nth_unstable_by(k - 1, &order);
            candidates.truncate(k);
            candidates.sort_unstable_by(&order);
        }
        _ => candidates.sort_unstable_by(&order),
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact float equality is the contract under test
mod tests {
    use super::*;

    fn fuse_str(lists: &[&[&'static str]], params: &RrfParams) -> Vec<(&'static str, f64)> {
        let items: Vec<&str> = lists.iter().flat_map(|l| l.iter().copied()).collect();
        let mut bounds = vec![0];
        for l in lists {
            bounds.push(bounds.last().unwrap() + l.len());
        }
        let fused = rrf(RankedLists::new(&items, &bounds), params).unwrap();
        fused.iter().map(|e| (items[e.item], e.score)).collect()
    }

    fn ids(result: &[(&'static str, f64)]) -> Vec<&'static str> {
        result.iter().map(|(id, _)| *id).collect()
    }

    #[test]
    fn scores_sum_in_list_order() {
        let out = fuse_str(&[&["a", "b"], &["b", "c"]], &RrfParams::default());
        assert_eq!(ids(&out), ["b", "a", "c"]);
        assert_eq!(out[0].1, 1.0 / 62.0 + 1.0 / 61.0);
        assert_eq!(out[1].1, 1.0 / 61.0);
    }

    #[test]
    fn no_lists_and_empty_lists_give_nothing() {
        assert!(fuse_str(&[], &RrfParams::default()).is_empty());
        assert!(fuse_str(&[&[], &[]], &RrfParams::default()).is_empty());
    }

    #[test]
    fn duplicate_inside_a_list_counts_once_and_keeps_later_ranks() {
        let out = fuse_str(&[&["a", "b", "a", "c"]], &RrfParams::default());
        assert_eq!(ids(&out), ["a", "b", "c"]);
        assert_eq!(out[0].1, 1.0 / 61.0);
        assert_eq!(out[2].1, 1.0 / 64.0, "c keeps its position 4");
    }

    #[test]
    fn rank_tie_break_prefers_better_rank_then_earlier_list() {
        // x: rank 1 in list 1; y: rank 1 in list 0. Equal scores, y's best rank came earlier.
        let out = fuse_str(&[&["y"], &["x"]], &RrfParams::default());
        assert_eq!(ids(&out), ["y", "x"]);
        let by_id = RrfParams { tie_break: TieBreak::Id, ..RrfParams::default() };
        assert_eq!(ids(&fuse_str(&[&["y"], &["x"]], &by_id)), ["x", "y"]);
    }

    #[test]
    fn zero_weight_list_is_ignored_entirely() {
        let params = RrfParams { weights: Some(vec![1.0, 0.0]), ..RrfParams::default() };
        let out = fuse_str(&[&["a"], &["b", "a"]], &params);
        assert_eq!(ids(&out), ["a"]);
        assert_eq!(out[0].1, 1.0 / 61.0);
    }

    #[test]
    fn top_k_is_the_prefix_of_the_full_order() {
        let lists: &[&[&str]] = &[&["a", "b", "c", "d", "e"], &["e", "d", "c", "b", "a"], &["c", "q"]];
        let full = fuse_str(lists, &RrfParams::default());
        for k in 0..=7 {
            // k <= 7 exercises the small-buffer path; the introselect path is covered below.
            let part = fuse_str(lists, &RrfParams { top_k: Some(k), ..RrfParams::default() });
            assert_eq!(part, full[..k.min(full.len())]);
        }
    }

    #[test]
    fn both_selection_paths_agree_with_the_full_sort() {
        let items: Vec<i64> = (0..600).map(|i| (i * 7919) % 251).collect();
        let bounds = [0, 200, 400, 600];
        let lists = RankedLists::new(&items, &bounds);
        let full = rrf(lists, &RrfParams::default()).unwrap();
        for k in [1, 10, SMALL_TOP_K, SMALL_TOP_K + 1, 200, 250, 251, 1000] {
            let part = rrf(lists, &RrfParams { top_k: Some(k), ..RrfParams::default() }).unwrap();
            assert_eq!(part, full[..k.min(full.len())], "top_k = {k}");
        }
    }

    #[test]
    fn long_ids_with_equal_ends_and_length_stay_apart() {
        // Same length, same first and last 8 bytes: only the middle tells them apart.
        let out =
            fuse_str(&[&["prefix__A__suffix", "prefix__B__suffix"], &["prefix__B__suffix"]], &RrfParams::default());
        assert_eq!(ids(&out), ["prefix__B__suffix", "prefix__A__suffix"]);
        assert_eq!(out[0].1, 1.0 / 62.0 + 1.0 / 61.0);
    }

    #[test]
    fn int_ids_order_numerically_on_id_tie_break() {
        let items = [10_i64, -5, 3];
        let bounds = [0, 1, 2, 3];
        let params = RrfParams { tie_break: TieBreak::Id, ..RrfParams::default() };
        let out = rrf(RankedLists::new(&items, &bounds), &params).unwrap();
        let got: Vec<i64> = out.iter().map(|e| items[e.item]).collect();
        assert_eq!(got, [-5, 3, 10]);
    }

    #[test]
    fn invalid_options_name_the_argument() {
        let lists: &[&[&str]] = &[&["a"]];
        let err = |p: RrfParams| {
            let items = ["a"];
            rrf(RankedLists::new(&items, &[0, 1]), &p).unwrap_err().to_string()
        };
        assert!(err(RrfParams { k: 0.0, ..RrfParams::default() }).starts_with("k must be"));
        assert!(err(RrfParams { k: f64::NAN, ..RrfParams::default() }).starts_with("k must be"));
        assert!(err(RrfParams { weights: Some(vec![]), ..RrfParams::default() }).contains("one weight per list"));
        assert!(err(RrfParams { weights: Some(vec![-1.0]), ..RrfParams::default() }).starts_with("weights[0]"));
        let huge = RrfParams { weights: Some(vec![1e308, 1e308]), ..RrfParams::default() };
        assert!(huge.validate(2).unwrap_err().to_string().starts_with("weights sum to inf"));
        assert!("nope".parse::<TieBreak>().unwrap_err().to_string().contains("'rank' or 'id'"));
        assert_eq!(lists.len(), 1);
    }
}
