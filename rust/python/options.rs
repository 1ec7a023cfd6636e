//! The keyword options of the fusion entry points, each read and checked in one place.

use std::ffi::CString;
use std::sync::Arc;

use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;

use super::args::{int_in, number, outer_items};
use super::{to_py_err, FusionError};
use crate::batch::{self, MAX_THREADS, THREADS_VARIABLE};
use crate::fusion;
use crate::rrf::{RrfParams, TieBreak};

/// The keyword options of the fusion entry points, by name. Each entry point builds it once from its
/// arguments (`FusionOptions { method, norm, k, .. }`), so options of one type (`phi`, `sigma`,
/// `gamma`) cannot trade places unnoticed, and an entry point that takes fewer fills the rest from
/// [`Default`], the defaults of the Python signatures.
pub(super) struct FusionOptions<'a, 'py> {
    pub method: &'a str,
    pub norm: Option<&'a str>,
    pub k: f64,
    pub weights: Option<&'a Bound<'py, PyAny>>,
    pub top_k: Option<usize>,
    pub tie_break: &'a str,
    pub duplicates: &'a str,
    pub explain: bool,
    pub phi: f64,
    pub sigma: f64,
    pub gamma: f64,
}

impl Default for FusionOptions<'_, '_> {
    fn default() -> Self {
        let fusion::MethodParams { k, phi, sigma, gamma } = fusion::MethodParams::default();
        Self {
            method: "rrf",
            norm: None,
            k,
            weights: None,
            top_k: None,
            tie_break: "rank",
            duplicates: "first",
            explain: false,
            phi,
            sigma,
            gamma,
        }
    }
}

impl FusionOptions<'_, '_> {
    /// The options of Reciprocal Rank Fusion (`k`, `weights`, `top_k`, `tie_break`), read; their
    /// values are checked by [`RrfParams::validate`].
    pub fn rrf_params(&self) -> PyResult<RrfParams> {
        let tie_break: TieBreak = self.tie_break.parse().map_err(to_py_err)?;
        let weights = self.weights.map(parse_weights).transpose()?;
        Ok(RrfParams { k: self.k, weights, top_k: self.top_k, tie_break })
    }

    /// Every option read and checked now, so that a bad one fails even for an empty batch.
    pub fn fuse_params(&self) -> PyResult<fusion::FuseParams> {
        let RrfParams { k, weights, top_k, tie_break } = self.rrf_params()?;
        let method_params = fusion::MethodParams { k, phi: self.phi, sigma: self.sigma, gamma: self.gamma };
        let params = fusion::FuseParams {
            method: fusion::Method::from_name(self.method, method_params).map_err(to_py_err)?,
            norm: self.norm.map(str::parse).transpose().map_err(to_py_err)?,
            weights,
            top_k,
            tie_break,
            duplicates: self.duplicates.parse().map_err(to_py_err)?,
            explain: self.explain,
            trained: None,
        };
        params.validate(params.weights.as_ref().map_or(0, Vec::len)).map_err(to_py_err)?;
        Ok(params)
    }
}

/// The options of a run fusion (`fuse_runs`, `fuse_files`): `method` (default rrf) or a trained
/// `model`, which is then the method (a `method` given with it must name it).
pub(super) fn run_fuse_params(
    options: &FusionOptions<'_, '_>,
    method: Option<&str>,
    model: Option<&super::trained::PyFusionModel>,
) -> PyResult<fusion::FuseParams> {
    let Some(model) = model else {
        if let Some(trained) = method.filter(|m| fusion::TrainedMethod::NAMES.contains(m)) {
            return Err(FusionError::new_err(format!(
                "method '{trained}' is trained on qrels: pass model=fanfuse.train_fusion(runs, qrels, method='{trained}')"
            )));
        }
        return FusionOptions { method: method.unwrap_or("rrf"), ..*options }.fuse_params();
    };
    let name = model.inner.method.name();
    if let Some(other) = method.filter(|&m| m != name) {
        return Err(FusionError::new_err(format!(
            "method '{other}' given with a {name} model; leave method unset (the model is the method)"
        )));
    }
    // The plain options are read as for rrf; the model then takes the norm (segfuse reads scores).
    let mut params = FusionOptions { method: "rrf", norm: None, ..*options }.fuse_params()?;
    params.norm = options.norm.map(str::parse).transpose().map_err(to_py_err)?;
    params.trained = Some(Arc::clone(&model.inner));
    Ok(params)
}

/// The one check that a batch's weights fit each query: one weight per list (`noun`: "list" or "run").
pub(super) fn check_query_weights(weights: Option<&[f64]>, q: usize, lists: usize, noun: &str) -> PyResult<()> {
    match weights {
        Some(w) if w.len() != lists => Err(FusionError::new_err(format!(
            "queries[{q}] has {lists} {noun}s but weights has {} entries; every query needs one weight per {noun}",
            w.len()
        ))),
        _ => Ok(()),
    }
}

pub(super) fn k_arg(value: &Bound<'_, PyAny>) -> PyResult<f64> {
    number(value, || "k".into())
}

pub(super) fn phi_arg(value: &Bound<'_, PyAny>) -> PyResult<f64> {
    number(value, || "phi".into())
}

pub(super) fn sigma_arg(value: &Bound<'_, PyAny>) -> PyResult<f64> {
    number(value, || "sigma".into())
}

pub(super) fn gamma_arg(value: &Bound<'_, PyAny>) -> PyResult<f64> {
    number(value, || "gamma".into())
}

/// The one check of `weights`: a sequence of numbers (their values are checked by the core).
fn parse_weights(weights: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    let items = outer_items(weights, "weights", "numbers (one per list)")?;
    items.iter().enumerate().map(|(i, w)| number(w, || format!("weights[{i}]"))).collect()
}

/// The one check of `top_k`: None (keep every hit) or an int >= 0; one beyond any list keeps all.
pub(super) fn top_k_arg(value: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if value.is_none() {
        return Ok(None);
    }
    let top_k: i128 = int_in(value, "top_k", "None or an int >= 0", 0..=i128::MAX)?;
    Ok(Some(usize::try_from(top_k).unwrap_or(usize::MAX)))
}

/// The one check of `threads`: None (`FANFUSE_NUM_THREADS`, else 1) or an int from 1 to 1024.
pub(super) fn threads_arg(value: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if value.is_none() {
        return Ok(None);
    }
    let accepted = format!("None ({THREADS_VARIABLE}, else 1) or an int from 1 to {MAX_THREADS}");
    int_in(value, "threads", &accepted, 1..=MAX_THREADS as i128).map(Some)
}

/// With `threads=None` the default comes from `FANFUSE_NUM_THREADS`: when that holds anything but
/// an int from 1 to 1024, warn (`RuntimeWarning`, naming the variable) that 1 thread is used.
pub(super) fn check_thread_variable(py: Python<'_>, threads: Option<usize>) -> PyResult<()> {
    if threads.is_some() {
        return Ok(());
    }
    match batch::threads_from_env() {
        Ok(_) => Ok(()),
        Err(message) => {
            // The value is escaped (`escape_debug`), so the message holds no NUL byte.
            let message = CString::new(message).unwrap_or_default();
            PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &message, 1)
        }
    }
}
