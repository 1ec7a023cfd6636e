//! The metrics, on one query. Definitions follow trec_eval's measure files where trec_eval has the
//! measure, ranx's metric functions elsewhere; docs/metrics.md lists both and where they differ.
//!
//! Every metric reads the same two things: the judgment of the document at each rank (`None` when
//! it is not judged), and all judgments of the query. A judgment >= the metric's relevance level is
//! relevant; below it (but >= 0) judged non-relevant; a negative judgment counts as not judged, as in
//! trec_eval (it marks a pooled document that was not assessed).

/// One query's judgments as the metrics read them.
#[derive(Debug, Clone, Copy)]
pub struct Judgments<'a> {
    /// The judgment of the document at each rank, best first (`None`: not judged).
    pub ranked: &'a [Option<i64>],
    /// Every judgment of the query, largest first.
    pub all: &'a [i64],
}

/// What a metric measures; [`Metric`] adds its cut-off and relevance level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// Relevant documents retrieved.
    Hits,
    /// 1 when a relevant document is retrieved, else 0 (trec_eval's `success`).
    HitRate,
    /// Relevant retrieved / k (k even when fewer were retrieved; without a cut, / retrieved).
    Precision,
    /// Relevant retrieved / relevant judged.
    Recall,
    /// Harmonic mean of precision and recall.
    F1,
    /// Precision at R, R = relevant judged (trec_eval's `Rprec`).
    RPrecision,
    /// Binary preference over judged documents only (trec_eval's `bpref`).
    Bpref,
    /// Rank-biased precision: (1 - p) * sum of gain_i * p^(i-1), gain = judgment (ranx's `rbp`).
    Rbp { persistence: f64 },
    /// 1 / rank of the first relevant document (`recip_rank`).
    Mrr,
    /// Sum of the precision at each relevant retrieved document / relevant judged.
    Map,
    /// Sum of gain / log2(rank + 1), gain = judgment (Järvelin and Kekäläinen).
    Dcg,
    /// Sum of (2^gain - 1) / log2(rank + 1) (Burges et al.).
    DcgBurges,
    /// Dcg / the Dcg of the ideal ranking of all judgments.
    Ndcg,
    /// DcgBurges / the DcgBurges of the ideal ranking.
    NdcgBurges,
}

/// A measure with its cut-off (`@k`) and relevance level (`-lN`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    pub measure: Measure,
    /// Only the first k retrieved documents count; `None`: all of them.
    pub cut: Option<usize>,
    /// Judgments >= this are relevant (default 1).
    pub rel_level: i64,
}

impl Metric {
    #[must_use]
    pub fn compute(&self, query: &Judgments<'_>) -> f64 {
        let level = self.rel_level;
        let is_relevant = |judgment: &Option<i64>| judgment.is_some_and(|j| j >= level);
        let retrieved = query.ranked.len();
        let top = &query.ranked[..self.cut.map_or(retrieved, |k| k.min(retrieved))];
        let hits = || top.iter().filter(|j| is_relevant(j)).count();
        // `all` is sorted largest first, so the relevant judgments are a prefix.
        let num_rel = query.all.iter().take_while(|&&j| j >= level).count();
        match self.measure {
            Measure::Hits => hits() as f64,
            Measure::HitRate => f64::from(u8::from(top.iter().any(is_relevant))),
            Measure::Precision => ratio(hits(), self.cut.unwrap_or(retrieved)),
            Measure::Recall => ratio(hits(), num_rel),
            Measure::F1 => {
                let (hits, depth) = (hits(), self.cut.unwrap_or(retrieved));
                if num_rel == 0 || depth == 0 || hits == 0 {
                    return 0.0;
                }
                let (precision, recall) = (hits as f64 / depth as f64, hits as f64 / num_rel as f64);
                // ranx's expression, so that the last bit agrees.
                2.0 * ((precision * recall) / (precision + recall))
            }
            Measure::RPrecision => ratio(query.ranked.iter().take(num_rel).filter(|j| is_relevant(j)).count(), num_rel),
            Measure::Bpref => bpref(query, level, num_rel),
            Measure::Rbp { persistence } => {
                let sum: f64 = top
                    .iter()
                    .zip(0_i32..)
                    .map(|(j, i)| gain(*j, level) as f64 * persistence.powi(i))
                    .fold(0.0, |sum, term| sum + term);
                (1.0 - persistence) * sum
            }
            Measure::Mrr => top.iter().position(is_relevant).map_or(0.0, |i| 1.0 / (i as f64 + 1.0)),
            Measure::Map => {
                let mut found = 0_usize;
                let mut sum = 0.0;
                for (i, judgment) in top.iter().enumerate() {
                    if is_relevant(judgment) {
                        found += 1;
                        sum += found as f64 / (i as f64 + 1.0);
                    }
                }
                if num_rel == 0 {
                    0.0
                } else {
                    sum / num_rel as f64
                }
            }
            Measure::Dcg => dcg(top.iter().map(|&j| gain(j, level)), Gain::Linear),
            Measure::DcgBurges => dcg(top.iter().map(|&j| gain(j, level)), Gain::Exponential),
            Measure::Ndcg => ndcg(top, query.all, self.cut, level, Gain::Linear),
            Measure::NdcgBurges => ndcg(top, query.all, self.cut, level, Gain::Exponential),
        }
    }
}

/// `part / whole`, 0 when `whole` is 0.
fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The gain of a judgment: its value when relevant at `level`, else 0.
fn gain(judgment: Option<i64>, level: i64) -> i64 {
    judgment.filter(|&j| j >= level && j > 0).unwrap_or(0)
}

#[derive(Clone, Copy)]
enum Gain {
    Linear,
    Exponential,
}

/// Discounted cumulative gain, discount log2(rank + 1), terms summed best rank first.
fn dcg(gains: impl Iterator<Item = i64>, kind: Gain) -> f64 {
    gains
        .enumerate()
        .filter(|&(_, g)| g > 0)
        .map(|(i, g)| {
            let g = match kind {
                Gain::Linear => g as f64,
                Gain::Exponential => (g as f64).exp2() - 1.0,
            };
            g / (i as f64 + 2.0).log2()
        })
        // Not `sum()`: an empty f64 sum is -0.0.
        .fold(0.0, |sum, term| sum + term)
}

/// Dcg over the ideal Dcg at the same cut: the ideal ranking lists every relevant judgment, largest
/// first, so plain ndcg's ideal has as many places as there are relevant judgments.
fn ndcg(top: &[Option<i64>], all: &[i64], cut: Option<usize>, level: i64, kind: Gain) -> f64 {
    let ideal = dcg(all.iter().take(cut.unwrap_or(usize::MAX)).map(|&j| gain(Some(j), level)), kind);
    if ideal.is_infinite() {
        // An ideal beyond a float (exponential gains) would make any run's finite Dcg a silent 0.
        return f64::NAN;
    }
    if ideal > 0.0 {
        dcg(top.iter().map(|&j| gain(j, level)), kind) / ideal
    } else {
        0.0
    }
}

/// trec_eval's bpref: each relevant retrieved document scores 1 minus the share of judged
/// non-relevant documents above it (at most R of them, over min(R, judged non-relevant)); unjudged
/// documents are skipped; the sum is divided by R. A relevant document above every judged
/// non-relevant one scores 1, also when no document is judged non-relevant (ranx gives NaN there).
fn bpref(query: &Judgments<'_>, level: i64, num_rel: usize) -> f64 {
    if num_rel == 0 {
        return 0.0;
    }
    let num_nonrel = query.all.iter().filter(|&&j| (0..level).contains(&j)).count();
    let mut nonrel_above = 0_usize;
    let mut sum = 0.0;
    for judgment in query.ranked {
        match *judgment {
            Some(j) if j >= level => {
                sum += if nonrel_above > 0 {
                    1.0 - nonrel_above.min(num_rel) as f64 / num_rel.min(num_nonrel) as f64
                } else {
                    1.0
                };
            }
            Some(j) if j >= 0 => nonrel_above += 1,
            _ => {}
        }
    }
    sum / num_rel as f64
}

#[cfg(test)]
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    fn value(name: &str, ranked: &[Option<i64>], all: &[i64]) -> f64 {
        let metric: Metric = name.parse().unwrap();
        let mut all = all.to_vec();
        all.sort_unstable_by(|a, b| b.cmp(a));
        metric.compute(&Judgments { ranked, all: &all })
    }

    #[test]
    fn hand_computed_values() {
        let ranked = [Some(0), Some(2), None, Some(1)];
        let all = [2, 1, 1, 0];
        assert_eq!(value("recall@2", &ranked, &all), 1.0 / 3.0);
        assert_eq!(value("precision@5", &ranked, &all), 2.0 / 5.0);
        assert_eq!(value("precision", &ranked, &all), 2.0 / 4.0);
        assert_eq!(value("hits@2", &ranked, &all), 1.0);
        assert_eq!(value("hit_rate@1", &ranked, &all), 0.0);
        assert_eq!(value("mrr", &ranked, &all), 0.5);
        assert_eq!(value("mrr@1", &ranked, &all), 0.0);
        assert_eq!(value("map", &ranked, &all), (1.0 / 2.0 + 2.0 / 4.0) / 3.0);
        assert_eq!(value("map@2", &ranked, &all), (1.0 / 2.0) / 3.0);
        assert_eq!(value("r-precision", &ranked, &all), 1.0 / 3.0);
        let dcg = 2.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let ideal = 2.0 + 1.0 / 3f64.log2() + 1.0 / 2.0;
        assert_eq!(value("ndcg@10", &ranked, &all), dcg / ideal);
        assert_eq!(value("dcg_burges", &ranked, &all), 3.0 / 3f64.log2() + 1.0 / 5f64.log2());
        assert_eq!(value("rbp.5", &ranked, &all), 0.5 * (2.0 * 0.5 + 1.0 * 0.125));
    }

    #[test]
    fn relevance_level_makes_lower_judgments_non_relevant() {
        let ranked = [Some(1), Some(2)];
        let all = [2, 1];
        assert_eq!(value("mrr-l2", &ranked, &all), 0.5);
        assert_eq!(value("ndcg-l2", &ranked, &all), (2.0 / 3f64.log2()) / 2.0);
        // The grade-1 document is judged non-relevant at level 2: it sits above the relevant one.
        assert_eq!(value("bpref-l2", &ranked, &all), 0.0);
    }

    #[test]
    fn bpref_skips_unjudged_and_negative_judgments() {
        let ranked = [None, Some(-1), Some(0), Some(1), Some(0), Some(1)];
        let all = [1, 1, 0, 0, 0, -1];
        // R = 2, two judged non-relevant retrieved; 1 above the first relevant, 2 above the second.
        let (first, second) = (1.0 - 1.0 / 2.0, 1.0 - 2.0 / 2.0);
        assert_eq!(value("bpref", &ranked, &all), f64::midpoint(first, second));
        assert_eq!(value("bpref", &[Some(1)], &[1]), 1.0);
    }
}
