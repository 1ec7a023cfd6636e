//! The Wilcoxon signed-rank test of paired samples, two-sided, as `scipy.stats.wilcoxon(a, b)`
//! computes it by default: zero differences dropped ("wilcox"), average ranks for ties, no
//! continuity correction, and scipy's choice of null distribution ("auto"):
//!
//! - more than 50 pairs: the normal approximation, its variance reduced for ties;
//! - up to 50 pairs, no zero difference and no tie: the exact distribution of the rank sum;
//! - up to 13 pairs with zeros or ties: every sign flip of the differences counted (exact);
//! - otherwise (14 to 50 pairs with zeros or ties): the normal approximation.
//!
//! Two departures:
//! - when every difference is zero scipy gives p = NaN; here p = 1 (identical systems, as the t and
//!   randomization tests give);
//! - a tie and a zero are equal but for rounding (the resolution of `significance::Differences`),
//!   not equal to the last bit: 0.3 - 0.1 and 0.5 - 0.3 are one magnitude, which scipy ranks apart,
//!   and the p-value does not change with the unit of the scores. On the differences rounded to
//!   12 decimals scipy gives the same p-value (tests/test_report_statistics.py).

use super::distributions::normal_two_sided;
use super::significance::{differences, Differences};
use crate::error::FusionError;

/// Above this many pairs (zeros included) the normal approximation is used, as scipy does.
const EXACT_UP_TO: usize = 50;
/// Up to this many pairs, zeros or ties are handled by counting every sign flip (2^13 = 8192).
const FLIPS_UP_TO: usize = 13;

/// The statistic min(R+, R-) and the two-sided p-value.
///
/// # Errors
/// Unequal lengths, no pairs, or a value that is not finite.
pub fn wilcoxon_test(a: &[f64], b: &[f64]) -> Result<(f64, f64), FusionError> {
    let Differences { values: diffs, resolution } = differences(a, b, "wilcoxon_test", 1)?;
    let nonzero: Vec<f64> = diffs.iter().copied().filter(|d| d.abs() > resolution).collect();
    let (ranks, tie_sizes) = average_ranks(&nonzero, resolution);
    // Summed from +0.0: `Sum` of no ranks is -0.0, which a report would print as the statistic.
    let rank_sum =
        |sign: f64| nonzero.iter().zip(&ranks).filter(|(d, _)| **d * sign > 0.0).fold(0.0, |s, (_, r)| s + r);
    let (r_plus, r_minus) = (rank_sum(1.0), rank_sum(-1.0));
    let statistic = r_plus.min(r_minus);
    if nonzero.is_empty() {
        return Ok((statistic, 1.0));
    }
    let has_ties = tie_sizes.iter().any(|&t| t > 1);
    let has_zeros = nonzero.len() < diffs.len();
    let p = if diffs.len() > EXACT_UP_TO {
        normal_p_value(r_plus, nonzero.len(), &tie_sizes)
    } else if !has_ties && !has_zeros {
        exact_p_value(r_plus, nonzero.len())
    } else if diffs.len() <= FLIPS_UP_TO {
        every_flip_p_value(r_plus, &ranks)
    } else {
        normal_p_value(r_plus, nonzero.len(), &tie_sizes)
    };
    Ok((statistic, p))
}

/// Ranks of |d| from 1, tied values sharing their average rank, and the size of every tie group.
/// Magnitudes within `resolution` of the one before are tied: equal but for rounding (scipy ties
/// exact equals only, which rounding in the scores' unit can split).
fn average_ranks(values: &[f64], resolution: f64) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_unstable_by(|&i, &j| values[i].abs().total_cmp(&values[j].abs()));
    let mut ranks = vec![0.0; values.len()];
    let mut sizes = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]].abs() - values[order[end - 1]].abs() <= resolution {
            end += 1;
        }
        // Ranks start + 1 ..= end share their mean.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        sizes.push(end - start);
        start = end;
    }
    (ranks, sizes)
}

fn normal_p_value(r_plus: f64, n: usize, tie_sizes: &[usize]) -> f64 {
    let n = n as f64;
    let mean = n * (n + 1.0) / 4.0;
    let tie_term: f64 = tie_sizes.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
    let sd = ((n * (n + 1.0) * (2.0 * n + 1.0) - tie_term / 2.0) / 24.0).sqrt();
    if sd == 0.0 {
        return 1.0;
    }
    normal_two_sided((r_plus - mean) / sd)
}

/// 2 min(P(R+ >= r), P(R+ <= r)) under the exact null distribution of n untied ranks: R+ is the
/// sum of a uniformly random subset of 1..=n, counted by subset sums (2^50 fits in a u64).
fn exact_p_value(r_plus: f64, n: usize) -> f64 {
    let top = n * (n + 1) / 2;
    let mut counts = vec![0_u64; top + 1];
    counts[0] = 1;
    for rank in 1..=n {
        for sum in (rank..=top).rev() {
            counts[sum] += counts[sum - rank];
        }
    }
    let total = 2_f64.powi(i32::try_from(n).unwrap_or(i32::MAX));
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 0 <= r_plus <= top
    let (low, high) = (r_plus.ceil() as usize, r_plus.floor() as usize);
    let at_most: u64 = counts[..=low.min(top)].iter().sum();
    let at_least: u64 = counts[high.min(top)..].iter().sum();
    (2.0 * at_most.min(at_least) as f64 / total).min(1.0)
}

/// 2 min(P(R+ >= r), P(R+ <= r)) over every assignment of signs to the ranks, as scipy's
/// permutation test counts them when all 2^n fit in its resamples.
fn every_flip_p_value(r_plus: f64, ranks: &[f64]) -> f64 {
    let n = ranks.len();
    // R+ is a multiple of 1/2: a quarter is slack enough against rounding of the sums.
    let slack = 0.25;
    let (mut at_most, mut at_least) = (0_u64, 0_u64);
    for mask in 0_u64..1 << n {
        let sum: f64 = ranks.iter().enumerate().filter(|(i, _)| mask >> i & 1 == 1).map(|(_, r)| r).sum();
        at_most += u64::from(sum <= r_plus + slack);
        at_least += u64::from(sum >= r_plus - slack);
    }
    (2.0 * at_most.min(at_least) as f64 / (1_u64 << n) as f64).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_average_over_ties_of_magnitude() {
        let (ranks, sizes) = average_ranks(&[0.5, -0.25, 0.25, 1.0], 0.0);
        assert_eq!(ranks, vec![3.0, 1.5, 1.5, 4.0]);
        assert_eq!(sizes, vec![2, 1, 1]);
    }

    #[test]
    fn small_untied_samples_use_the_exact_distribution() {
        // scipy.stats.wilcoxon([1, 2, 3, 4, 5], [0] * 5): R- = 0, p = 2 / 32.
        let (statistic, p) = wilcoxon_test(&[1.0, 2.0, 3.0, 4.0, 5.0], &[0.0; 5]).unwrap();
        assert!(statistic.abs() < 1e-15 && (p - 0.0625).abs() < 1e-15);
        // No difference of one sign: the statistic is +0.0, as scipy gives, for either sign and for none.
        for (a, b) in [([1.0, 2.0, 3.0], [0.0; 3]), ([0.0; 3], [1.0, 2.0, 3.0]), ([0.5; 3], [0.5; 3])] {
            assert!(wilcoxon_test(&a, &b).unwrap().0.is_sign_positive());
        }
        assert!((wilcoxon_test(&[0.3, 0.4], &[0.3, 0.4]).unwrap().1 - 1.0).abs() < 1e-15);
    }

    #[test]
    fn bad_samples_are_refused() {
        let message = wilcoxon_test(&[1.0], &[]).unwrap_err().to_string();
        assert!(message.contains("wilcoxon_test: paired samples need equal lengths"), "{message}");
    }
}
