//! Evaluation of a run against qrels with trec_eval's definitions (as pytrec_eval computes them):
//! the run is read in trec_eval's order (score descending, ties by docid descending), a document is
//! relevant when its judgment is >= 1, and nDCG uses the judgment value as the gain.
//!
//! Which queries count: those in both the run and the qrels (pytrec_eval's rule). A run query with
//! no judgments is skipped; a judged query the run lacks is not scored (trec_eval -c would score it 0).

mod metrics;
pub mod significance;

use std::collections::HashSet;
use std::str::FromStr;

pub use metrics::Metric;

use crate::error::FusionError;
use crate::runs::qrels::Qrels;
use crate::runs::{trec_eval_order, Run};

impl FromStr for Metric {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let cut = |prefix: &str| -> Option<Result<usize, FusionError>> {
            let rest = lower.strip_prefix(prefix)?;
            Some(rest.parse::<usize>().ok().filter(|&k| k > 0).ok_or_else(|| bad_metric(s)))
        };
        let parsed = match lower.as_str() {
            "mrr" | "recip_rank" => Self::Mrr,
            "map" => Self::Map,
            "ndcg" => Self::Ndcg(None),
            _ => {
                if let Some(k) = cut("recall@").or_else(|| cut("recall_")) {
                    Self::Recall(k?)
                } else if let Some(k) = cut("precision@").or_else(|| cut("p@")).or_else(|| cut("p_")) {
                    Self::Precision(k?)
                } else if let Some(k) = cut("ndcg@").or_else(|| cut("ndcg_cut_")) {
                    Self::Ndcg(Some(k?))
                } else {
                    return Err(bad_metric(s));
                }
            }
        };
        Ok(parsed)
    }
}

fn bad_metric(s: &str) -> FusionError {
    FusionError::invalid(format!(
        "unknown metric '{s}'; accepted: recall@K, precision@K (P@K), ndcg@K, ndcg, mrr (recip_rank), map"
    ))
}

/// Per-query values: `values[m][q]` is metric `m` on `qids[q]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub qids: Vec<String>,
    pub values: Vec<Vec<f64>>,
}

impl Evaluation {
    /// Mean of metric `m` over the evaluated queries (0 when there are none).
    #[must_use]
    pub fn mean(&self, m: usize) -> f64 {
        let v = &self.values[m];
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    }
}

/// Evaluates every query of `run` that has judgments, in run order.
#[must_use]
pub fn evaluate(run: &Run, qrels: &Qrels, metrics: &[Metric]) -> Evaluation {
    let mut qids = Vec::new();
    let mut values = vec![Vec::new(); metrics.len()];
    let mut seen: HashSet<&str> = HashSet::new();
    for query in &run.queries {
        let Some(judged) = qrels.judged.get(&query.qid) else { continue };
        if !seen.insert(&query.qid) {
            continue;
        }
        let mut order: Vec<&crate::runs::Hit> = query.hits.iter().collect();
        order.sort_unstable_by(|a, b| trec_eval_order(a, b));
        let rels: Vec<i64> = order.iter().map(|h| judged.get(&*h.docid).copied().unwrap_or(0)).collect();
        let judged_rels: Vec<i64> = judged.values().copied().collect();
        for (m, metric) in metrics.iter().enumerate() {
            values[m].push(metric.compute(&rels, &judged_rels));
        }
        qids.push(query.qid.clone());
    }
    Evaluation { qids, values }
}
