//! The metrics, on one query: `rels[i]` is the judgment of the document at rank i + 1 (0 when not
//! judged), `judged` every judgment of the query. Definitions follow trec_eval's measure files.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// `recall_k`: relevant in the top k / relevant judged.
    Recall(usize),
    /// `P_k`: relevant in the top k / k (k even when fewer were retrieved).
    Precision(usize),
    /// `ndcg_cut_k` (or `ndcg` over the whole ranking when None), gains = judgment values.
    Ndcg(Option<usize>),
    /// `recip_rank`: 1 / rank of the first relevant document.
    Mrr,
    /// `map`: mean of the precision at each relevant retrieved document, over relevant judged.
    Map,
}

impl Metric {
    /// The name in tables and JSON, e.g. `recall@5`.
    #[must_use]
    pub fn name(&self) -> String {
        match self {
            Self::Recall(k) => format!("recall@{k}"),
            Self::Precision(k) => format!("precision@{k}"),
            Self::Ndcg(Some(k)) => format!("ndcg@{k}"),
            Self::Ndcg(None) => "ndcg".into(),
            Self::Mrr => "mrr".into(),
            Self::Map => "map".into(),
        }
    }

    #[must_use]
    pub fn compute(&self, rels: &[i64], judged: &[i64]) -> f64 {
        let num_rel = judged.iter().filter(|&&r| r >= 1).count();
        let relevant_in = |k: usize| rels.iter().take(k).filter(|&&r| r >= 1).count();
        match *self {
            Self::Recall(k) => {
                if num_rel == 0 {
                    0.0
                } else {
                    relevant_in(k) as f64 / num_rel as f64
                }
            }
            Self::Precision(k) => relevant_in(k) as f64 / k as f64,
            Self::Ndcg(cut) => {
                let k = cut.unwrap_or(usize::MAX);
                let gained = dcg(rels.iter().copied().take(k));
                let mut ideal: Vec<i64> = judged.to_vec();
                ideal.sort_unstable_by(|a, b| b.cmp(a));
                // Plain ndcg's ideal ranking has as many places as there are judged documents.
                let ideal_dcg = dcg(ideal.into_iter().take(k));
                if ideal_dcg > 0.0 {
                    gained / ideal_dcg
                } else {
                    0.0
                }
            }
            Self::Mrr => rels.iter().position(|&r| r >= 1).map_or(0.0, |i| 1.0 / (i as f64 + 1.0)),
            Self::Map => {
                if num_rel == 0 {
                    return 0.0;
                }
                let mut found = 0_usize;
                let mut sum = 0.0;
                for (i, &r) in rels.iter().enumerate() {
                    if r >= 1 {
                        found += 1;
                        sum += found as f64 / (i as f64 + 1.0);
                    }
                }
                sum / num_rel as f64
            }
        }
    }
}

/// Discounted cumulative gain with trec_eval's discount log2(rank + 1); negative gains count as 0.
fn dcg(gains: impl Iterator<Item = i64>) -> f64 {
    gains.enumerate().filter(|&(_, g)| g > 0).map(|(i, g)| g as f64 / (i as f64 + 2.0).log2()).sum()
}

#[cfg(test)]
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_values() {
        let rels = [0, 2, 0, 1];
        let judged = [2, 1, 1, 0];
        assert_eq!(Metric::Recall(2).compute(&rels, &judged), 1.0 / 3.0);
        assert_eq!(Metric::Precision(5).compute(&rels, &judged), 2.0 / 5.0);
        assert_eq!(Metric::Mrr.compute(&rels, &judged), 0.5);
        assert_eq!(Metric::Map.compute(&rels, &judged), (1.0 / 2.0 + 2.0 / 4.0) / 3.0);
        let dcg = 2.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let ideal = 2.0 + 1.0 / 3f64.log2() + 1.0 / 2.0;
        assert_eq!(Metric::Ndcg(Some(10)).compute(&rels, &judged), dcg / ideal);
    }
}
