//! Evaluation of a run against qrels. The run is read in its rank order: trec_eval's (score
//! descending, ties by docid descending) for a run read by score, the default; the metrics and their names are in [`metrics`] and [`names`], their
//! conventions in docs/metrics.md.
//!
//! Which queries count: those in both the run and the qrels (pytrec_eval's rule). A run query with
//! no judgments is skipped; a judged query the run lacks is not scored (trec_eval -c would score it 0).

mod distributions;
mod metrics;
mod names;
pub mod significance;
pub mod tukey;
pub mod wilcoxon;

use std::collections::HashSet;

pub use metrics::{Judgments, Measure, Metric};
pub use names::{names as metric_names, trec_eval_names as trec_eval_metric_names};

use crate::error::FusionError;
use crate::runs::read::qrels::Qrels;
use crate::runs::Run;

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

/// The metrics a caller named, in order: at least one, each a known name.
pub fn parse_metrics(names: &[String]) -> Result<Vec<Metric>, FusionError> {
    if names.is_empty() {
        return Err(FusionError::setting("metrics is empty: name at least one, such as ndcg@10"));
    }
    let metrics: Vec<Metric> = names.iter().map(|name| name.parse()).collect::<Result<_, _>>()?;
    // A metric given twice would count twice in the family a multiple-comparison correction adjusts.
    for (i, metric) in metrics.iter().enumerate() {
        if let Some(j) = metrics[..i].iter().position(|earlier| earlier == metric) {
            let (first, again) = (&names[j], &names[i]);
            let said = if first == again {
                format!("{first:?} twice")
            } else {
                format!("{first:?} and {again:?}, one metric")
            };
            return Err(FusionError::setting(format!("metrics names {said}: give each metric once")));
        }
    }
    Ok(metrics)
}

/// Evaluates every query of `run` that has judgments, in run order.
///
/// # Errors
/// [`FusionError::Interrupted`] (see `crate::interrupt`), and a metric that leaves the float range
/// for some query (see [`not_finite`]).
pub fn evaluate(run: &Run, qrels: &Qrels, metrics: &[Metric]) -> Result<Evaluation, FusionError> {
    let mut qids = Vec::new();
    let mut values = vec![Vec::new(); metrics.len()];
    let mut seen: HashSet<&str> = HashSet::new();
    // Reused across queries: one allocation each for the whole run.
    let (mut ranked, mut all) = (Vec::new(), Vec::new());
    let mut ticker = crate::interrupt::Ticker::new();
    for query in &run.queries {
        let Some(judged) = qrels.judged.get(&query.qid) else { continue };
        ticker.tick(query.hits.len() + judged.len())?;
        if !seen.insert(&query.qid) {
            continue;
        }
        // A run holds each query's hits in its rank order (`RankFrom`): by default trec_eval's, score
        // descending and docid descending; else the rank column's or the file's, as the reader was
        // told, which an evaluation sorting by score again would undo (and, without scores, replace
        // by docid order).
        ranked.clear();
        ranked.extend(query.hits.iter().map(|h| judged.get(&*h.docid).copied()));
        all.clear();
        all.extend(judged.values().copied());
        all.sort_unstable_by(|a, b| b.cmp(a));
        let judgments = Judgments { ranked: &ranked, all: &all };
        for (m, metric) in metrics.iter().enumerate() {
            let value = metric.compute(&judgments);
            if !value.is_finite() {
                return Err(not_finite(metric, &query.qid, value, all.first().copied().unwrap_or(0)));
            }
            values[m].push(value);
        }
        qids.push(query.qid.clone());
    }
    Ok(Evaluation { qids, values })
}

/// A query's score of `metric` is not a number: only an exponential gain, 2^grade - 1, leaves the
/// float range (a grade of 1024 alone; a few near 1023 in a sum, the ideal ranking's included),
/// since every other metric is bounded by its counts or by grades that are i64. Refused rather than
/// averaged into a NaN mean that JSON cannot hold and a significance test cannot read.
fn not_finite(metric: &Metric, qid: &str, value: f64, largest_grade: i64) -> FusionError {
    let name = metric.name();
    FusionError::invalid(format!(
        "{name} of query {qid:?} is {value}: its gains 2^grade - 1 (the largest grade is {largest_grade}) \
         sum beyond what a float holds; use smaller grades, or {} (gain = grade)",
        name.replace("_burges", "")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_named_at_least_once_and_known() {
        let parse = |names: &[&str]| parse_metrics(&names.iter().map(|&n| n.to_owned()).collect::<Vec<_>>());
        assert_eq!(parse(&["ndcg@10", "recall@5"]).unwrap().len(), 2);
        assert!(parse(&[]).unwrap_err().to_string().starts_with("metrics is empty"));
        assert!(parse(&["ndcg@10", "nope"]).is_err());
    }

    #[test]
    fn a_metric_named_twice_is_refused_under_either_name() {
        let refusal = |names: &[&str]| {
            parse_metrics(&names.iter().map(|&n| n.to_owned()).collect::<Vec<_>>()).unwrap_err().to_string()
        };
        assert_eq!(refusal(&["map@10", "P@5", "map@10"]), "metrics names \"map@10\" twice: give each metric once");
        assert_eq!(
            refusal(&["ndcg_cut_10", "ndcg@10"]),
            "metrics names \"ndcg_cut_10\" and \"ndcg@10\", one metric: give each metric once"
        );
        assert!(refusal(&["map@10", "MAP@10"]).contains("one metric"));
    }

    #[test]
    fn a_gain_beyond_the_float_range_is_refused_naming_metric_and_query() {
        let (qids, docids) = (["q1".to_owned(), "q1".to_owned()], ["d1".to_owned(), "d2".to_owned()]);
        let run = Run::from_columns("r.trec", &qids, &docids, &[2.0, 1.0], crate::runs::RankFrom::Score).unwrap();
        let mut qrels = Qrels::default();
        qrels.judge("q1", "d1", 1024).unwrap();
        qrels.judge("q1", "d2", 1).unwrap();
        for name in ["ndcg_burges@10", "dcg_burges", "ndcg_burges"] {
            let metrics = parse_metrics(&[name.to_owned()]).unwrap();
            let refusal = evaluate(&run, &qrels, &metrics).unwrap_err().to_string();
            assert!(refusal.starts_with(&format!("{name} of query \"q1\" is ")), "{refusal}");
            assert!(refusal.contains("(the largest grade is 1024)"), "{refusal}");
        }
        // A document of that grade the run does not retrieve: the ideal ranking alone overflows.
        let mut unretrieved = Qrels::default();
        unretrieved.judge("q1", "d1", 1).unwrap();
        unretrieved.judge("q1", "elsewhere", 1024).unwrap();
        let metrics = parse_metrics(&["ndcg_burges@10".to_owned()]).unwrap();
        let refusal = evaluate(&run, &unretrieved, &metrics).unwrap_err().to_string();
        assert!(refusal.starts_with("ndcg_burges@10 of query \"q1\" is NaN"), "{refusal}");
        // The linear gain of the same grades is a number.
        let metrics = parse_metrics(&["ndcg@10".to_owned(), "dcg".to_owned()]).unwrap();
        assert!(evaluate(&run, &qrels, &metrics).is_ok());
    }
}
