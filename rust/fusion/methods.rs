//! The fusion methods: what each list gives a document (a value from its rank, or its normalised
//! score) and how those values become one score. Every method except Condorcet is written as one
//! contribution per (list, document), and the fused score is the sum of a document's contributions
//! in list order, so `explain` shows where every bit of the score came from.
//!
//! Definitions follow ranx (`ranx/fusion/*.py`), so results can be checked against it; DBSF is
//! Qdrant's and relative score fusion Weaviate's. `docs/fusion-methods.md` lists the formulas.

use std::str::FromStr;

use crate::error::FusionError;

use super::gather::Entry;
use super::norm::Norm;

/// Parameters some methods take; the rest ignore them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MethodParams {
    /// RRF constant, finite > 0 (60).
    pub k: f64,
    /// RBC persistence, in (0, 1) (0.8).
    pub phi: f64,
    /// logn_isr smoothing, in [0, 1] (0.01, as ranx).
    pub sigma: f64,
    /// combgmnz exponent, finite (1.0, which is combmnz).
    pub gamma: f64,
}

impl Default for MethodParams {
    fn default() -> Self {
        Self { k: crate::rrf::DEFAULT_K, phi: 0.8, sigma: 0.01, gamma: 1.0 }
    }
}

impl MethodParams {
    /// Checks every parameter, whichever method reads it: a NaN `phi` passed to `combsum` is still
    /// a caller's mistake, and would surface only when the method changes.
    pub fn validate(self) -> Result<(), FusionError> {
        self.validate_each().map_err(|(_, error)| error)
    }

    /// [`Self::validate`], also naming the parameter refused.
    pub fn validate_each(self) -> Result<(), (&'static str, FusionError)> {
        Method::Rrf { k: self.k }.validate().map_err(|e| ("k", e))?;
        Method::Rbc { phi: self.phi }.validate().map_err(|e| ("phi", e))?;
        Method::LognIsr { sigma: self.sigma }.validate().map_err(|e| ("sigma", e))?;
        Method::CombGmnz { gamma: self.gamma }.validate().map_err(|e| ("gamma", e))
    }
}

/// A fusion method (ranx's names, plus `dbsf` and `relative_score`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    Rrf { k: f64 },
    Isr,
    LogIsr,
    LognIsr { sigma: f64 },
    Rbc { phi: f64 },
    Bordafuse,
    Condorcet,
    CombSum,
    CombMnz,
    CombMax,
    CombMin,
    CombMed,
    CombAnz,
    CombGmnz { gamma: f64 },
    Mixed,
    Dbsf,
    RelativeScore,
}

/// Builds a method from the parameters, taking what it needs.
pub type MakeMethod = fn(MethodParams) -> Method;

impl Method {
    /// Every accepted method name and the method it names, which takes what it needs from the
    /// parameters. Weighted twins are aliases: every method that accepts weights defaults them to 1,
    /// so `wsum` is `combsum` and `w_bordafuse` is `bordafuse`. A method's canonical name is its
    /// first entry.
    pub const BY_NAME: &'static [(&'static str, MakeMethod)] = &[
        ("rrf", |p| Self::Rrf { k: p.k }),
        ("isr", |_| Self::Isr),
        ("log_isr", |_| Self::LogIsr),
        ("logn_isr", |p| Self::LognIsr { sigma: p.sigma }),
        ("rbc", |p| Self::Rbc { phi: p.phi }),
        ("bordafuse", |_| Self::Bordafuse),
        ("w_bordafuse", |_| Self::Bordafuse),
        ("condorcet", |_| Self::Condorcet),
        ("w_condorcet", |_| Self::Condorcet),
        ("combsum", |_| Self::CombSum),
        ("combmnz", |_| Self::CombMnz),
        ("combmax", |_| Self::CombMax),
        ("combmin", |_| Self::CombMin),
        ("combmed", |_| Self::CombMed),
        ("combanz", |_| Self::CombAnz),
        ("combgmnz", |p| Self::CombGmnz { gamma: p.gamma }),
        ("wsum", |_| Self::CombSum),
        ("wmnz", |_| Self::CombMnz),
        ("mixed", |_| Self::Mixed),
        ("dbsf", |_| Self::Dbsf),
        ("relative_score", |_| Self::RelativeScore),
    ];
    /// The names `method=` accepts, in table order.
    pub const NAMES: [&'static str; Self::BY_NAME.len()] = crate::names::names(Self::BY_NAME);

    /// The method named `name`, taking what it needs from `params` (all of which must be valid).
    pub fn from_name(name: &str, params: MethodParams) -> Result<Self, FusionError> {
        let Some(make) = crate::names::find(Self::BY_NAME, name) else {
            return Err(FusionError::invalid(format!(
                "method must be one of {} (got '{name}')",
                Self::NAMES.join(", ")
            )));
        };
        params.validate()?;
        Ok(make(params))
    }

    /// The canonical name: the first in [`Self::BY_NAME`] that names this method.
    #[must_use]
    pub fn name(self) -> &'static str {
        let this = std::mem::discriminant(&self);
        Self::BY_NAME
            .iter()
            .find(|(_, make)| std::mem::discriminant(&make(MethodParams::default())) == this)
            .map_or("?", |&(name, _)| name)
    }

    /// Checks the method's own parameters.
    pub fn validate(self) -> Result<(), FusionError> {
        let bad = |what: &str, v: f64, fix: &str| Err(FusionError::invalid(format!("{what} (got {v}); {fix}")));
        match self {
            Self::Rrf { k } if !(k.is_finite() && k > 0.0) => {
                bad("k must be a finite number > 0", k, "60 is the usual value")
            }
            Self::Rbc { phi } if !(phi > 0.0 && phi < 1.0) => {
                bad("phi must be in (0, 1) for rbc", phi, "0.8 is a common choice")
            }
            Self::LognIsr { sigma } if !(0.0..=1.0).contains(&sigma) => {
                bad("sigma must be in [0, 1] for logn_isr", sigma, "ranx's default is 0.01")
            }
            Self::CombGmnz { gamma } if !gamma.is_finite() => {
                bad("gamma must be a finite number for combgmnz", gamma, "1.0 gives combmnz")
            }
            _ => Ok(()),
        }
    }

    /// True for methods that read only ranks (scores are ignored and no normalisation applies).
    #[must_use]
    pub fn reads_ranks(self) -> bool {
        matches!(
            self,
            Self::Rrf { .. }
                | Self::Isr
                | Self::LogIsr
                | Self::LognIsr { .. }
                | Self::Rbc { .. }
                | Self::Bordafuse
                | Self::Condorcet
        )
    }

    /// False for methods whose definition has no per-list weight.
    #[must_use]
    pub fn takes_weights(self) -> bool {
        !matches!(
            self,
            Self::Isr
                | Self::LogIsr
                | Self::LognIsr { .. }
                | Self::CombMax
                | Self::CombMin
                | Self::CombMed
                | Self::CombAnz
                | Self::CombGmnz { .. }
        )
    }

    /// What a caller can set for this method beyond the lists, by keyword: its own parameter (`k`,
    /// `phi`, `sigma` or `gamma`), `weights` where it has per-list weights, `norm` where the caller
    /// chooses the normalisation. Tuning searches exactly these.
    #[must_use]
    pub fn parameters(self) -> Vec<&'static str> {
        let own = match self {
            Self::Rrf { .. } => Some("k"),
            Self::Rbc { .. } => Some("phi"),
            Self::LognIsr { .. } => Some("sigma"),
            Self::CombGmnz { .. } => Some("gamma"),
            _ => None,
        };
        let weights = self.takes_weights().then_some("weights");
        let norm = (!self.reads_ranks() && self.own_norm().is_none()).then_some("norm");
        [own, weights, norm].into_iter().flatten().collect()
    }

    /// The normalisation a score method always applies (DBSF and relative score fusion define
    /// their own); `None` where the caller chooses.
    #[must_use]
    pub fn own_norm(self) -> Option<Norm> {
        match self {
            Self::Dbsf => Some(Norm::Distribution),
            Self::RelativeScore => Some(Norm::Relative),
            _ => None,
        }
    }

    /// The value a list of weight `weight` gives the document at `rank`, for rank methods whose
    /// value needs nothing but the rank (`None` otherwise). RRF is written exactly as the contract's
    /// term (`w / (k + rank)`), so the general path matches the fast RRF kernel bit for bit.
    #[must_use]
    pub(super) fn rank_value(self, rank: u32, weight: f64) -> Option<f64> {
        let r = f64::from(rank);
        match self {
            Self::Rrf { k } => Some(weight / (k + r)),
            Self::Isr | Self::LogIsr | Self::LognIsr { .. } => Some(1.0 / (r * r)),
            // ranx: (1 - phi) * phi^i with the 0-based position i.
            Self::Rbc { phi } => Some((1.0 - phi) * phi.powf(f64::from(rank - 1))),
            _ => None,
        }
    }

    /// Every entry's contribution, aligned with `entries` (which are stored list by list).
    /// `weight(list)` is the list's weight; values are already normalised.
    pub(super) fn contributions(self, entries: &[Entry], n_candidates: usize, weight: impl Fn(u32) -> f64) -> Vec<f64> {
        // Per candidate: in how many lists it is, and their total weight (wmnz's multiplier).
        let mut count = vec![0_u32; n_candidates];
        let mut weight_sum = vec![0.0_f64; n_candidates];
        for e in entries {
            count[e.candidate as usize] += 1;
            weight_sum[e.candidate as usize] += weight(e.list);
        }
        let n = |e: &Entry| f64::from(count[e.candidate as usize]);
        match self {
            Self::Rrf { .. } => entries.iter().map(|e| e.value).collect(), // the weight is in the value
            Self::Isr => entries.iter().map(|e| e.value * n(e)).collect(),
            Self::LogIsr => entries.iter().map(|e| e.value * n(e).ln()).collect(),
            Self::LognIsr { sigma } => entries.iter().map(|e| e.value * (n(e) + sigma).ln()).collect(),
            Self::CombMnz => entries.iter().map(|e| e.value * weight_sum[e.candidate as usize]).collect(),
            Self::CombAnz => entries.iter().map(|e| e.value / n(e)).collect(),
            Self::CombGmnz { gamma } => entries.iter().map(|e| e.value * n(e).powf(gamma)).collect(),
            Self::Mixed => entries.iter().map(|e| weight(e.list) * e.value * n(e).sqrt()).collect(),
            Self::CombMax => pick(entries, n_candidates, |new, old| new > old),
            Self::CombMin => pick(entries, n_candidates, |new, old| new < old),
            Self::CombMed => median(entries, &count),
            Self::Condorcet => vec![f64::NAN; entries.len()], // a position, not a sum: see condorcet.rs
            Self::Rbc { .. } | Self::Bordafuse | Self::CombSum | Self::Dbsf | Self::RelativeScore => {
                entries.iter().map(|e| weight(e.list) * e.value).collect()
            }
        }
    }
}

/// combmax / combmin: the whole score comes from the first list holding the extreme value.
fn pick(entries: &[Entry], n_candidates: usize, better: impl Fn(f64, f64) -> bool) -> Vec<f64> {
    let mut chosen = vec![u32::MAX; n_candidates];
    for (at, e) in entries.iter().enumerate() {
        let slot = &mut chosen[e.candidate as usize];
        if *slot == u32::MAX || better(e.value, entries[*slot as usize].value) {
            *slot = at as u32;
        }
    }
    let mut out = vec![0.0; entries.len()];
    for &at in chosen.iter().filter(|&&at| at != u32::MAX) {
        out[at as usize] = entries[at as usize].value;
    }
    out
}

/// combmed: the middle value, or half of each of the two middle values (halving is exact, so the
/// two halves add up to their mean exactly).
fn median(entries: &[Entry], count: &[u32]) -> Vec<f64> {
    // Group entry indices by candidate (counting sort keeps list order inside a group).
    let mut start = vec![0_usize; count.len() + 1];
    for (c, &n) in count.iter().enumerate() {
        start[c + 1] = start[c] + n as usize;
    }
    let mut fill = start.clone();
    let mut grouped = vec![0_usize; entries.len()];
    for (at, e) in entries.iter().enumerate() {
        grouped[fill[e.candidate as usize]] = at;
        fill[e.candidate as usize] += 1;
    }
    let mut out = vec![0.0; entries.len()];
    for c in 0..count.len() {
        let group = &mut grouped[start[c]..start[c + 1]];
        group.sort_by(|&a, &b| entries[a].value.total_cmp(&entries[b].value));
        let mid = group.len() / 2;
        if group.len() % 2 == 1 {
            out[group[mid]] = entries[group[mid]].value;
        } else if !group.is_empty() {
            out[group[mid - 1]] = entries[group[mid - 1]].value / 2.0;
            out[group[mid]] = entries[group[mid]].value / 2.0;
        }
    }
    out
}

impl FromStr for Method {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s, MethodParams::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_and_every_method_has_a_name_that_parses_back() {
        for &(name, make) in Method::BY_NAME {
            let method: Method = name.parse().unwrap();
            assert_eq!(method, make(MethodParams::default()), "{name}");
            assert_eq!(method.name().parse::<Method>().unwrap(), method, "{name}");
        }
        let p = MethodParams::default();
        let every_method = [
            Method::Rrf { k: p.k },
            Method::Isr,
            Method::LogIsr,
            Method::LognIsr { sigma: p.sigma },
            Method::Rbc { phi: p.phi },
            Method::Bordafuse,
            Method::Condorcet,
            Method::CombSum,
            Method::CombMnz,
            Method::CombMax,
            Method::CombMin,
            Method::CombMed,
            Method::CombAnz,
            Method::CombGmnz { gamma: p.gamma },
            Method::Mixed,
            Method::Dbsf,
            Method::RelativeScore,
        ];
        for method in every_method {
            assert!(Method::NAMES.contains(&method.name()), "{method:?}");
        }
        assert_eq!((Method::CombSum.name(), Method::Bordafuse.name()), ("combsum", "bordafuse"));
        let unknown = "borda".parse::<Method>().unwrap_err().to_string();
        assert!(unknown.starts_with("method must be one of rrf, isr, log_isr,"), "{unknown}");
    }
}
