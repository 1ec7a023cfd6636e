//! The keyword options of the fusion entry points, each read and checked in one place.

use pyo3::prelude::*;

use super::args::{int_in, number, outer_items};
use super::to_py_err;
use crate::fusion;
use crate::rrf::{RrfParams, TieBreak};

pub(super) fn parse_params(
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<usize>,
    tie_break: &str,
) -> PyResult<RrfParams> {
    let tie_break: TieBreak = tie_break.parse().map_err(to_py_err)?;
    let weights = weights.map(parse_weights).transpose()?;
    Ok(RrfParams { k, weights, top_k, tie_break })
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
pub(super) fn parse_weights(weights: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
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

/// More threads than any machine this runs on has cores; a pool asked for millions would try to
/// start them all.
pub(super) const MAX_THREADS: usize = 1024;

/// The one check of `threads`: None (`FANFUSE_NUM_THREADS`, else 1) or an int from 1 to 1024.
pub(super) fn threads_arg(value: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if value.is_none() {
        return Ok(None);
    }
    let accepted = format!("None (FANFUSE_NUM_THREADS, else 1) or an int from 1 to {MAX_THREADS}");
    int_in(value, "threads", &accepted, 1..=MAX_THREADS as i128).map(Some)
}

/// The options of `fuse` and `fuse_batch`, parsed and checked.
#[allow(clippy::too_many_arguments)] // the keyword options of the Python signature
pub(super) fn fuse_params(
    method: &str,
    norm: Option<&str>,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<usize>,
    tie_break: &str,
    duplicates: &str,
    explain: bool,
    phi: f64,
    sigma: f64,
    gamma: f64,
) -> PyResult<fusion::FuseParams> {
    let rrf_params = parse_params(k, weights, top_k, tie_break)?;
    let method_params = fusion::MethodParams { k, phi, sigma, gamma };
    let params = fusion::FuseParams {
        method: fusion::Method::from_name(method, method_params).map_err(to_py_err)?,
        norm: norm.map(str::parse).transpose().map_err(to_py_err)?,
        weights: rrf_params.weights,
        top_k: rrf_params.top_k,
        tie_break: rrf_params.tie_break,
        duplicates: duplicates.parse().map_err(to_py_err)?,
        explain,
    };
    // Check the options now, so a bad one fails even for an empty batch.
    params.validate(params.weights.as_ref().map_or(0, Vec::len)).map_err(to_py_err)?;
    Ok(params)
}
