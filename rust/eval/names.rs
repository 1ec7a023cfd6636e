//! Metric names: ranx's (`ndcg@10`, `precision@5-l2`, `rbp.95`) and trec_eval's (`ndcg_cut_10`,
//! `P_5`, `recip_rank`, ...), case-insensitive. The tables here are the one list of accepted names:
//! the parser, its error message and `fanfuse._core.METRICS` (the CLI help, the tests) read them.

use std::str::FromStr;

use super::metrics::{Measure, Metric};
use crate::error::FusionError;

/// ranx's metric names, in ranx's order, and their measures. Each takes `@k` (except r-precision and
/// bpref, which have no cut-off) and `-lN`; rbp also takes its persistence, `rbp.95` for p = 0.95.
const MEASURES: &[(&str, Measure)] = &[
    ("hits", Measure::Hits),
    ("hit_rate", Measure::HitRate),
    ("precision", Measure::Precision),
    ("recall", Measure::Recall),
    ("f1", Measure::F1),
    ("r-precision", Measure::RPrecision),
    ("bpref", Measure::Bpref),
    ("rbp", Measure::Rbp { persistence: 0.0 }),
    ("mrr", Measure::Mrr),
    ("map", Measure::Map),
    ("dcg", Measure::Dcg),
    ("dcg_burges", Measure::DcgBurges),
    ("ndcg", Measure::Ndcg),
    ("ndcg_burges", Measure::NdcgBurges),
];

/// ranx's metric names, in ranx's order.
#[must_use]
pub fn names() -> impl ExactSizeIterator<Item = &'static str> {
    MEASURES.iter().map(|&(name, _)| name)
}

/// trec_eval's names of the same measures: (name, ranx's name). A trailing `_` takes the cut-off
/// (`ndcg_cut_10`); `P` and `success` need one, also as `P@5`, `success@5`.
const TREC_EVAL_NAMES: &[(&str, &str)] = &[
    ("P_", "precision"),
    ("recall_", "recall"),
    ("success_", "hit_rate"),
    ("map_cut_", "map"),
    ("ndcg_cut_", "ndcg"),
    ("recip_rank", "mrr"),
    ("Rprec", "r-precision"),
    ("set_P", "precision"),
    ("set_recall", "recall"),
    ("set_F", "f1"),
];

/// trec_eval's names as patterns, K standing for the cut-off: `P_K`, `recip_rank`, ...
#[must_use]
pub fn trec_eval_names() -> impl ExactSizeIterator<Item = String> {
    TREC_EVAL_NAMES.iter().map(|(name, _)| if name.ends_with('_') { format!("{name}K") } else { (*name).to_owned() })
}

fn measure(name: &str) -> Option<Measure> {
    MEASURES.iter().find(|&&(n, _)| n == name).map(|&(_, measure)| measure)
}

impl FromStr for Metric {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // No name holds a comma: this is a list where one name goes (`eval --metrics` splits its own).
        if s.contains(',') {
            return Err(bad_metric(s, "one metric name goes here, not a comma-separated list"));
        }
        let lower = s.trim().to_ascii_lowercase();
        let (body, rel_level) = match lower.rsplit_once("-l") {
            Some((body, level)) if !level.is_empty() && level.bytes().all(|b| b.is_ascii_digit()) => {
                (body, level.parse::<i64>().map_err(|_| bad_metric(s, "the relevance level is too large"))?)
            }
            // No measure's name holds "-l": what follows it is a relevance level, however written.
            Some(_) => {
                return Err(bad_metric(s, "the relevance level after -l must be an integer >= 0, e.g. ndcg@10-l2"))
            }
            None => (lower.as_str(), 1),
        };
        let (measure, cut) = parse_body(s, body)?;
        if cut.is_some() && matches!(measure, Measure::RPrecision | Measure::Bpref) {
            return Err(bad_metric(s, "r-precision and bpref take no @k (ranx ignores one; fanfuse refuses it)"));
        }
        Ok(Self { measure, cut, rel_level })
    }
}

/// The measure and cut-off of a name without its `-lN`.
fn parse_body(original: &str, body: &str) -> Result<(Measure, Option<usize>), FusionError> {
    if let Some(persistence) = body.strip_prefix("rbp") {
        return parse_rbp(original, persistence);
    }
    let (name, cut) = match body.split_once('@') {
        Some((name, cut)) => (name, Some(parse_cut(original, cut)?)),
        None => (body, None),
    };
    let known = |ranx: &str| measure(ranx).expect("the tables name ranx's measures");
    if let Some(measure) = measure(name) {
        return Ok((measure, cut));
    }
    match (name, cut) {
        ("p", Some(_)) => return Ok((known("precision"), cut)),
        ("success", Some(_)) => return Ok((known("hit_rate"), cut)),
        (_, None) => {
            for &(trec, ranx) in TREC_EVAL_NAMES {
                let trec = trec.to_ascii_lowercase();
                if trec.ends_with('_') {
                    if let Some(k) = name.strip_prefix(trec.as_str()) {
                        return Ok((known(ranx), Some(parse_cut(original, k)?)));
                    }
                } else if name == trec {
                    return Ok((known(ranx), None));
                }
            }
        }
        _ => {}
    }
    Err(bad_metric(original, "unknown name"))
}

/// `rbp.95` (p = 0.95; ranx reads the digits after the point), ranx's `rbp@95` (the same), and
/// `rbp.95@10` (cut at 10).
fn parse_rbp(original: &str, rest: &str) -> Result<(Measure, Option<usize>), FusionError> {
    let (digits, cut) = if let Some(rest) = rest.strip_prefix('.') {
        match rest.split_once('@') {
            Some((digits, cut)) => (digits, Some(parse_cut(original, cut)?)),
            None => (rest, None),
        }
    } else if let Some(digits) = rest.strip_prefix('@') {
        (digits, None)
    } else {
        return Err(bad_metric(original, "rbp needs its persistence, e.g. rbp.95 for p = 0.95"));
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_metric(original, "rbp's persistence is digits after a point, e.g. rbp.95 for p = 0.95"));
    }
    let persistence = format!("0.{digits}").parse::<f64>().expect("0. followed by digits is a float");
    // p = 0 would be precision at 1 under another name; digits a float cannot tell from 1 make p = 1,
    // whose 1 - p weighs every query's value to 0.
    if !(persistence > 0.0 && persistence < 1.0) {
        return Err(bad_metric(
            original,
            "rbp's persistence must be above 0 and below 1 (as a float), e.g. rbp.95 for p = 0.95",
        ));
    }
    Ok((Measure::Rbp { persistence }, cut))
}

fn parse_cut(original: &str, cut: &str) -> Result<usize, FusionError> {
    cut.parse::<usize>()
        .ok()
        .filter(|&k| k > 0 && cut.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| bad_metric(original, "the cut-off after @ (or _) must be an integer >= 1"))
}

fn bad_metric(name: &str, why: &str) -> FusionError {
    FusionError::setting(format!(
        "metric '{name}': {why}; accepted: NAME, NAME@K, NAME-lN or NAME@K-lN (judgments below N count as \
         non-relevant) with NAME one of {}, rbp as rbp.P (persistence 0.P); trec_eval's {}, P@K, success@K \
         (any case)",
        names().collect::<Vec<_>>().join(", "),
        trec_eval_names().collect::<Vec<_>>().join(", ")
    ))
}

impl Metric {
    /// The ranx name of the metric, e.g. `ndcg@10-l2` or `rbp.95`.
    #[must_use]
    pub fn name(&self) -> String {
        let base = match self.measure {
            Measure::Rbp { persistence } => {
                let digits = persistence.to_string();
                format!("rbp.{}", digits.strip_prefix("0.").unwrap_or("0"))
            }
            other => MEASURES
                .iter()
                .find(|(_, m)| std::mem::discriminant(m) == std::mem::discriminant(&other))
                .map_or_else(String::new, |&(name, _)| name.to_owned()),
        };
        let cut = self.cut.map(|k| format!("@{k}")).unwrap_or_default();
        let level = if self.rel_level == 1 { String::new() } else { format!("-l{}", self.rel_level) };
        format!("{base}{cut}{level}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str) -> Metric {
        name.parse().unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    #[test]
    fn ranx_and_trec_eval_names_agree() {
        for (ranx, trec) in [
            ("ndcg@10", "ndcg_cut_10"),
            ("precision@5", "P_5"),
            ("precision@5", "p@5"),
            ("recall@20", "recall_20"),
            ("map@100", "map_cut_100"),
            ("hit_rate@3", "success_3"),
            ("hit_rate@3", "success@3"),
            ("mrr", "recip_rank"),
            ("r-precision", "Rprec"),
            ("precision", "set_P"),
            ("f1", "set_F"),
        ] {
            assert_eq!(parse(ranx), parse(trec), "{ranx} vs {trec}");
        }
    }

    #[test]
    fn suffixes() {
        let m = parse("precision@10-l2");
        assert_eq!((m.measure, m.cut, m.rel_level), (Measure::Precision, Some(10), 2));
        assert_eq!(parse("rbp.95").measure, Measure::Rbp { persistence: 0.95 });
        assert_eq!(parse("rbp@95"), parse("rbp.95"));
        assert_eq!(parse("rbp.8@10-l2").cut, Some(10));
        assert_eq!(parse("r-precision-l3").rel_level, 3);
    }

    #[test]
    fn names_round_trip() {
        for name in ["ndcg@10-l2", "rbp.95", "rbp.8@10", "bpref", "r-precision", "hits@3", "mrr@10", "dcg_burges@5"] {
            assert_eq!(parse(name).name(), name);
            assert_eq!(parse(&parse(name).name()), parse(name));
        }
    }

    #[test]
    fn rejected_names_say_why() {
        for (name, why) in [
            ("bpref@10", "take no @k"),
            ("r-precision@5", "take no @k"),
            ("ndcg@0", "integer >= 1"),
            ("ndcg@x", "integer >= 1"),
            ("P", "unknown name"),
            ("success", "unknown name"),
            ("rbp", "persistence"),
            ("rbp.x", "persistence"),
            ("rbp.0", "above 0 and below 1"),
            ("rbp.000", "above 0 and below 1"),
            ("rbp.99999999999999999", "above 0 and below 1"),
            ("ndcg@10-l-1", "relevance level after -l"),
            ("ndcg@10-l", "relevance level after -l"),
            ("precision-lx", "relevance level after -l"),
            ("ndcg_cut_", "integer >= 1"),
            ("nope", "accepted: NAME"),
        ] {
            let error = name.parse::<Metric>().unwrap_err().to_string();
            assert!(error.contains(why), "{name}: {error}");
        }
    }
}
