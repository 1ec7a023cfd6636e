//! First pass of every fusion method: read the lists once, give each distinct id a dense candidate
//! index, and keep one entry per (list, candidate), merging repeats inside a list by the duplicate
//! policy. Later passes (normalisation, combination, explain) work on these entries only.

use std::collections::HashMap;
use std::str::FromStr;

use crate::error::FusionError;
use crate::keys::FusionKey;

use super::ScoredLists;

/// What a repeated id inside one list means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Duplicates {
    /// Only the first occurrence counts (`docs/contract.md`); later copies are skipped.
    #[default]
    First,
    /// The id keeps its first rank and the largest of its values.
    Max,
    /// The id keeps its first rank and the sum of its values: several chunks of one document add up
    /// (LangChain's `EnsembleRetriever` without dedup).
    Sum,
}

impl Duplicates {
    /// The names `duplicates=` accepts.
    pub const BY_NAME: &'static [(&'static str, Self)] =
        &[("first", Self::First), ("max", Self::Max), ("sum", Self::Sum)];
    pub const NAMES: [&'static str; Self::BY_NAME.len()] = crate::names::names(Self::BY_NAME);
}

impl FromStr for Duplicates {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::names::parse(Self::BY_NAME, "duplicates", s)
    }
}

/// One id in one list, after merging its repeats.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub candidate: u32,
    pub list: u32,
    /// 1-based position of the first occurrence; repeats never renumber later ids.
    pub rank: u32,
    /// Index into the flat ids of the first occurrence.
    pub item: u32,
    /// The input score (merged by the policy), NaN when the call has no scores.
    pub score: f64,
    /// What the method combines: the rank value (rank methods) or the score, later normalised.
    pub value: f64,
}

impl Entry {
    /// A list's entry for a candidate it does not contain (Borda gives those points too).
    pub fn absent(candidate: u32, list: u32, value: f64) -> Self {
        Self { candidate, list, rank: 0, item: u32::MAX, score: f64::NAN, value }
    }

    /// False for the entry of a list that does not contain the candidate.
    pub fn is_ranked(&self) -> bool {
        self.rank > 0
    }
}

/// One distinct id of the call.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    pub best_rank: u32,
    pub best_list: u32,
    /// Item of the best-ranked occurrence (earliest list on equal rank): the id reported for it.
    pub best_item: u32,
    last_list: u32,
    last_entry: u32,
}

pub(super) struct Gathered {
    pub entries: Vec<Entry>,
    /// List `i`'s entries are `entries[list_bounds[i]..list_bounds[i + 1]]`, in rank order.
    pub list_bounds: Vec<usize>,
    pub candidates: Vec<Candidate>,
    /// Whether list `i` was read (false for weight-0 lists).
    pub included: Vec<bool>,
}

/// Reads every list whose `included(i)` is true. `rank_value(list, rank)` gives rank methods their
/// per-rank value; score methods pass `None` and the entry's value is its score.
pub(super) fn gather<T: FusionKey>(
    lists: &ScoredLists<'_, T>,
    included: impl Fn(usize) -> bool,
    duplicates: Duplicates,
    rank_value: Option<&dyn Fn(usize, u32) -> f64>,
) -> Gathered {
    let ids = lists.ids;
    let mut index: HashMap<T, u32, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(ids.total_len(), foldhash::fast::RandomState::default());
    let mut candidates: Vec<Candidate> = Vec::with_capacity(ids.total_len());
    let mut entries: Vec<Entry> = Vec::with_capacity(ids.total_len());
    let mut list_bounds = Vec::with_capacity(ids.len() + 1);
    list_bounds.push(0);
    let included: Vec<bool> = (0..ids.len()).map(included).collect();
    for (list, &read) in included.iter().enumerate() {
        if read {
            let list_u32 = list as u32;
            let start = ids.start(list);
            for (position, &id) in ids.list(list).iter().enumerate() {
                let rank = position as u32 + 1;
                let item = start + position;
                let score = lists.scores.map_or(f64::NAN, |s| s[item]);
                let value = rank_value.map_or(score, |f| f(list, rank));
                let next = candidates.len() as u32;
                let candidate = *index.entry(id).or_insert(next);
                if candidate == next {
                    candidates.push(Candidate {
                        best_rank: rank,
                        best_list: list_u32,
                        best_item: item as u32,
                        last_list: u32::MAX,
                        last_entry: 0,
                    });
                }
                let known = &mut candidates[candidate as usize];
                if known.last_list == list_u32 {
                    merge_repeat(&mut entries[known.last_entry as usize], score, value, duplicates);
                    continue;
                }
                known.last_list = list_u32;
                known.last_entry = entries.len() as u32;
                // Strictly better only: on equal rank the earlier list keeps the tie-break key.
                if rank < known.best_rank {
                    known.best_rank = rank;
                    known.best_list = list_u32;
                    known.best_item = item as u32;
                }
                entries.push(Entry { candidate, list: list_u32, rank, item: item as u32, score, value });
            }
        }
        list_bounds.push(entries.len());
    }
    Gathered { entries, list_bounds, candidates, included }
}

fn merge_repeat(entry: &mut Entry, score: f64, value: f64, duplicates: Duplicates) {
    match duplicates {
        Duplicates::First => {}
        Duplicates::Max => {
            entry.score = entry.score.max(score);
            entry.value = entry.value.max(value);
        }
        Duplicates::Sum => {
            entry.score += score;
            entry.value += value;
        }
    }
}
