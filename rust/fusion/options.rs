//! The fusion options of every entry point as one value: each option read by name, every value and
//! combination checked once, here, and the defaults stated once ([`FusionOptions::default`]).

use std::sync::Arc;

use super::{Duplicates, FuseParams, Method, MethodParams, Norm, TrainedMethod, TrainedModel};
use crate::error::FusionError;
use crate::rrf::{RrfParams, TieBreak};

/// What a run fusion keeps per query when `top_k` is left unset: trec_eval reads at most 1000 hits
/// a query (its default `-M 1000`), so a fused run file holds as many. Fusing lists in memory keeps
/// every hit instead; `top_k=None` given explicitly keeps every hit everywhere.
pub const RUN_FILE_TOP_K: usize = 1000;

/// How an option's value is given: a name (str), a number, numbers (one per list), a count, a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Name,
    Number,
    Numbers,
    Count,
    Flag,
}

/// Every option, in order, with its kind and whether None is a value of it.
pub const OPTIONS: [(&str, Kind, bool); 11] = [
    ("method", Kind::Name, true),
    ("norm", Kind::Name, true),
    ("k", Kind::Number, false),
    ("weights", Kind::Numbers, true),
    ("top_k", Kind::Count, true),
    ("tie_break", Kind::Name, false),
    ("duplicates", Kind::Name, false),
    ("explain", Kind::Flag, false),
    ("phi", Kind::Number, false),
    ("sigma", Kind::Number, false),
    ("gamma", Kind::Number, false),
];

/// The options Reciprocal Rank Fusion reads (`rrf`, `rrf_batch`).
pub const RRF_OPTIONS: [&str; 4] = ["k", "weights", "top_k", "tie_break"];
/// The options no run fusion reads: a run holds each docid once a query, and a run file has no
/// place for per-hit contributions.
pub const NOT_FOR_RUNS: [&str; 2] = ["duplicates", "explain"];

/// The option called `name` in a call to `entry`; else refused as Python refuses an unexpected
/// keyword (a `TypeError`), listing the options.
pub fn option_named(entry: &str, name: &str) -> Result<(&'static str, Kind, bool), FusionError> {
    OPTIONS.iter().copied().find(|o| o.0 == name).ok_or_else(|| {
        let names: Vec<&str> = OPTIONS.iter().map(|o| o.0).collect();
        let listed = names.join(", ");
        FusionError::wrong_type(format!(
            "{entry}() got an unexpected keyword argument '{name}' (fusion options: {listed})"
        ))
    })
}

/// Refuses a call to `entry` given both an options value and option keywords.
#[must_use]
pub fn given_twice(entry: &str) -> FusionError {
    FusionError::wrong_type(format!(
        "{entry}() takes options= or option keywords, not both: put every option in the FusionOptions"
    ))
}

/// Refuses `options=` of a call to `entry` given something other than a `FusionOptions`.
#[must_use]
pub fn not_options(entry: &str, got: &str) -> FusionError {
    FusionError::wrong_type(format!(
        "{entry}() takes options= as a fanfuse.FusionOptions (got {got}), or the options as keywords"
    ))
}

/// A refused option: the error, and the option it is about (for a combination, the option that
/// comes later in [`OPTIONS`], as when the options are given one at a time).
#[derive(Debug)]
pub struct OptionError {
    pub option: &'static str,
    pub error: FusionError,
}

fn at(option: &'static str) -> impl FnOnce(FusionError) -> OptionError {
    move |error| OptionError { option, error }
}

/// One option's value as given.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Name(String),
    Number(f64),
    Numbers(Vec<f64>),
    Count(usize),
    Flag(bool),
}

/// `top_k`: left unset (the entry point's default), None (keep every hit), or a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopK {
    #[default]
    Unset,
    All,
    First(usize),
}

/// The fusion options, checked: every name known, every value in range, the method's use of
/// scores, weights and norm consistent. Weights are counted against the lists at the call.
#[derive(Debug, Clone)]
pub struct FusionOptions {
    /// None: rrf, or the trained model's method when a run fusion is given one.
    pub method: Option<String>,
    pub norm: Option<Norm>,
    pub params: MethodParams,
    pub weights: Option<Vec<f64>>,
    pub top_k: TopK,
    pub tie_break: TieBreak,
    pub duplicates: Duplicates,
    pub explain: bool,
    /// The options given, in [`OPTIONS`] order: equal values compare equal however they were given.
    given: Vec<&'static str>,
}

impl Default for FusionOptions {
    fn default() -> Self {
        Self {
            method: None,
            norm: None,
            params: MethodParams::default(),
            weights: None,
            top_k: TopK::Unset,
            tie_break: TieBreak::Rank,
            duplicates: Duplicates::First,
            explain: false,
            given: Vec::new(),
        }
    }
}

impl PartialEq for FusionOptions {
    fn eq(&self, other: &Self) -> bool {
        let key = |o: &Self| (o.method.clone(), o.norm, o.params, o.weights.clone(), o.top_k, o.tie_break);
        key(self) == key(other) && (self.duplicates, self.explain) == (other.duplicates, other.explain)
    }
}

/// Every method name (plain, then trained) with what a caller can set for it and whether it
/// fuses scores: the tables `fanfuse.METHOD_PARAMETERS` and `fanfuse.SCORE_METHODS` publish.
#[must_use]
pub fn method_table() -> Vec<(&'static str, Vec<&'static str>, bool)> {
    let plain = Method::BY_NAME.iter().map(|&(name, make)| {
        let method = make(MethodParams::default());
        (name, method.parameters(), !method.reads_ranks())
    });
    // A trained method's own keywords are its training's; one that reads scores (segfuse) also
    // takes the norm that scales them before they are weighed, as a plain score method does.
    let trained = TrainedMethod::BY_NAME.iter().map(|&(name, method)| {
        let norm = method.reads_scores().then_some("norm");
        (name, method.parameters().iter().copied().chain(norm).collect(), method.reads_scores())
    });
    plain.chain(trained).collect()
}

impl FusionOptions {
    /// The options from `(name, value)` pairs, each name at most once; unset ones take the defaults.
    pub fn parse<'a>(values: impl IntoIterator<Item = (&'a str, Value)>) -> Result<Self, OptionError> {
        let mut options = Self::default();
        for (name, value) in values {
            let option = OPTIONS.iter().find(|o| o.0 == name).map_or("", |o| o.0);
            options.set(name, value).map_err(at(option))?;
        }
        options.check()?;
        Ok(options)
    }

    fn set(&mut self, name: &str, value: Value) -> Result<(), FusionError> {
        let Some(&(name, _, _)) = OPTIONS.iter().find(|(n, _, _)| *n == name) else {
            let names: Vec<&str> = OPTIONS.iter().map(|o| o.0).collect();
            return Err(FusionError::invalid(format!("no fusion option '{name}' (options: {})", names.join(", "))));
        };
        match (name, value) {
            ("method", Value::None) => self.method = None,
            ("method", Value::Name(method)) => self.method = Some(method),
            ("norm", Value::None) => self.norm = None,
            ("norm", Value::Name(norm)) => self.norm = Some(norm.parse()?),
            ("k", Value::Number(k)) => self.params.k = k,
            ("phi", Value::Number(phi)) => self.params.phi = phi,
            ("sigma", Value::Number(sigma)) => self.params.sigma = sigma,
            ("gamma", Value::Number(gamma)) => self.params.gamma = gamma,
            ("weights", Value::None) => self.weights = None,
            ("weights", Value::Numbers(weights)) => self.weights = Some(weights),
            ("top_k", Value::None) => self.top_k = TopK::All,
            ("top_k", Value::Count(n)) => self.top_k = TopK::First(n),
            ("tie_break", Value::Name(tie_break)) => self.tie_break = tie_break.parse()?,
            ("duplicates", Value::Name(duplicates)) => self.duplicates = duplicates.parse()?,
            ("explain", Value::Flag(explain)) => self.explain = explain,
            (_, value) => {
                return Err(FusionError::invalid(format!("option {name} got a value of the wrong kind: {value:?}")))
            }
        }
        if !self.given.contains(&name) {
            self.given.push(name);
            self.given.sort_by_key(|g| OPTIONS.iter().position(|o| o.0 == *g));
        }
        Ok(())
    }

    /// Every check that needs no lists: names, ranges, and what the method reads.
    fn check(&self) -> Result<(), OptionError> {
        self.params.validate_each().map_err(|(option, error)| OptionError { option, error })?;
        if self.trained_method().is_some() {
            let weights = RrfParams { weights: self.weights.clone(), ..RrfParams::default() };
            return weights.validate(self.n_weights()).map_err(at("weights"));
        }
        let params = FuseParams { method: self.plain_method().map_err(at("method"))?, ..self.shared_params(None) };
        params.validate_weights(self.n_weights(), "list").map_err(at("weights"))?;
        // With the method unset, a norm is checked at the call: a trained model may read scores.
        if self.method.is_some() {
            params.validate_norm().map_err(at("norm"))?;
        }
        Ok(())
    }

    fn n_weights(&self) -> usize {
        self.weights.as_ref().map_or(0, Vec::len)
    }

    fn trained_method(&self) -> Option<TrainedMethod> {
        self.method.as_deref().and_then(|m| m.parse().ok())
    }

    /// The method: rrf when unset; a trained method's name is refused (it needs a model).
    fn plain_method(&self) -> Result<Method, FusionError> {
        Method::from_name(self.method.as_deref().unwrap_or("rrf"), self.params)
    }

    /// The options that every method reads alike, with `top_k` unset read as `unset_top_k`.
    fn shared_params(&self, unset_top_k: Option<usize>) -> FuseParams {
        FuseParams {
            norm: self.norm,
            weights: self.weights.clone(),
            top_k: match self.top_k {
                TopK::Unset => unset_top_k,
                TopK::All => None,
                TopK::First(n) => Some(n),
            },
            tie_break: self.tie_break,
            duplicates: self.duplicates,
            explain: self.explain,
            ..FuseParams::default()
        }
    }

    /// The names of the options given, in [`OPTIONS`] order.
    #[must_use]
    pub fn given(&self) -> &[&'static str] {
        &self.given
    }

    /// The value of option `name` (as given, or the default; `method` and `top_k` unset are None);
    /// None for a name that is no option.
    #[must_use]
    pub fn value(&self, name: &str) -> Option<Value> {
        let name_or_none = |n: Option<&str>| n.map_or(Value::None, |n| Value::Name(n.to_owned()));
        Some(match name {
            "method" => name_or_none(self.method.as_deref()),
            "norm" => name_or_none(self.norm.map(Norm::name)),
            "k" => Value::Number(self.params.k),
            "phi" => Value::Number(self.params.phi),
            "sigma" => Value::Number(self.params.sigma),
            "gamma" => Value::Number(self.params.gamma),
            "weights" => self.weights.clone().map_or(Value::None, Value::Numbers),
            "top_k" => match self.top_k {
                TopK::First(n) => Value::Count(n),
                TopK::Unset | TopK::All => Value::None,
            },
            "tie_break" => Value::Name(crate::names::name_of(TieBreak::BY_NAME, self.tie_break).to_owned()),
            "duplicates" => Value::Name(crate::names::name_of(Duplicates::BY_NAME, self.duplicates).to_owned()),
            "explain" => Value::Flag(self.explain),
            _ => return None,
        })
    }

    /// The method's name: as given, else rrf.
    #[must_use]
    pub fn method_name(&self) -> &str {
        self.method.as_deref().unwrap_or("rrf")
    }

    /// Whether the method fuses scores (so the lists must carry them).
    #[must_use]
    pub fn reads_scores(&self) -> bool {
        match self.trained_method() {
            Some(trained) => trained.reads_scores(),
            None => self.plain_method().is_ok_and(|m| !m.reads_ranks()),
        }
    }

    /// What a property of `fanfuse.FusionOptions` returns: option `name`'s value, but `method` is the
    /// method in effect (rrf when unset), and `reads_scores` / `takes_weights` say what it reads.
    #[must_use]
    pub fn property(&self, name: &str) -> Option<Value> {
        match name {
            "method" => Some(Value::Name(self.method_name().to_owned())),
            "reads_scores" => Some(Value::Flag(self.reads_scores())),
            "takes_weights" => Some(Value::Flag(self.takes_weights())),
            _ => self.value(name),
        }
    }

    /// Whether the method has per-list weights (trained methods weigh the runs by training).
    #[must_use]
    pub fn takes_weights(&self) -> bool {
        self.trained_method().is_none() && self.plain_method().is_ok_and(Method::takes_weights)
    }

    /// Refuses the first option given that `entry`, reading only `reads`, would ignore: given as a
    /// keyword, in the words of Python's `TypeError` for an unexpected keyword; held by an options
    /// value (`in_value`: `options=`), naming that value, which the caller gave no such keyword.
    pub fn check_read_by(&self, entry: &str, reads: impl Fn(&str) -> bool, in_value: bool) -> Result<(), FusionError> {
        let Some(name) = self.given.iter().find(|name| !reads(name)) else { return Ok(()) };
        Err(FusionError::wrong_type(if in_value {
            format!(
                "{entry}() does not read the fusion option '{name}' that options= holds: give it a \
                 FusionOptions made without {name}"
            )
        } else {
            format!("{entry}() got an unexpected keyword argument '{name}': it does not read that fusion option")
        }))
    }

    /// The options of a fusion in memory (`top_k` unset keeps every hit).
    pub fn fuse_params(&self) -> Result<FuseParams, OptionError> {
        self.plain_params(None)
    }

    /// The options with the plain method (rrf when unset): what is left to check is a norm given
    /// with the method unset (the rest was checked when built).
    fn plain_params(&self, unset_top_k: Option<usize>) -> Result<FuseParams, OptionError> {
        let params =
            FuseParams { method: self.plain_method().map_err(at("method"))?, ..self.shared_params(unset_top_k) };
        params.validate_norm().map_err(at("norm"))?;
        Ok(params)
    }

    /// The options of a run fusion (`top_k` unset keeps [`RUN_FILE_TOP_K`]): `method` (default rrf)
    /// or a trained `model`, which is then the method (a `method` given with it must name it).
    pub fn run_params(&self, model: Option<&Arc<TrainedModel>>) -> Result<FuseParams, OptionError> {
        let Some(model) = model else {
            if let Some(trained) = self.trained_method() {
                let name = trained.name();
                return Err(at("method")(FusionError::invalid(format!(
                    "method '{name}' is trained on qrels: pass model=fanfuse.train_fusion(runs, qrels, method='{name}')"
                ))));
            }
            return self.plain_params(Some(RUN_FILE_TOP_K));
        };
        let name = model.method.name();
        if let Some(other) = self.method.as_deref().filter(|&m| m != name) {
            return Err(at("method")(FusionError::invalid(format!(
                "method '{other}' given with a {name} model; leave method unset (the model is the method)"
            ))));
        }
        Ok(FuseParams { trained: Some(Arc::clone(model)), ..self.shared_params(Some(RUN_FILE_TOP_K)) })
    }
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
