//! Score normalisations, per list, as ranx defines them (`ranx/normalization/*.py`), plus the two
//! that DBSF (Qdrant) and relative score fusion (Weaviate) build in. Each works on one list's
//! entries in place; Borda also gives every list an entry for every candidate.

use std::str::FromStr;

use crate::error::FusionError;

use super::gather::{Entry, Gathered};

/// ranx's floor on denominators: a list whose scores are all equal normalises to 0, not NaN.
const FLOOR: f64 = 1e-9;

/// `max(denominator, FLOOR)` that keeps a NaN: a range that overflowed (inf - inf) must reach the
/// fused score and be refused there, where `f64::max` would quietly turn it into the floor.
fn floored(denominator: f64) -> f64 {
    if denominator.is_nan() {
        denominator
    } else {
        denominator.max(FLOOR)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// Scores as given.
    None,
    /// `(s - min) / max(max - min, 1e-9)`.
    MinMax,
    /// `(max - s) / max(max - min, 1e-9)`: for distances, where smaller is better.
    MinMaxInverted,
    /// `s / max(max, 1e-9)`.
    Max,
    /// `(s - min) / max(sum - n * min, 1e-9)`.
    Sum,
    /// `(s - mean) / max(std, 1e-9)`, population standard deviation.
    Zmuv,
    /// `1 - (rank - 1) / n`, `n` the list's length.
    Rank,
    /// `1 - (rank - 1) / N` with `N` candidates in all lists; a candidate missing from a list of
    /// length `n` gets `0.5 - (n - 1) / (2N)` there.
    Borda,
    /// Qdrant's DBSF: `(s - lo) / (hi - lo)` with `lo, hi = mean ∓ 3σ` (sample σ); 0.5 when `hi == lo`
    /// or for a single hit.
    Distribution,
    /// Weaviate's relative score: `(s - min) / (max - min)`, or 1 when all scores are equal.
    Relative,
}

impl Norm {
    /// The names `norm=` accepts. `Distribution` and `Relative` are not among them: they exist only
    /// inside `dbsf` and `relative_score`.
    pub const BY_NAME: &'static [(&'static str, Self)] = &[
        ("none", Self::None),
        ("min-max", Self::MinMax),
        ("min-max-inverted", Self::MinMaxInverted),
        ("max", Self::Max),
        ("sum", Self::Sum),
        ("zmuv", Self::Zmuv),
        ("rank", Self::Rank),
        ("borda", Self::Borda),
    ];
    pub const NAMES: [&'static str; Self::BY_NAME.len()] = crate::names::names(Self::BY_NAME);
    /// Spellings with underscores, accepted but not listed.
    const ALIASES: &'static [(&'static str, Self)] =
        &[("min_max", Self::MinMax), ("min_max_inverted", Self::MinMaxInverted)];

    /// The name `norm=` takes (and for the two built into methods, the name messages use).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Distribution => "dbsf",
            Self::Relative => "relative",
            _ => Self::BY_NAME.iter().find(|&&(_, norm)| norm == self).map_or("?", |&(name, _)| name),
        }
    }
}

impl FromStr for Norm {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let found = crate::names::find(Self::BY_NAME, s).or_else(|| crate::names::find(Self::ALIASES, s));
        found.ok_or_else(|| FusionError::invalid(format!("norm must be one of {} (got '{s}')", Self::NAMES.join(", "))))
    }
}

/// Normalises every list of `gathered` in place.
pub(super) fn normalise(norm: Norm, gathered: &mut Gathered, list_len: impl Fn(usize) -> usize) {
    if norm == Norm::Borda {
        let n = gathered.candidates.len() as f64;
        expand_to_all_candidates(
            gathered,
            |entry, _| 1.0 - f64::from(entry.rank - 1) / n,
            |present| 0.5 - (present as f64 - 1.0) / (2.0 * n),
        );
        return;
    }
    for list in 0..gathered.list_bounds.len() - 1 {
        let entries = &mut gathered.entries[gathered.list_bounds[list]..gathered.list_bounds[list + 1]];
        normalise_list(norm, entries, list_len(list));
    }
}

fn normalise_list(norm: Norm, entries: &mut [Entry], list_len: usize) {
    if entries.is_empty() {
        return;
    }
    let n = entries.len() as f64;
    let min = entries.iter().map(|e| e.value).fold(f64::INFINITY, f64::min);
    let max = entries.iter().map(|e| e.value).fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = entries.iter().map(|e| e.value).sum();
    let map = |entries: &mut [Entry], f: &dyn Fn(&Entry) -> f64| entries.iter_mut().for_each(|e| e.value = f(e));
    match norm {
        Norm::None => {}
        Norm::MinMax => map(entries, &|e| (e.value - min) / floored(max - min)),
        Norm::MinMaxInverted => map(entries, &|e| (max - e.value) / floored(max - min)),
        Norm::Max => map(entries, &|e| e.value / floored(max)),
        Norm::Sum => map(entries, &|e| (e.value - min) / floored(sum - min * n)),
        Norm::Zmuv => {
            let mean = sum / n;
            let std = (entries.iter().map(|e| (e.value - mean) * (e.value - mean)).sum::<f64>() / n).sqrt();
            map(entries, &|e| (e.value - mean) / floored(std));
        }
        Norm::Rank => map(entries, &|e| 1.0 - f64::from(e.rank - 1) / list_len as f64),
        Norm::Distribution => {
            let (lo, hi) = if entries.len() < 2 {
                (0.0, 0.0)
            } else {
                let mean = sum / n;
                let sample_std =
                    (entries.iter().map(|e| (e.value - mean) * (e.value - mean)).sum::<f64>() / (n - 1.0)).sqrt();
                (mean - 3.0 * sample_std, mean + 3.0 * sample_std)
            };
            #[allow(clippy::float_cmp)] // Qdrant's own guard is exact equality
            if hi == lo {
                map(entries, &|_| 0.5);
            } else {
                map(entries, &|e| (e.value - lo) / (hi - lo));
            }
        }
        Norm::Relative => {
            #[allow(clippy::float_cmp)] // Weaviate's own guard is exact equality
            if max == min {
                map(entries, &|_| 1.0);
            } else {
                map(entries, &|e| (e.value - min) / (max - min));
            }
        }
        Norm::Borda => unreachable!("Borda is applied to all lists at once"),
    }
}

/// Gives every list an entry for every candidate: `ranked(entry, present)` for the candidates it
/// has, `unranked(present)` for the others (entry rank 0), where `present` is the list's number of
/// distinct ids. Used by Borda normalisation and by `bordafuse`, which score missing documents too.
pub(super) fn expand_to_all_candidates(
    gathered: &mut Gathered,
    ranked: impl Fn(&Entry, usize) -> f64,
    unranked: impl Fn(usize) -> f64,
) {
    let n_candidates = gathered.candidates.len();
    let n_lists = gathered.list_bounds.len() - 1;
    let mut entries = Vec::with_capacity(n_candidates * n_lists);
    let mut bounds = Vec::with_capacity(n_lists + 1);
    bounds.push(0);
    let mut seen = vec![u32::MAX; n_candidates];
    for list in 0..n_lists {
        let own = &gathered.entries[gathered.list_bounds[list]..gathered.list_bounds[list + 1]];
        // A list that was left out (weight 0) stays empty.
        if !own.is_empty() || gathered.included[list] {
            for e in own {
                seen[e.candidate as usize] = list as u32;
                entries.push(Entry { value: ranked(e, own.len()), ..*e });
            }
            let missing = unranked(own.len());
            for c in (0..n_candidates as u32).filter(|&c| seen[c as usize] != list as u32) {
                entries.push(Entry::absent(c, list as u32, missing));
            }
        }
        bounds.push(entries.len());
    }
    gathered.entries = entries;
    gathered.list_bounds = bounds;
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_aliases_are_accepted_but_not_listed() {
        for &(name, norm) in Norm::BY_NAME {
            assert_eq!(name.parse::<Norm>().unwrap(), norm);
            assert_eq!(norm.name(), name);
        }
        assert_eq!("min_max".parse::<Norm>().unwrap(), Norm::MinMax);
        assert_eq!("min_max_inverted".parse::<Norm>().unwrap(), Norm::MinMaxInverted);
        assert!(!Norm::NAMES.contains(&"min_max"));
        assert_eq!((Norm::Distribution.name(), Norm::Relative.name()), ("dbsf", "relative"));
    }
}
