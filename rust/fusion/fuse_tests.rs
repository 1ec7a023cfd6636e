//! The tests of `fusion/mod.rs`: RRF explained and fast, duplicates, top-k, the score methods against ranx's rules, and the refusals of scores.

use super::*;

fn lists_of(lists: &[&[&'static str]]) -> (Vec<&'static str>, Vec<usize>) {
    let items: Vec<&str> = lists.iter().flat_map(|l| l.iter().copied()).collect();
    let mut bounds = vec![0];
    for l in lists {
        bounds.push(bounds.last().unwrap() + l.len());
    }
    (items, bounds)
}

fn run(lists: &[&[&'static str]], params: &FuseParams) -> (Vec<&'static str>, Fusion) {
    let (items, bounds) = lists_of(lists);
    let fusion = fuse(&ScoredLists { ids: RankedLists::new(&items, &bounds), scores: None }, params).unwrap();
    (fusion.hits.iter().map(|h| items[h.item]).collect(), fusion)
}

#[test]
fn explained_rrf_equals_the_fast_path_and_its_terms_sum_to_the_score() {
    let lists: &[&[&str]] = &[&["a", "b", "c"], &["c", "a", "a", "d"], &[], &["d"]];
    let weights = Some(vec![1.0, 2.0, 1.0, 0.5]);
    let plain = FuseParams { weights: weights.clone(), ..FuseParams::default() };
    let explained = FuseParams { weights, explain: true, ..FuseParams::default() };
    let (ids, fast) = run(lists, &plain);
    let (ids_explained, slow) = run(lists, &explained);
    assert_eq!(ids, ids_explained);
    assert_eq!(fast.hits, slow.hits);
    let explain = slow.explain.unwrap();
    for (hit, parts) in slow.hits.iter().zip(&explain) {
        assert_eq!(parts.iter().map(|c| c.contribution).sum::<f64>(), hit.score);
    }
    // "a": rank 1 in list 0, rank 2 in list 1 (its repeat at 3 is skipped).
    let a = &explain[ids.iter().position(|&id| id == "a").unwrap()];
    assert_eq!(a.iter().map(|c| (c.list, c.rank)).collect::<Vec<_>>(), [(0, Some(1)), (1, Some(2))]);
    assert_eq!(a[1].contribution, 2.0 / 62.0);
}

#[test]
fn duplicates_sum_adds_every_occurrence() {
    let params = FuseParams { duplicates: Duplicates::Sum, ..FuseParams::default() };
    let (ids, fusion) = run(&[&["a", "b", "a"]], &params);
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(fusion.hits[0].score, 1.0 / 61.0 + 1.0 / 63.0);
    let max = FuseParams { duplicates: Duplicates::Max, ..FuseParams::default() };
    assert_eq!(run(&[&["a", "b", "a"]], &max).1.hits[0].score, 1.0 / 61.0);
}

#[test]
fn top_k_is_the_prefix_of_the_full_order() {
    let lists: &[&[&str]] = &[&["a", "b", "c", "d"], &["d", "c", "b", "a"], &["x"]];
    let slow = |top_k| FuseParams { top_k, duplicates: Duplicates::Sum, ..FuseParams::default() };
    let (full, _) = run(lists, &slow(None));
    for k in 0..7 {
        assert_eq!(run(lists, &slow(Some(k))).0, full[..k.min(full.len())]);
    }
}

fn scored(lists: &[&[(&'static str, f64)]], params: &FuseParams) -> Vec<(&'static str, f64)> {
    let items: Vec<&str> = lists.iter().flat_map(|l| l.iter().map(|p| p.0)).collect();
    let scores: Vec<f64> = lists.iter().flat_map(|l| l.iter().map(|p| p.1)).collect();
    let mut bounds = vec![0];
    for l in lists {
        bounds.push(bounds.last().unwrap() + l.len());
    }
    let fusion = fuse(&ScoredLists { ids: RankedLists::new(&items, &bounds), scores: Some(&scores) }, params).unwrap();
    fusion.hits.iter().map(|h| (items[h.item], h.score)).collect()
}

fn with(method: Method, norm: Norm) -> FuseParams {
    FuseParams { method, norm: Some(norm), ..FuseParams::default() }
}

#[test]
fn combmed_takes_the_middle_or_the_mean_of_the_two_middles() {
    let lists: &[&[(&str, f64)]] = &[&[("a", 1.0)], &[("a", 5.0)], &[("a", 3.0), ("b", 2.0)], &[("b", 4.0)]];
    let out = scored(lists, &with(Method::CombMed, Norm::None));
    assert_eq!(out, [("a", 3.0), ("b", 3.0)]);
}

#[test]
fn min_max_and_combmnz_follow_ranx() {
    // min-max per list: list 0 -> a 1, b 0.5, c 0; list 1 -> b 1, d 0. combmnz: sum * count.
    let lists: &[&[(&str, f64)]] = &[&[("a", 3.0), ("b", 2.0), ("c", 1.0)], &[("b", 9.0), ("d", 4.0)]];
    let out = scored(lists, &with(Method::CombMnz, Norm::MinMax));
    assert_eq!(out, [("b", 3.0), ("a", 1.0), ("d", 0.0), ("c", 0.0)], "tie: d has the better best rank");
}

#[test]
fn dbsf_gives_a_single_hit_one_half() {
    let out = scored(&[&[("a", 7.0)]], &FuseParams { method: Method::Dbsf, ..FuseParams::default() });
    assert_eq!(out, [("a", 0.5)]);
}

#[test]
fn condorcet_scores_are_positions() {
    // a beats b in 2 of 3 lists, b beats c everywhere, a beats c everywhere.
    let lists: &[&[(&str, f64)]] = &[
        &[("a", 0.0), ("b", 0.0), ("c", 0.0)],
        &[("b", 0.0), ("a", 0.0), ("c", 0.0)],
        &[("a", 0.0), ("b", 0.0), ("c", 0.0)],
    ];
    let out = scored(lists, &FuseParams { method: Method::Condorcet, ..FuseParams::default() });
    assert_eq!(out, [("a", 3.0), ("b", 2.0), ("c", 1.0)]);
}

#[test]
fn scores_beyond_the_float_range_are_refused() {
    let huge: &[&[(&str, f64)]] = &[&[("a", 1e308)], &[("a", 1e308)]];
    let params = with(Method::CombSum, Norm::None);
    let (items, scores): (Vec<&str>, Vec<f64>) = huge.iter().flat_map(|l| l.iter().copied()).unzip();
    let lists = ScoredLists { ids: RankedLists::new(&items, &[0, 1, 2]), scores: Some(&scores) };
    let err = fuse(&lists, &params).unwrap_err().to_string();
    assert!(err.starts_with("the fused score of id \"a\" is inf under method 'combsum'"), "{err}");
    // min-max over [-1e308, 1e308]: the range itself overflows and the top score becomes inf / inf.
    let spread: &[&[(&str, f64)]] = &[&[("a", 1e308), ("b", -1e308)]];
    let (items, scores): (Vec<&str>, Vec<f64>) = spread.iter().flat_map(|l| l.iter().copied()).unzip();
    let lists = ScoredLists { ids: RankedLists::new(&items, &[0, 2]), scores: Some(&scores) };
    assert!(fuse(&lists, &with(Method::CombSum, Norm::MinMax)).unwrap_err().to_string().contains("is NaN"));
}

#[test]
fn score_methods_refuse_lists_without_scores() {
    let items = ["a"];
    let params = FuseParams { method: Method::CombSum, ..FuseParams::default() };
    let err = fuse(&ScoredLists { ids: RankedLists::new(&items, &[0, 1]), scores: None }, &params).unwrap_err();
    assert!(err.to_string().starts_with("runs[0] has no scores"));
}
