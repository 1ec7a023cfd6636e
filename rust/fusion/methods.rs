//! The fusion methods: what each list gives a document (a value from its rank, or its normalised
//! score) and how those values become one score. Every method is written as a per-list
//! contribution, and the fused score is the sum of a document's contributions in list order, so
//! `explain` can show where every bit of the score came from.

use std::str::FromStr;

use crate::error::FusionError;

/// A fusion method with its parameters (ranx's names; the docs list each formula).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// `Σ w_i / (k + rank_i)`.
    Rrf { k: f64 },
}

impl Method {
    /// The method named `name` with the given parameters (those it does not use are ignored).
    pub fn from_name(name: &str, k: f64) -> Result<Self, FusionError> {
        match name {
            "rrf" => Ok(Self::Rrf { k }),
            other => Err(FusionError::invalid(format!("method must be one of {} (got '{other}')", NAMES.join(", ")))),
        }
    }

    /// Checks the method's own parameters.
    pub fn validate(&self) -> Result<(), FusionError> {
        match *self {
            Self::Rrf { k } if !(k.is_finite() && k > 0.0) => {
                Err(FusionError::invalid(format!("k must be a finite number > 0 (got {k}); 60 is the usual value")))
            }
            Self::Rrf { .. } => Ok(()),
        }
    }

    /// The value a list of weight `weight` gives the document at `rank`, for methods that read ranks
    /// only (`None` for score methods). Written exactly as the contract's term (`w / (k + rank)`, not
    /// `w * (1 / (k + rank))`), so the general path matches the fast RRF kernel bit for bit.
    #[allow(clippy::unnecessary_wraps)] // score methods (next) return None
    pub(super) fn rank_value(self, rank: u32, weight: f64) -> Option<f64> {
        match self {
            Self::Rrf { k } => Some(weight / (k + f64::from(rank))),
        }
    }

    /// The contribution of one list's (normalised) `value` with list weight `weight`.
    pub(super) fn contribution(self, value: f64, _weight: f64) -> f64 {
        match self {
            Self::Rrf { .. } => value, // the weight is already in the rank value
        }
    }
}

/// Every accepted method name, for error messages.
pub const NAMES: &[&str] = &["rrf"];

impl FromStr for Method {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s, crate::rrf::DEFAULT_K)
    }
}
