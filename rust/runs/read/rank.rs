//! Where a hit's rank comes from (`--rank-from`), and putting a query's hits into rank order.

use std::collections::HashMap;
use std::str::FromStr;

use crate::error::FusionError;
use crate::runs::Hit;

/// Where the rank of a hit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RankFrom {
    /// Score descending, ties by docid descending: how trec_eval and pytrec_eval read a run, so a run
    /// is fused in the same order it is evaluated in. The default.
    #[default]
    Score,
    /// The TREC rank column ascending (file order among equal ranks).
    Rank,
    /// The order of the lines (TREC) or of the contexts (MT-RAG) in the file.
    File,
}

impl RankFrom {
    /// The names `rank_from=` accepts.
    pub const BY_NAME: &'static [(&'static str, Self)] =
        &[("score", Self::Score), ("rank", Self::Rank), ("file", Self::File)];
    pub const NAMES: [&'static str; Self::BY_NAME.len()] = crate::names::names(Self::BY_NAME);
}

impl FromStr for RankFrom {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::names::parse(Self::BY_NAME, "rank_from", s).map_err(FusionError::of_setting)
    }
}

/// trec_eval's order: score descending, then docid descending (byte order).
#[must_use]
pub fn trec_eval_order(a: &Hit, b: &Hit) -> std::cmp::Ordering {
    b.score.total_cmp(&a.score).then_with(|| b.docid.cmp(&a.docid))
}

/// Rejects a document listed twice for one query, then sorts the hits into rank order.
pub fn order_hits(path: &str, qid: &str, hits: &mut [Hit], rank_from: RankFrom) -> Result<(), FusionError> {
    reject_duplicates(path, qid, hits.iter())?;
    reject_unscored(path, qid, hits, rank_from)?;
    match rank_from {
        RankFrom::Score => hits.sort_unstable_by(trec_eval_order),
        RankFrom::Rank => hits.sort_by_key(|h| h.rank),
        RankFrom::File => {}
    }
    Ok(())
}

/// Like [`order_hits`] without moving the hits: references in rank order.
pub fn ranked<'a>(path: &str, qid: &str, hits: &'a [Hit], rank_from: RankFrom) -> Result<Vec<&'a Hit>, FusionError> {
    reject_duplicates(path, qid, hits.iter())?;
    reject_unscored(path, qid, hits, rank_from)?;
    let mut refs: Vec<&Hit> = hits.iter().collect();
    match rank_from {
        RankFrom::Score => refs.sort_unstable_by(|a, b| trec_eval_order(a, b)),
        RankFrom::Rank => refs.sort_by_key(|h| h.rank),
        RankFrom::File => {}
    }
    Ok(refs)
}

/// Ranks from the scores need every hit's score: a hit without one (NaN, an MT-RAG context with no
/// `score`) is refused, saying where ranks may come from instead.
fn reject_unscored(path: &str, qid: &str, hits: &[Hit], rank_from: RankFrom) -> Result<(), FusionError> {
    if rank_from != RankFrom::Score {
        return Ok(());
    }
    let Some(hit) = hits.iter().find(|h| h.score.is_nan()) else { return Ok(()) };
    Err(FusionError::input(
        path,
        hit.line,
        format!(
            "document '{}' (query '{qid}') has no score; ranks come from the scores (rank_from='score', as \
             trec_eval reads a run): add the scores, or read ranks from the rank column or the file order \
             (rank_from='rank' or 'file')",
            hit.docid
        ),
    ))
}

fn reject_duplicates<'a>(
    path: &str,
    qid: &str,
    hits: impl ExactSizeIterator<Item = &'a Hit>,
) -> Result<(), FusionError> {
    let mut first_line: HashMap<&str, u64, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(hits.len(), foldhash::fast::RandomState::default());
    for hit in hits {
        if let Some(first) = first_line.insert(&hit.docid, hit.line) {
            return Err(FusionError::input(
                path,
                hit.line,
                format!(
                    "document '{}' appears twice for query '{qid}' (first at {path}:{first}); \
                     each (query, document) pair may appear once",
                    hit.docid
                ),
            ));
        }
    }
    Ok(())
}
