//! Fusion of run files' queries: hit lists in, fused hits out, by any method of [`crate::fusion`].
//! The run readers hand over hits in rank order; the general kernel does the rest, so `fanfuse fuse`
//! offers every method `fanfuse.fuse` does.

use crate::error::FusionError;
use crate::fusion::{fuse, FuseParams, ScoredLists};
use crate::lists::RankedLists;
use crate::rrf::TieBreak;
use crate::runs::fuse::order::{step, Place};
use crate::runs::Hit;

/// Fuses query `qid`: `lists[r]` is run r's hits in rank order. Returns each fused hit's best-ranked
/// occurrence (whose passthrough fields the output keeps) and its fused score, in evaluation order
/// (see [`evaluation_order`]) and cut to `params.top_k`. Errors name the query, and a run by its
/// name in `names` (its file).
pub fn fuse_query<'a>(
    qid: &str,
    lists: &[Vec<&'a Hit>],
    names: &[impl AsRef<str>],
    params: &FuseParams,
) -> Result<Vec<(&'a Hit, f64)>, FusionError> {
    fuse_cut_in_evaluation_order(lists, names, params).map_err(|e| FusionError::invalid(format!("query {qid}: {e}")))
}

fn fuse_cut_in_evaluation_order<'a>(
    lists: &[Vec<&'a Hit>],
    names: &[impl AsRef<str>],
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
    let lists = ScoredLists { ids: RankedLists::new(&items, &bounds), scores: Some(&scores) };
    if let Some((run, method)) = params.unscored_list(&lists) {
        // The kernel's refusal would speak of `runs[i]` and of Python's ways to give scores.
        return Err(FusionError::invalid(format!(
            "{} has no scores but method '{method}' fuses scores; give the run its scores, or use a rank \
             method such as rrf",
            names[run].as_ref()
        )));
    }
    let Some(top_k) = params.top_k else {
        let mut entries = kernel_entries(&lists, params, &hits)?;
        evaluation_order(&mut entries);
        return Ok(entries);
    };
    // The kernel's cut keeps tied hits in its own tie order, so cut after ordering instead. The
    // kernel's partial selection stays: ask it for room beyond k, enough to hold the tie group at
    // the k-th score, and fuse again uncut in the rare case the group fills that room too.
    let room = top_k.saturating_add(top_k.max(16));
    let mut entries = kernel_entries(&lists, &FuseParams { top_k: Some(room), ..params.clone() }, &hits)?;
    let group_may_continue =
        entries.len() == room && top_k > 0 && entries.last().map(|e| e.1) == entries.get(top_k - 1).map(|e| e.1);
    if group_may_continue {
        entries = kernel_entries(&lists, &FuseParams { top_k: None, ..params.clone() }, &hits)?;
    }
    evaluation_order(&mut entries);
    entries.truncate(top_k);
    Ok(entries)
}

/// The kernel's fused hits, in its order (score descending, its tie-break), cut to `params.top_k`.
fn kernel_entries<'a>(
    lists: &ScoredLists<'_, &str>,
    params: &FuseParams,
    hits: &[&'a Hit],
) -> Result<Vec<(&'a Hit, f64)>, FusionError> {
    // Rank methods never read the scores, so passing them always costs only the copy above.
    let fused = fuse(lists, params)?;
    Ok(fused.hits.into_iter().map(|e| (hits[e.item], e.score)).collect())
}

/// Orders fused hits as trec_eval, pytrec_eval and `fanfuse eval` read a run: fused score
/// descending, equal scores by docid descending. A written run is then its own evaluation order, so
/// the run cut at k is the first k hits of the same run at any larger depth, and every metric at a
/// cut-off <= k is the same whatever `top_k` was. The kernel's tie-break cannot survive in a file:
/// evaluation re-sorts equal scores.
fn evaluation_order(entries: &mut [(&Hit, f64)]) {
    // Already by score from the kernel: the adaptive stable sort only reorders the tie groups.
    entries.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.docid.cmp(&a.0.docid)));
}

/// Fused hits as a run holds them: each input hit (with its passthrough fields) with its fused score
/// and its rank in the fused list (from 1).
#[must_use]
pub fn fused_hits(entries: &[(&Hit, f64)]) -> Vec<Hit> {
    let rank = |i: usize| i64::try_from(i).unwrap_or(i64::MAX) + 1;
    entries.iter().enumerate().map(|(i, &(hit, score))| Hit { score, rank: rank(i), ..hit.clone() }).collect()
}

/// Checks a run fusion of `n_runs` runs, which every route runs first: some run, the options of
/// [`FuseParams::validate`], weights that fuse some run, and the tie-break, which a written run
/// cannot keep (see [`evaluation_order`]).
pub fn validate_run_params(params: &FuseParams, n_runs: usize) -> Result<(), FusionError> {
    if n_runs == 0 {
        return Err(FusionError::invalid("give at least one run to fuse"));
    }
    params.validate(n_runs, "run")?;
    // A run of weight 0 is left out (the contract); with every run left out each query would be
    // written without hits, which no caller asks for.
    if params.weights.as_ref().is_some_and(|weights| weights.iter().all(|&w| w == 0.0)) {
        return Err(FusionError::of_option(
            "weights",
            "weights are all 0: a run of weight 0 is left out, so no run would be fused; give at least one run a weight above 0",
        ));
    }
    if params.tie_break != TieBreak::Rank {
        return Err(FusionError::of_option(
            "tie_break",
            "tie_break applies to fanfuse.fuse and rrf only: a fused run lists equal scores by docid \
             descending, the order in which trec_eval, pytrec_eval and fanfuse eval read them; leave tie_break unset",
        ));
    }
    Ok(())
}

/// Fuses whole runs in memory (query union); the runs are borrowed or shared (`Arc`), as the caller
/// holds them. The queries come in the order of a fused run file ([`super::order`]), each query of
/// a run being one group: the file `fanfuse fuse` writes from the runs written as files.
pub fn fuse_runs(
    runs: &[impl std::ops::Deref<Target = crate::runs::Run>],
    params: &FuseParams,
    threads: Option<usize>,
) -> Result<crate::runs::Run, FusionError> {
    validate_run_params(params, runs.len())?;
    let n = runs.len();
    // Each query of a run is one group, so a run ends at the step after its last query.
    let ends: Vec<u64> = runs.iter().enumerate().map(|(r, run)| step(r, run.queries.len() as u64, n)).collect();
    let pass = |place: &mut Place, lacking: std::ops::Range<usize>| ends[lacking].iter().for_each(|&e| place.passed(e));
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut queries: Vec<(&str, Vec<Vec<&Hit>>)> = Vec::new();
    // Each query's place so far, and the last run that had it (the runs between lack it).
    let mut places: Vec<(Place, usize)> = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        for (g, query) in run.queries.iter().enumerate() {
            let at = step(r, g as u64, n);
            let i = *index.entry(&query.qid).or_insert_with(|| {
                queries.push((&query.qid, vec![Vec::new(); n]));
                let mut place = Place::first_met(at);
                pass(&mut place, 0..r);
                places.push((place, r));
                queries.len() - 1
            });
            let (place, last) = &mut places[i];
            if *last < r {
                pass(place, *last + 1..r);
                place.reached(at);
                *last = r;
            }
            queries[i].1[r].extend(query.hits.iter());
        }
    }
    for (place, last) in &mut places {
        pass(place, *last + 1..n);
    }
    // Already in order when the runs list their queries alike (the usual case): no sort, no copy.
    if !places.is_sorted_by_key(|(place, _)| *place) {
        let mut order: Vec<(Place, usize)> = places.iter().enumerate().map(|(i, (place, _))| (*place, i)).collect();
        order.sort_unstable();
        queries = order.into_iter().map(|(_, i)| std::mem::take(&mut queries[i])).collect();
    }
    let names: Vec<&str> = runs.iter().map(|run| run.name.as_str()).collect();
    let fused = crate::batch::map_queries(&queries, threads, |(qid, lists)| {
        let hits = fused_hits(&fuse_query(qid, lists, &names, params)?);
        Ok::<_, FusionError>(crate::runs::Query { qid: (*qid).to_owned(), hits })
    })?;
    let queries = fused.into_iter().collect::<Result<Vec<_>, _>>()?;
    let collection = runs.iter().find_map(|r| r.collection.clone());
    Ok(crate::runs::Run { name: "fused".into(), collection, queries, source: None })
}
