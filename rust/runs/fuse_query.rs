//! Fusion of run files' queries: hit lists in, fused hits out, by any method of [`crate::fusion`].
//! The run readers hand over hits in rank order; the general kernel does the rest, so `fanfuse fuse`
//! offers every method `fanfuse.fuse` does.

use crate::error::FusionError;
use crate::fusion::{fuse, FuseParams, ScoredLists};
use crate::lists::RankedLists;
use crate::runs::Hit;

/// Fuses query `qid`: `lists[r]` is run r's hits in rank order. Returns each fused hit's best-ranked
/// occurrence (whose passthrough fields the output keeps) and its fused score, best first.
pub fn fuse_query<'a>(
    qid: &str,
    lists: &[Vec<&'a Hit>],
    params: &FuseParams,
) -> Result<Vec<(&'a Hit, f64)>, FusionError> {
    let total = lists.iter().map(Vec::len).sum();
    let mut items: Vec<&str> = Vec::with_capacity(total);
    let mut scores: Vec<f64> = Vec::with_capacity(total);
    let mut hits: Vec<&Hit> = Vec::with_capacity(total);
    let mut bounds = Vec::with_capacity(lists.len() + 1);
    bounds.push(0);
    for list in lists {
        items.extend(list.iter().map(|h| &*h.docid));
        scores.extend(list.iter().map(|h| h.score));
        hits.extend(list.iter().copied());
        bounds.push(items.len());
    }
    // Rank methods never read the scores, so passing them always costs only the copy above.
    let fused = fuse(&ScoredLists { ids: RankedLists::new(&items, &bounds), scores: Some(&scores) }, params)
        .map_err(|e| FusionError::invalid(format!("query {qid}: {e}")))?;
    Ok(fused.hits.into_iter().map(|e| (hits[e.item], e.score)).collect())
}

/// Fuses whole runs in memory (query union, in order of first appearance across the runs).
pub fn fuse_runs(
    runs: &[&crate::runs::Run],
    params: &FuseParams,
    threads: Option<usize>,
) -> Result<crate::runs::Run, FusionError> {
    params.validate(runs.len())?;
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut queries: Vec<(&str, Vec<Vec<&Hit>>)> = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        for query in &run.queries {
            let at = *index.entry(&query.qid).or_insert_with(|| {
                queries.push((&query.qid, vec![Vec::new(); runs.len()]));
                queries.len() - 1
            });
            queries[at].1[r].extend(query.hits.iter());
        }
    }
    let fused = crate::batch::map_queries(&queries, threads, |(qid, lists)| {
        let hits = fuse_query(qid, lists, params)?;
        let hits = hits
            .into_iter()
            .enumerate()
            .map(|(i, (hit, score))| Hit { score, rank: i64::try_from(i).unwrap_or(i64::MAX) + 1, ..hit.clone() })
            .collect();
        Ok::<_, FusionError>(crate::runs::Query { qid: (*qid).to_owned(), hits })
    });
    let queries = fused.into_iter().collect::<Result<Vec<_>, _>>()?;
    let collection = runs.iter().find_map(|r| r.collection.clone());
    Ok(crate::runs::Run { name: "fused".into(), collection, queries, source: None })
}
