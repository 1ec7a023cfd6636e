//! Fusion of one query's ranked hit lists by a named method: the single place where a method name
//! maps to a kernel call, so methods added later (combsum, isr, ...) plug in here.

use std::str::FromStr;

use crate::error::FusionError;
use crate::lists::RankedLists;
use crate::rrf::{rrf, RrfParams};
use crate::runs::Hit;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// Weighted Reciprocal Rank Fusion (DESIGN.md).
    #[default]
    Rrf,
}

impl FromStr for Method {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "rrf" => Ok(Self::Rrf),
            other => Err(FusionError::invalid(format!("method must be 'rrf' (got '{other}')"))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct FuseParams {
    pub method: Method,
    /// k, weights, top_k and tie-break of the kernel.
    pub rrf: RrfParams,
}

impl FuseParams {
    pub fn validate(&self, n_runs: usize) -> Result<(), FusionError> {
        match self.method {
            Method::Rrf => self.rrf.validate(n_runs),
        }
    }
}

/// Fuses one query: `lists[r]` is run r's hits in rank order. Returns each fused hit's best-ranked
/// occurrence (whose passthrough fields the output keeps) and its fused score, best first.
pub fn fuse_query<'a>(lists: &[Vec<&'a Hit>], params: &FuseParams) -> Result<Vec<(&'a Hit, f64)>, FusionError> {
    let mut items: Vec<&str> = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    let mut hits: Vec<&Hit> = Vec::with_capacity(items.capacity());
    let mut bounds = Vec::with_capacity(lists.len() + 1);
    bounds.push(0);
    for list in lists {
        items.extend(list.iter().map(|h| &*h.docid));
        hits.extend(list.iter().copied());
        bounds.push(items.len());
    }
    match params.method {
        Method::Rrf => {
            let fused = rrf(RankedLists::new(&items, &bounds), &params.rrf)?;
            Ok(fused.into_iter().map(|e| (hits[e.item], e.score)).collect())
        }
    }
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
        let hits = fuse_query(lists, params)?;
        let hits = hits
            .into_iter()
            .enumerate()
            .map(|(i, (hit, score))| Hit { score, rank: i64::try_from(i).unwrap_or(i64::MAX) + 1, ..hit.clone() })
            .collect();
        Ok::<_, FusionError>(crate::runs::Query { qid: (*qid).to_owned(), hits })
    });
    let queries = fused.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(crate::runs::Run { name: "fused".into(), collection: runs.iter().find_map(|r| r.collection.clone()), queries })
}
