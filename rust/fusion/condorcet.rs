//! Condorcet fusion (Montague & Aslam 2002, as ranx): documents ordered by pairwise majority
//! votes of the lists; the fused score is a position, `N - i` for the `i`-th of `N` candidates.
//!
//! ranx sorts with the raw majority comparator, which is not transitive when the votes form a
//! cycle (or tie), so its order then depends on the sort algorithm and on Python's set order.
//! fanfuse uses the Copeland count instead: a document's score before positions is its pairwise
//! wins minus losses. When the majority relation is a strict total order (no cycles, no ties) the
//! two agree exactly; otherwise fanfuse's order is still deterministic (ties by `tie_break`).
//! A list votes in a duel when it ranks one document strictly better: a missing document ranks
//! below every present one, and a list missing both does not vote.

use super::gather::Entry;

/// Copeland count of each candidate: weighted pairwise wins minus losses. `O(N² R)`.
pub(super) fn copeland(
    entries: &[Entry],
    n_candidates: usize,
    n_lists: usize,
    weight: impl Fn(u32) -> f64,
) -> Vec<f64> {
    // rank[c * n_lists + list], u32::MAX where the list does not contain c.
    let mut rank = vec![u32::MAX; n_candidates * n_lists];
    for e in entries.iter().filter(|e| e.is_ranked()) {
        rank[e.candidate as usize * n_lists + e.list as usize] = e.rank;
    }
    let weights: Vec<f64> = (0..n_lists as u32).map(weight).collect();
    let mut count = vec![0.0_f64; n_candidates];
    for a in 0..n_candidates {
        let ranks_a = &rank[a * n_lists..(a + 1) * n_lists];
        for b in a + 1..n_candidates {
            let ranks_b = &rank[b * n_lists..(b + 1) * n_lists];
            let (mut for_a, mut for_b) = (0.0, 0.0);
            for ((&ra, &rb), &w) in ranks_a.iter().zip(ranks_b).zip(&weights) {
                if ra < rb {
                    for_a += w;
                } else if rb < ra {
                    for_b += w;
                }
            }
            if for_a > for_b {
                count[a] += 1.0;
                count[b] -= 1.0;
            } else if for_b > for_a {
                count[b] += 1.0;
                count[a] -= 1.0;
            }
        }
    }
    count
}
