//! Training the fusion methods of [`crate::fusion::TrainedModel`] from runs and qrels, as ranx's
//! `*_train` functions do: every estimate reads each run's hit list per training query (1 where the
//! document at that position is judged relevant, >= 1, else 0), and averages over queries in the
//! order ranx visits them (query ids sorted), so that the tables are ranx's bit for bit.
//!
//! Training queries: the judged queries (every query of the qrels). A run that lacks one has an
//! empty hit list for it (ranx requires every run to hold exactly the qrels' queries; queries a run
//! has beyond the qrels are not read); a run that holds none of them is refused.

use std::collections::HashMap;
use std::io::Write;

use crate::error::FusionError;
use crate::eval::{Judgments, Measure, Metric};
use crate::fusion::{TrainedMethod, TrainedModel, BAYESFUSE_CUTOFFS, SEGFUSE_BOUNDS};
use crate::runs::read::qrels::Qrels;
use crate::runs::{Query, Run};

/// The sizes a method takes: probfuse's segment count, slidefuse's half-window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrainSizes {
    pub segments: Option<usize>,
    pub window: Option<usize>,
}

/// probfuse's segment count and slidefuse's half-window when not given.
pub const DEFAULT_SEGMENTS: usize = 25;
pub const DEFAULT_WINDOW: usize = 5;

/// The method a caller asks to train, by name: a setting of the training (a model file's method is
/// the file's, read by `crate::fusion::model_json`).
pub fn method_named(name: &str) -> Result<TrainedMethod, FusionError> {
    name.parse().map_err(FusionError::of_setting)
}

/// Trains `method` on `runs` (in the order they will be fused) and `qrels`.
pub fn train(
    method: TrainedMethod,
    runs: &[impl std::ops::Deref<Target = Run>],
    qrels: &Qrels,
    sizes: TrainSizes,
) -> Result<TrainedModel, FusionError> {
    if runs.is_empty() {
        return Err(FusionError::invalid("runs is empty: train on the runs the model will fuse"));
    }
    let mut queries: Vec<&str> = qrels.judged.keys().map(String::as_str).collect();
    if queries.is_empty() {
        return Err(FusionError::invalid("the qrels judge no query: training needs relevance judgments"));
    }
    queries.sort_unstable();
    let segments = (method == TrainedMethod::ProbFuse).then(|| sizes.segments.unwrap_or(DEFAULT_SEGMENTS));
    let window = (method == TrainedMethod::SlideFuse).then(|| sizes.window.unwrap_or(DEFAULT_WINDOW));
    for (what, given, used) in [("segments", sizes.segments, segments), ("window", sizes.window, window)] {
        if given.is_some() && used.is_none() {
            let owner = if what == "segments" { "probfuse" } else { "slidefuse" };
            return Err(FusionError::setting(format!("{what} applies to {owner} only, not {}", method.name())));
        }
    }
    let tables = runs
        .iter()
        .map(|run| {
            crate::interrupt::checkpoint()?;
            // Its table would be all zeros: every document it ranks would fuse to nothing.
            if !run.queries.iter().any(|query| qrels.judged.contains_key(query.qid.as_str())) {
                return Err(FusionError::invalid(format!(
                    "{}: none of its queries is in the qrels ({} judged), so there is nothing to train on; check \
                     that the runs and the qrels use the same query ids (and that this is the right qrels file)",
                    run.name,
                    queries.len()
                )));
            }
            let judged = judgments(run, qrels, &queries);
            Ok(match method {
                TrainedMethod::ProbFuse => probfuse(&hit_lists(&judged), segments.unwrap_or(DEFAULT_SEGMENTS)),
                TrainedMethod::SegFuse => segfuse(&hit_lists(&judged)),
                TrainedMethod::SlideFuse | TrainedMethod::PosFuse => position_probs(&hit_lists(&judged)),
                TrainedMethod::BayesFuse => bayesfuse(&hit_lists(&judged)),
                TrainedMethod::MapFuse => vec![mean_average_precision(&judged, qrels, &queries)],
            })
        })
        .collect::<Result<Vec<_>, FusionError>>()?;
    let model = TrainedModel { method, tables, segments, window };
    model.validate()?;
    Ok(model)
}

/// Per training query, the judgment of each hit of `run` in rank order (`None`: not judged).
fn judgments(run: &Run, qrels: &Qrels, queries: &[&str]) -> Vec<Vec<Option<i64>>> {
    let by_qid: HashMap<&str, &Query> = run.queries.iter().rev().map(|q| (q.qid.as_str(), q)).collect();
    queries
        .iter()
        .map(|qid| {
            let judged = &qrels.judged[*qid];
            by_qid
                .get(qid)
                .map(|query| query.hits.iter().map(|h| judged.get(h.docid.as_str()).copied()).collect())
                .unwrap_or_default()
        })
        .collect()
}

/// ranx's hit lists: 1.0 where the judgment is >= 1, else 0.0.
fn hit_lists(judged: &[Vec<Option<i64>>]) -> Vec<Vec<f64>> {
    judged.iter().map(|q| q.iter().map(|j| f64::from(u8::from(j.is_some_and(|j| j >= 1)))).collect()).collect()
}

/// ranx's `sum(x)` over a slice: from 0, left to right.
fn sum(values: &[f64]) -> f64 {
    values.iter().fold(0.0, |acc, v| acc + v)
}

/// probfuse: per segment, the mean over queries of the share of relevant hits in it (a list of
/// `N` hits cut into segments of `ceil(N / segments)`; an empty segment adds nothing).
fn probfuse(hits: &[Vec<f64>], segments: usize) -> Vec<f64> {
    let mut probs = vec![0.0; segments];
    for list in hits {
        let size = list.len().div_ceil(segments);
        if size == 0 {
            continue;
        }
        for (prob, segment) in probs.iter_mut().zip(list.chunks(size)) {
            *prob += sum(segment) / segment.len() as f64;
        }
    }
    probs.iter().map(|p| p / hits.len() as f64).collect()
}

/// segfuse: per segment of [`SEGFUSE_BOUNDS`], the mean over queries of relevant hits / segment size.
fn segfuse(hits: &[Vec<f64>]) -> Vec<f64> {
    let mut probs = vec![0.0; SEGFUSE_BOUNDS.len() - 1];
    for list in hits {
        for (prob, bounds) in probs.iter_mut().zip(SEGFUSE_BOUNDS.windows(2)) {
            let (start, end) = (bounds[0].min(list.len()), bounds[1].min(list.len()));
            *prob += sum(&list[start..end]) / (bounds[1] - bounds[0]) as f64;
        }
    }
    probs.iter().map(|p| p / hits.len() as f64).collect()
}

/// posfuse and slidefuse: at each position, the share of relevant hits among the queries whose
/// list reaches it (as long as the longest list).
fn position_probs(hits: &[Vec<f64>]) -> Vec<f64> {
    let longest = hits.iter().map(Vec::len).max().unwrap_or(0);
    let (mut relevant, mut reached) = (vec![0.0; longest], vec![0.0_f64; longest]);
    for list in hits {
        for (i, hit) in list.iter().enumerate() {
            reached[i] += 1.0;
            relevant[i] += hit;
        }
    }
    relevant.iter().zip(&reached).map(|(r, n)| r / n).collect()
}

/// bayesfuse: per segment of [`BAYESFUSE_CUTOFFS`], the log odds of the mean precision (a mean
/// of 0, or of 1, is moved by 0.001 first, as ranx).
fn bayesfuse(hits: &[Vec<f64>]) -> Vec<f64> {
    BAYESFUSE_CUTOFFS
        .windows(2)
        .map(|c| {
            let (start, end) = (c[0], c[1]);
            let mut precision = 0.0;
            for list in hits {
                let found = sum(&list[start.min(list.len())..end.min(list.len())]);
                precision += found / (end - start) as f64 / hits.len() as f64;
            }
            if precision == 0.0 {
                precision += 0.001;
            }
            let mut complement = 1.0 - precision;
            if complement == 0.0 {
                complement += 0.001;
            }
            (precision / complement).ln()
        })
        .collect()
}

/// mapfuse: the run's mean average precision over the training queries (0 for a query it lacks),
/// averaged as `np.mean` does (ranx's `evaluate`), so that the mean is ranx's bit for bit.
fn mean_average_precision(judged: &[Vec<Option<i64>>], qrels: &Qrels, queries: &[&str]) -> f64 {
    let map = Metric { measure: Measure::Map, cut: None, rel_level: 1 };
    let per_query: Vec<f64> = judged
        .iter()
        .zip(queries)
        .map(|(ranked, qid)| {
            let mut all: Vec<i64> = qrels.judged[*qid].values().copied().collect();
            all.sort_unstable_by(|a, b| b.cmp(a));
            map.compute(&Judgments { ranked, all: &all })
        })
        .collect();
    pairwise_sum(&per_query) / per_query.len() as f64
}

/// numpy's `pairwise_sum` (what `np.mean` adds with): plain below 8 values, 8 accumulators up to 128, halves beyond.
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return sum(a);
    }
    if n <= 128 {
        let mut r = [0.0; 8];
        r.copy_from_slice(&a[..8]);
        let whole = n - n % 8;
        for block in a[8..whole].chunks_exact(8) {
            for (acc, v) in r.iter_mut().zip(block) {
                *acc += v;
            }
        }
        let res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        return a[whole..].iter().fold(res, |acc, v| acc + v);
    }
    let half = n / 2;
    let half = half - half % 8;
    pairwise_sum(&a[..half]) + pairwise_sum(&a[half..])
}

/// Writes `model`'s JSON (and a newline) to `path` through the output guard (atomic replace).
pub fn save_model(model: &TrainedModel, path: &str) -> Result<(), FusionError> {
    let mut out = crate::output::OutputFile::create(path, &[])?;
    let text = model.to_json();
    out.writer()
        .write_all(text.as_bytes())
        .and_then(|()| out.writer().write_all(b"\n"))
        .map_err(|e| out.io_error(&e))?;
    out.commit()
}

/// Reads a model saved by [`save_model`]; errors name the file.
pub fn load_model(path: &str) -> Result<TrainedModel, FusionError> {
    let text = crate::runs::read::source::read_small_file(path)?;
    TrainedModel::from_json(&text).map_err(|e| FusionError::invalid(format!("{path}: {e}")))
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values are the definition under test
mod tests {
    use super::*;
    use crate::runs::RankFrom;

    #[test]
    fn probfuse_averages_segment_shares_over_queries() {
        // Query 1: 4 hits in 2 segments of 2; query 2: 3 hits in segments of 2 and 1; query 3: none.
        let hits = vec![vec![1.0, 0.0, 1.0, 1.0], vec![0.0, 0.0, 1.0], vec![]];
        assert_eq!(probfuse(&hits, 2), [(0.5 + 0.0) / 3.0, (1.0 + 1.0) / 3.0]);
    }

    #[test]
    fn position_probs_count_only_queries_reaching_the_position() {
        assert_eq!(position_probs(&[vec![1.0, 0.0, 1.0], vec![0.0]]), [0.5, 0.0, 1.0]);
    }

    #[test]
    fn bayesfuse_moves_certain_segments_off_zero_and_one() {
        let odds = bayesfuse(&[vec![1.0; 5]]);
        assert_eq!(odds[0], (1.0_f64 / 0.001).ln());
        assert_eq!(odds[1], (0.001_f64 / 0.999).ln());
    }

    #[test]
    fn a_run_of_no_judged_query_is_refused_by_every_method() {
        let run =
            |qid: &str| Run::from_columns("r.trec", &[qid.into()], &["d1".into()], &[1.0], RankFrom::Score).unwrap();
        let mut qrels = Qrels::default();
        qrels.judge("q1", "d1", 1).unwrap();
        for (_, method) in TrainedMethod::BY_NAME {
            let runs = [run("q1"), run("q2")];
            let error = train(*method, &runs.iter().collect::<Vec<_>>(), &qrels, TrainSizes::default());
            let error = error.unwrap_err().to_string();
            assert!(error.starts_with("r.trec: none of its queries is in the qrels (1 judged)"), "{error}");
            assert!(train(*method, &[&runs[0]], &qrels, TrainSizes::default()).is_ok());
        }
    }
}
