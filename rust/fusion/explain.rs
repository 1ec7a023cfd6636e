//! Provenance: for every kept hit, the lists that gave it something, in list order.
//! Built only when asked, after selection, from the entries the fusion already has: a call
//! without `explain` does no extra work.

use super::gather::Entry;

/// What one list gave one fused hit. The contributions of a hit, added in list order, are its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contribution {
    /// Index of the list (0-based, in input order).
    pub list: u32,
    /// 1-based rank of the hit in that list; `None` for a list that does not contain it but still
    /// gives it points (Borda's unranked points).
    pub rank: Option<u32>,
    /// Index into the flat ids of the hit's occurrence in that list (with content keys, the id it
    /// had there may differ from the fused id).
    pub item: Option<usize>,
    /// The input score in that list (merged by the duplicate policy), if that list had scores.
    pub score: Option<f64>,
    /// That list's term in the fused score.
    pub contribution: f64,
}

/// Regroups `entries` (with their `contributions`) by fused hit: `order` lists the kept candidates
/// best first, and the result is aligned with it.
pub(super) fn regroup(
    order: &[u32],
    n_candidates: usize,
    entries: &[Entry],
    contributions: &[f64],
) -> Vec<Vec<Contribution>> {
    let mut position = vec![u32::MAX; n_candidates];
    for (at, &candidate) in order.iter().enumerate() {
        position[candidate as usize] = at as u32;
    }
    let mut explain: Vec<Vec<Contribution>> = vec![Vec::new(); order.len()];
    // Entries are stored list by list, so each hit's contributions come out in list order.
    for (entry, &contribution) in entries.iter().zip(contributions) {
        let at = position[entry.candidate as usize];
        if at != u32::MAX {
            explain[at as usize].push(Contribution {
                list: entry.list,
                rank: entry.is_ranked().then_some(entry.rank),
                item: entry.is_ranked().then_some(entry.item as usize),
                score: Some(entry.score).filter(|s| !s.is_nan()), // NaN: this list had no scores
                contribution,
            });
        }
    }
    explain
}
