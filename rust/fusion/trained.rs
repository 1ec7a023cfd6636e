//! Trained fusion methods: each run gives the document at each position a value learnt from
//! relevance judgments (the probability that a document there is relevant, or its log odds, or
//! the run's MAP), and the fused score is the sum over runs. Definitions follow ranx
//! (`ranx/fusion/{probfuse,segfuse,slidefuse,bayesfuse,posfuse,mapfuse}.py`) term for term, so
//! scores are ranx's bit for bit; training from runs and qrels is in `crate::train`.

use std::str::FromStr;

use crate::error::FusionError;
use crate::keys::FusionKey;

use super::{gather, norm, FuseParams, Fusion, Norm, ScoredLists};

/// A method whose per-position values are learnt from qrels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainedMethod {
    ProbFuse,
    SegFuse,
    SlideFuse,
    BayesFuse,
    PosFuse,
    MapFuse,
}

impl TrainedMethod {
    pub const BY_NAME: &'static [(&'static str, Self)] = &[
        ("probfuse", Self::ProbFuse),
        ("segfuse", Self::SegFuse),
        ("slidefuse", Self::SlideFuse),
        ("bayesfuse", Self::BayesFuse),
        ("posfuse", Self::PosFuse),
        ("mapfuse", Self::MapFuse),
    ];
    /// The names `train_fusion(method=)` accepts.
    pub const NAMES: [&'static str; Self::BY_NAME.len()] = crate::names::names(Self::BY_NAME);

    #[must_use]
    pub fn name(self) -> &'static str {
        Self::BY_NAME.iter().find(|&&(_, m)| m == self).map_or("?", |&(name, _)| name)
    }

    /// What training takes for this method beyond runs and judgments, by keyword (see
    /// [`TrainedModel`]'s `segments` and `window`).
    #[must_use]
    pub fn parameters(self) -> &'static [&'static str] {
        match self {
            Self::ProbFuse => &["segments"],
            Self::SlideFuse => &["window"],
            _ => &[],
        }
    }

    /// segfuse multiplies by the (normalised) score; the others read positions only.
    #[must_use]
    pub fn reads_scores(self) -> bool {
        self == Self::SegFuse
    }
}

impl FromStr for TrainedMethod {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::names::parse(Self::BY_NAME, "method", s)
    }
}

/// segfuse's segment bounds: `10 · 2^(k−1) − 5` for k = 1..10 (Shokouhi's segments, as ranx).
pub const SEGFUSE_BOUNDS: [usize; 11] = [0, 5, 15, 35, 75, 155, 315, 635, 1275, 2555, 5115];
/// bayesfuse's cut-offs: its log odds are estimated per segment between consecutive cut-offs.
pub const BAYESFUSE_CUTOFFS: [usize; 10] = [0, 5, 10, 15, 20, 30, 100, 200, 500, 1000];

/// The log odds bayesfuse gives a document a run lacks: `ln(0.001 / 0.999)`, as ranx.
#[must_use]
pub fn bayesfuse_missing() -> f64 {
    (0.001_f64 / 0.999).ln()
}

/// Largest segment count or window a model accepts (ranx's tuning tries 1 to 100).
pub const MAX_SIZE: usize = 1_000_000;

/// A trained model: per run, the table its positions read.
///
/// * probfuse: `tables[r][s]` the mean share of relevant documents in segment `s` (a list of `N`
///   hits is cut into `segments` segments of `ceil(N / segments)`); position value `table[s] / (s + 1)`.
/// * segfuse: the mean share per segment of [`SEGFUSE_BOUNDS`]; value `table[s] · (score + 1)`,
///   0 beyond the last segment.
/// * slidefuse: the share of relevant documents at each position; value the mean of the table over
///   the window `[p − window, p + window]` clipped to the list (positions beyond the table add 0).
/// * bayesfuse: the log odds of relevance per segment of [`BAYESFUSE_CUTOFFS`]; the fused score
///   sums every run's value, [`bayesfuse_missing`] for a run that lacks the document (or holds it
///   beyond the last cut-off).
/// * posfuse: the share at each position; 0 beyond the table.
/// * mapfuse: one value, the run's MAP; value `map / (p + 1)`.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainedModel {
    pub method: TrainedMethod,
    pub tables: Vec<Vec<f64>>,
    /// probfuse's segment count (the length of each table).
    pub segments: Option<usize>,
    /// slidefuse's half-window.
    pub window: Option<usize>,
}

impl TrainedModel {
    /// Checks that the tables have the shape the method reads and hold finite values, naming the
    /// first bad field as `tables[r][i]`.
    pub fn validate(&self) -> Result<(), FusionError> {
        let bad = |message: String| Err(FusionError::invalid(message));
        if self.tables.is_empty() {
            return bad("tables is empty: a model holds one table per run it was trained on".into());
        }
        let name = self.method.name();
        let size = |what: &str, value: Option<usize>, wanted: bool| match (value, wanted) {
            (Some(v), true) if (1..=MAX_SIZE).contains(&v) || (what == "window" && v == 0) => Ok(()),
            (Some(v), true) => {
                bad(format!("{what} must be an int from {} to {MAX_SIZE} (got {v})", u8::from(what != "window")))
            }
            (None, true) => bad(format!("{name} needs {what}")),
            (Some(_), false) => bad(format!(
                "{what} applies to {} only, not {name}",
                if what == "window" { "slidefuse" } else { "probfuse" }
            )),
            (None, false) => Ok(()),
        };
        size("segments", self.segments, self.method == TrainedMethod::ProbFuse)?;
        size("window", self.window, self.method == TrainedMethod::SlideFuse)?;
        let wanted_len = match self.method {
            TrainedMethod::ProbFuse => self.segments,
            TrainedMethod::SegFuse => Some(SEGFUSE_BOUNDS.len() - 1),
            TrainedMethod::BayesFuse => Some(BAYESFUSE_CUTOFFS.len() - 1),
            TrainedMethod::MapFuse => Some(1),
            TrainedMethod::SlideFuse | TrainedMethod::PosFuse => None,
        };
        for (r, table) in self.tables.iter().enumerate() {
            if let Some(n) = wanted_len.filter(|&n| n != table.len()) {
                return bad(format!("tables[{r}] has {} values; {name} needs {n}", table.len()));
            }
            if let Some(i) = table.iter().position(|v| !v.is_finite()) {
                return bad(format!("tables[{r}][{i}] is {}; values must be finite", table[i]));
            }
            // Every table but bayesfuse's log odds holds shares of relevant documents (a MAP for mapfuse).
            if self.method != TrainedMethod::BayesFuse {
                if let Some(i) = table.iter().position(|v| !(0.0..=1.0).contains(v)) {
                    let held =
                        if self.method == TrainedMethod::MapFuse { "a MAP" } else { "shares of relevant documents" };
                    return bad(format!("tables[{r}][{i}] is {}; a {name} table holds {held}, from 0 to 1", table[i]));
                }
            }
        }
        Ok(())
    }

    /// The value run `run` gives the document at 1-based `rank` of a list of `len` hits, before any
    /// score: every method but segfuse (which multiplies this by `score + 1`).
    #[must_use]
    pub fn rank_value(&self, run: usize, rank: u32, len: usize) -> f64 {
        let table = &self.tables[run];
        let p = rank as usize - 1;
        match self.method {
            TrainedMethod::ProbFuse => {
                let segment_size = len.div_ceil(table.len()).max(1);
                let s = p / segment_size;
                table.get(s).map_or(0.0, |prob| prob / (s + 1) as f64)
            }
            TrainedMethod::SegFuse => SEGFUSE_BOUNDS.windows(2).position(|b| p < b[1]).map_or(0.0, |s| table[s]),
            TrainedMethod::SlideFuse => {
                let w = self.window.unwrap_or(0);
                let (a, b) = (p.saturating_sub(w), (p + w).min(len.saturating_sub(1)));
                // ranx sums a slice of the table, which numpy clips to its end.
                let sum = table.iter().take(b + 1).skip(a).fold(0.0, |acc, v| acc + v);
                sum / (b - a + 1) as f64
            }
            TrainedMethod::BayesFuse => {
                BAYESFUSE_CUTOFFS.windows(2).position(|c| p < c[1]).map_or_else(bayesfuse_missing, |s| table[s])
            }
            TrainedMethod::PosFuse => table.get(p).copied().unwrap_or(0.0),
            TrainedMethod::MapFuse => table[0] / (p + 1) as f64,
        }
    }
}

/// Checks the options of a call fusing `n_lists` lists by `model`.
pub(super) fn validate_params(model: &TrainedModel, params: &FuseParams, n_lists: usize) -> Result<(), FusionError> {
    let name = model.method.name();
    if model.tables.len() != n_lists {
        return Err(FusionError::invalid(format!(
            "the {name} model was trained on {} runs but {n_lists} are given; pass the same runs, in the order they were trained on",
            model.tables.len()
        )));
    }
    if params.weights.is_some() {
        return Err(FusionError::invalid(format!(
            "method '{name}' has no per-list weights (its training weighs the runs); drop weights"
        )));
    }
    match params.norm.filter(|&n| n != Norm::None) {
        Some(norm) if !model.method.reads_scores() => Err(FusionError::invalid(format!(
            "method '{name}' reads positions only, so norm='{}' would have no effect; leave norm unset",
            norm.name()
        ))),
        Some(Norm::Distribution | Norm::Relative) => Err(FusionError::invalid(
            "segfuse takes the norms of score methods; dbsf and relative are methods of their own",
        )),
        _ => Ok(()),
    }
}

/// Fuses `lists` (one per run the model was trained on, best first) by the model: each run's
/// value per hit, summed over runs in run order as ranx's comb_sum does (so the sums are ranx's
/// bit for bit); bayesfuse adds [`bayesfuse_missing`] for every run that lacks the document.
pub(super) fn fuse<T: FusionKey>(
    lists: &ScoredLists<'_, T>,
    model: &TrainedModel,
    params: &FuseParams,
) -> Result<Fusion, FusionError> {
    let method = model.method;
    let list_len = |list: usize| lists.ids.list(list).len();
    let rank_value = |list: usize, rank: u32| model.rank_value(list, rank, list_len(list));
    let rank_value = (!method.reads_scores()).then_some(&rank_value as &dyn Fn(usize, u32) -> f64);
    let mut gathered = gather::gather(lists, |_| true, params.duplicates, rank_value);
    match method {
        TrainedMethod::SegFuse => {
            // ranx normalises the runs before fusing (min-max unless told otherwise).
            norm::normalise(params.norm.unwrap_or(Norm::MinMax), &mut gathered, list_len);
            for e in &mut gathered.entries {
                e.value = model.rank_value(e.list as usize, e.rank, list_len(e.list as usize)) * (e.value + 1.0);
            }
        }
        TrainedMethod::BayesFuse => {
            norm::expand_to_all_candidates(&mut gathered, |entry, _| entry.value, |_| bayesfuse_missing());
        }
        _ => {}
    }
    let contributions: Vec<f64> = gathered.entries.iter().map(|e| e.value).collect();
    let scores = super::sum_in_list_order(&gathered, &contributions);
    super::check_finite(&scores, &gathered.candidates, lists.ids.items(), method.name(), "scale the scores down")?;
    Ok(super::rank_candidates(lists, params, &gathered, &contributions, &scores, None))
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values are the definition under test
mod tests {
    use super::*;

    fn model(method: TrainedMethod, tables: Vec<Vec<f64>>) -> TrainedModel {
        TrainedModel { method, tables, segments: None, window: None }
    }

    #[test]
    fn probfuse_divides_each_segment_by_its_number() {
        let m = TrainedModel { segments: Some(2), ..model(TrainedMethod::ProbFuse, vec![vec![0.5, 0.25]]) };
        // 5 hits in 2 segments of 3: positions 1-3 in the first, 4-5 in the second.
        let values: Vec<f64> = (1..=5).map(|r| m.rank_value(0, r, 5)).collect();
        assert_eq!(values, [0.5, 0.5, 0.5, 0.125, 0.125]);
    }

    #[test]
    fn slidefuse_averages_the_window_clipped_to_the_list_and_the_table() {
        let m = TrainedModel { window: Some(1), ..model(TrainedMethod::SlideFuse, vec![vec![1.0, 0.5]]) };
        // 3 hits: [1, 0.5], [1, 0.5, -], [0.5, -] where '-' is beyond the table (adds 0).
        let values: Vec<f64> = (1..=3).map(|r| m.rank_value(0, r, 3)).collect();
        assert_eq!(values, [0.75, 0.5, 0.25]);
    }

    #[test]
    fn segment_methods_read_their_fixed_bounds() {
        let seg = model(TrainedMethod::SegFuse, vec![(1..=10).map(f64::from).collect()]);
        assert_eq!([5, 6, 15, 16, 5115, 5116].map(|r| seg.rank_value(0, r, 6000)), [1.0, 2.0, 2.0, 3.0, 10.0, 0.0]);
        let bayes = model(TrainedMethod::BayesFuse, vec![(1..=9).map(f64::from).collect()]);
        assert_eq!([1, 30, 31, 1000].map(|r| bayes.rank_value(0, r, 2000)), [1.0, 5.0, 6.0, 9.0]);
        assert_eq!(bayes.rank_value(0, 1001, 2000), bayesfuse_missing());
    }

    #[test]
    fn validation_names_the_bad_field() {
        let err = |m: TrainedModel| m.validate().unwrap_err().to_string();
        assert_eq!(
            err(model(TrainedMethod::MapFuse, vec![vec![0.1], vec![f64::NAN]])),
            "tables[1][0] is NaN; values must be finite"
        );
        assert_eq!(err(model(TrainedMethod::SegFuse, vec![vec![0.1]])), "tables[0] has 1 values; segfuse needs 10");
        assert_eq!(err(model(TrainedMethod::ProbFuse, vec![vec![0.1]])), "probfuse needs segments");
        let windowed = TrainedModel { window: Some(3), ..model(TrainedMethod::PosFuse, vec![vec![]]) };
        assert_eq!(err(windowed), "window applies to slidefuse only, not posfuse");
        assert!(model(TrainedMethod::PosFuse, vec![vec![]]).validate().is_ok());
        for (_, method) in TrainedMethod::BY_NAME {
            let tables = |value: f64| {
                let size = match method {
                    TrainedMethod::SegFuse => SEGFUSE_BOUNDS.len() - 1,
                    TrainedMethod::BayesFuse => BAYESFUSE_CUTOFFS.len() - 1,
                    _ => 1,
                };
                let segments = (*method == TrainedMethod::ProbFuse).then_some(1);
                let window = (*method == TrainedMethod::SlideFuse).then_some(0);
                TrainedModel { method: *method, tables: vec![vec![value; size]], segments, window }
            };
            for share in [0.0, 0.5, 1.0] {
                assert!(tables(share).validate().is_ok());
            }
            for outside in [-0.5, 1.5] {
                let refusal = tables(outside).validate().map_err(|e| e.to_string());
                if *method == TrainedMethod::BayesFuse {
                    assert!(refusal.is_ok(), "log odds are any finite number");
                } else {
                    assert!(refusal.unwrap_err().starts_with(&format!("tables[0][0] is {outside}; a ")));
                }
            }
        }
    }
}
