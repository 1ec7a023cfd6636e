//! Paired significance of the difference between two systems' per-query scores: a two-sided
//! randomization (sign-flip) permutation test, exact over every flip for small samples and drawn
//! with a fixed seed for larger ones, so reruns print the same p-value; and a two-sided paired
//! Student t-test (the one `scipy.stats.ttest_rel` computes).
//!
//! Both refuse what would give a p-value that means nothing: unequal lengths, too few pairs, and
//! values that are not finite (a NaN difference would count as "less extreme" in every permutation
//! and make any comparison look significant).

use super::distributions::student_t_two_sided;
use crate::error::FusionError;

/// What `iterations` accepts, in the one message the binding and the core give.
pub const ITERATIONS_ACCEPTED: &str = "an int from 1 to 4294967295";
/// What `seed` accepts: any unsigned 64-bit int, said as Python spells its bound.
pub const SEED_ACCEPTED: &str = "an int from 0 to 2**64 - 1";

/// splitmix64: tiny, fast and good enough to flip fair coins; fixed seed for reproducibility.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Paired differences brought to one unit, whatever the unit of the scores: every test reads these,
/// so none depends on it (a test over `a * s` and `b * s` gives the p-value of `a` and `b`).
pub(super) struct Differences {
    /// `a[i] - b[i]` times the power of two that puts the largest magnitude in [0.5, 1): exact, and
    /// no sum, square or variance of them can overflow or underflow.
    pub values: Vec<f64>,
    /// How far apart two values (or a value and zero) can be from rounding alone, in the same unit:
    /// the inputs carry a relative precision of `f64::EPSILON`, so `a[i] - b[i]` is known to about
    /// `EPSILON * (|a[i]| + |b[i]|)` (a score scaled by 1e-12 is rounded once more). Values closer
    /// than this are taken as equal, and a value within it of zero as zero.
    pub resolution: f64,
}

/// Slack on the inputs' rounding, for the subtraction's own and the scaling's.
pub(super) const RESOLUTION_ULPS: f64 = 8.0;

/// The differences `a[i] - b[i]`, checked, in the unit of [`Differences`].
pub(super) fn differences(a: &[f64], b: &[f64], test: &str, min_pairs: usize) -> Result<Differences, FusionError> {
    if a.len() != b.len() {
        return Err(FusionError::invalid(format!(
            "{test}: paired samples need equal lengths (got {} and {})",
            a.len(),
            b.len()
        )));
    }
    if a.len() < min_pairs {
        return Err(FusionError::invalid(format!(
            "{test} needs at least {min_pairs} pair{} (got {})",
            if min_pairs == 1 { "" } else { "s" },
            a.len()
        )));
    }
    for (name, sample) in [("a", a), ("b", b)] {
        if let Some((i, v)) = sample.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(FusionError::invalid(format!(
                "{test}: {name}[{i}] is {v}; every value must be a finite number (drop the pair or give it a real value)"
            )));
        }
    }
    let mut values: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    if let Some(i) = values.iter().position(|d| !d.is_finite()) {
        return Err(FusionError::invalid(format!(
            "{test}: a[{i}] - b[{i}] overflows a float; scale both samples down"
        )));
    }
    let magnitude = a.iter().chain(b).fold(0.0_f64, |m, x| m.max(x.abs()));
    let exponent = to_unit(&mut values);
    let resolution = scale_by_power_of_two(RESOLUTION_ULPS * f64::EPSILON * 2.0 * magnitude, exponent);
    Ok(Differences { values, resolution })
}

/// Multiplies `values` by the power of two 2^e that puts the largest magnitude in [0.5, 1), and
/// returns e (0 when all are zero). Exact: only the exponents change.
pub(super) fn to_unit(values: &mut [f64]) -> i32 {
    let largest = values.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    if largest == 0.0 {
        return 0;
    }
    // 2^(k-1) <= largest < 2^k: k = floor(log2(largest)) + 1, corrected where log2 rounds.
    #[allow(clippy::cast_possible_truncation)] // |log2| of a finite nonzero f64 is at most 1075
    let mut k = largest.log2().floor() as i32 + 1;
    if scale_by_power_of_two(largest, -k) >= 1.0 {
        k += 1;
    } else if scale_by_power_of_two(largest, -k) < 0.5 {
        k -= 1;
    }
    for v in values.iter_mut() {
        *v = scale_by_power_of_two(*v, -k);
    }
    -k
}

/// `x * 2^e`, in steps whose factors stay finite and normal (2^1074 itself is not a float).
pub(super) fn scale_by_power_of_two(mut x: f64, mut e: i32) -> f64 {
    while e != 0 {
        let step = e.clamp(-1000, 1000);
        x *= 2_f64.powi(step);
        e -= step;
    }
    x
}

/// p-value of H0 "a and b come from the same system": the share of sign flips of the paired
/// differences whose |mean| is at least the observed one.
///
/// When the 2^n flips of n pairs are no more than `iterations`, all of them are counted and the
/// p-value is exact: count / 2^n, where the count includes the unflipped sample itself (so it needs
/// no +1) and the seed plays no part. Otherwise `iterations` random flips are drawn and the p-value
/// is (count + 1) / (iterations + 1), which counts the observed sample once and is never 0.
///
/// # Errors
/// Unequal lengths, no pairs, a value that is not finite, or `iterations` = 0.
pub fn randomization_test(a: &[f64], b: &[f64], iterations: u32, seed: u64) -> Result<f64, FusionError> {
    if iterations == 0 {
        return Err(FusionError::out_of_range(format!("iterations must be {ITERATIONS_ACCEPTED} (got 0)")));
    }
    let Differences { values: diffs, resolution } = differences(a, b, "randomization_test", 1)?;
    let observed = diffs.iter().sum::<f64>().abs();
    // Compare sums, not means. A flipped sum within what rounding can move a sum (each difference's
    // resolution, and the additions' own rounding) counts as reaching the observed one: ties stay
    // ties in every unit, and identical systems give p = 1.
    let n = diffs.len() as f64;
    let tolerance = n * (resolution + 2.0 * f64::EPSILON * diffs.iter().map(|d| d.abs()).sum::<f64>());
    let threshold = observed - tolerance;
    if let Some(p) = exhaustive_p_value(&diffs, iterations, threshold)? {
        return Ok(p);
    }
    let mut rng = SplitMix(seed);
    let mut at_least = 0_u64;
    let mut ticker = crate::interrupt::Ticker::new();
    for _ in 0..iterations {
        ticker.tick(diffs.len())?;
        let mut sum = 0.0;
        let mut bits = 0_u64;
        for (i, d) in diffs.iter().enumerate() {
            if i % 64 == 0 {
                bits = rng.next();
            }
            sum += if bits & 1 == 1 { *d } else { -*d };
            bits >>= 1;
        }
        if sum.abs() >= threshold {
            at_least += 1;
        }
    }
    Ok((at_least + 1) as f64 / (f64::from(iterations) + 1.0))
}

/// The exact p-value over every sign flip, when there are at most `iterations` of them (n <= 32,
/// as `iterations` is a u32): no more work than the random flips asked for. A flip and its mirror
/// image have sums of opposite sign and equal magnitude (negation is exact and the terms are added
/// in the same order), so only the flips that keep the last difference's sign are summed.
fn exhaustive_p_value(diffs: &[f64], iterations: u32, threshold: f64) -> Result<Option<f64>, FusionError> {
    let Some(n) = u32::try_from(diffs.len()).ok().filter(|&n| n <= 32 && 1_u64 << n <= u64::from(iterations)) else {
        return Ok(None);
    };
    let half = 1_u64 << (n - 1);
    let mut at_least = 0_u64;
    let mut ticker = crate::interrupt::Ticker::new();
    for mask in half..2 * half {
        ticker.tick(diffs.len())?;
        let sum: f64 = diffs.iter().enumerate().map(|(i, d)| if mask >> i & 1 == 1 { *d } else { -*d }).sum();
        at_least += u64::from(sum.abs() >= threshold);
    }
    Ok(Some(at_least as f64 / half as f64))
}

/// The paired t-test of mean(a - b) = 0: the t statistic and its two-sided p-value, as
/// `scipy.stats.ttest_rel` gives them. Identical differences (zero variance) give t = ±inf and p = 0
/// when they are not zero (scipy: the same), t = 0 and p = 1 when they are all zero (identical
/// systems, like the randomization test; scipy: NaN).
///
/// # Errors
/// Unequal lengths, fewer than two pairs (no variance to test against), or a value that is not finite.
pub fn paired_t(a: &[f64], b: &[f64]) -> Result<(f64, f64), FusionError> {
    let Differences { values: diffs, resolution } = differences(a, b, "paired_t", 2)?;
    let count = diffs.len() as f64;
    let mean = diffs.iter().sum::<f64>() / count;
    // A mean within rounding of zero is zero (each difference is known to its resolution, and the
    // sum adds an EPSILON per term in this unit), and differences equal but for rounding have no
    // variance to test against.
    if mean.abs() <= resolution + count * f64::EPSILON {
        return Ok((0.0, 1.0));
    }
    if diffs.iter().all(|d| (d - mean).abs() <= resolution) {
        return Ok((f64::INFINITY.copysign(mean), 0.0));
    }
    // Two-pass variance: no cancellation when the differences are large and close together.
    let variance = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (count - 1.0);
    let t = mean / (variance / count).sqrt();
    Ok((t, student_t_two_sided(t, count - 1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loops a caller's number makes long, sign flips drawn (`iterations` up to 2^32 - 1) or
    /// counted (2^31 for 32 pairs), stop on the first poll.
    #[test]
    fn the_sign_flip_loops_stop_on_a_signal() {
        use crate::error::FusionError;
        use crate::interrupt::run_polling;
        let (a, b) = (vec![0.25; 1000], vec![0.5; 1000]);
        let drawn = run_polling(Box::new(|| true), || randomization_test(&a, &b, u32::MAX, 0));
        assert_eq!(drawn, Err(FusionError::Interrupted));
        let (a, b) = (vec![0.25; 32], vec![0.5; 32]);
        let counted = run_polling(Box::new(|| true), || randomization_test(&a, &b, u32::MAX, 0));
        assert_eq!(counted, Err(FusionError::Interrupted));
    }

    /// The p-value of [`paired_t`].
    fn paired_t_p(a: &[f64], b: &[f64]) -> Result<f64, FusionError> {
        paired_t(a, b).map(|(_, p)| p)
    }

    #[test]
    fn paired_t_edge_cases() {
        let a = [0.1, 0.5, 0.3, 0.9];
        assert!((paired_t_p(&a, &a).unwrap() - 1.0).abs() < 1e-15);
        let shifted: Vec<f64> = a.iter().map(|x| x + 0.25).collect();
        assert!(paired_t_p(&shifted, &a).unwrap().abs() < 1e-15);
        // scipy.stats.ttest_rel([1, 2, 3, 5], [1, 1, 2, 2]).pvalue
        let p = paired_t_p(&[1.0, 2.0, 3.0, 5.0], &[1.0, 1.0, 2.0, 2.0]).unwrap();
        assert!((p - 0.141_121_939_714_034_47).abs() < 1e-12);
    }

    #[test]
    fn large_differences_give_the_p_value_of_the_scaled_down_data() {
        let (a, b) = ([1.0, 2.0, 3.0, 5.0], [1.0, 1.0, 2.0, 2.0]);
        let big = |x: &[f64]| x.iter().map(|v| v * 1e300).collect::<Vec<_>>();
        let p = paired_t_p(&a, &b).unwrap();
        assert!((paired_t_p(&big(&a), &big(&b)).unwrap() - p).abs() < 1e-12);
        let r = randomization_test(&a, &b, 1000, 3).unwrap();
        assert!((randomization_test(&big(&a), &big(&b), 1000, 3).unwrap() - r).abs() < 1e-12);
    }

    #[test]
    fn p_values_do_not_depend_on_the_unit_of_the_scores() {
        // Metric-like scores of 30 queries; scaled, each value is rounded once more.
        let run: Vec<f64> = (0..30).map(|i| f64::from((7 * i) % 13) / 12.0).collect();
        let baseline: Vec<f64> = (0..30).map(|i| f64::from((5 * i + 3) % 11) / 10.0).collect();
        let flips = randomization_test(&run, &baseline, 10_000, 0).unwrap();
        let student = paired_t_p(&run, &baseline).unwrap();
        for unit in [1e-12, 1e-16, 1e-200, 1e-300, 3.7, 1e300] {
            let scaled = |values: &[f64]| values.iter().map(|v| v * unit).collect::<Vec<f64>>();
            let (run_s, baseline_s) = (scaled(&run), scaled(&baseline));
            assert!((randomization_test(&run_s, &baseline_s, 10_000, 0).unwrap() - flips).abs() < 1e-15, "{unit}");
            assert!((paired_t_p(&run_s, &baseline_s).unwrap() - student).abs() <= 1e-9 * student, "{unit}");
        }
    }

    #[test]
    fn bad_samples_are_refused_with_the_offending_value() {
        let err = |r: Result<f64, FusionError>| r.unwrap_err().to_string();
        assert!(err(paired_t_p(&[1.0], &[0.0])).contains("at least 2 pairs (got 1)"));
        assert!(err(randomization_test(&[], &[], 10, 0)).contains("at least 1 pair (got 0)"));
        assert!(err(paired_t_p(&[1.0, 2.0], &[1.0])).contains("equal lengths (got 2 and 1)"));
        assert!(err(randomization_test(&[0.5, f64::NAN], &[0.0, 0.0], 10, 0)).contains("a[1] is NaN"));
        assert!(err(paired_t_p(&[0.5, 0.1], &[0.0, f64::INFINITY])).contains("b[1] is inf"));
        assert!(err(paired_t_p(&[1e308, 0.0], &[-1e308, 0.0])).contains("a[0] - b[0]"));
        assert!(err(randomization_test(&[1.0], &[0.0], 0, 0)).contains("iterations must be an int from 1"));
    }

    #[test]
    fn small_samples_get_the_exact_p_value_whatever_the_seed() {
        // Sums of ±1 ±2 ±3: 6, 4, 2, 0, 0, -2, -4, -6; two of the eight reach |6|.
        let (a, b) = ([1.0, 2.0, 3.0], [0.0; 3]);
        for seed in [0, 1, u64::MAX] {
            assert!((randomization_test(&a, &b, 8, seed).unwrap() - 0.25).abs() < 1e-15);
        }
        // Fewer iterations than the 8 flips: drawn at random, (count + 1) / (5 + 1), off the 1/8 grid.
        assert!((randomization_test(&a, &b, 5, 1).unwrap() - 2.0 / 6.0).abs() < 1e-15);
        assert!((randomization_test(&[0.5], &[0.25], 2, 0).unwrap() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn identical_systems_are_not_significant_and_a_clear_gap_is() {
        let a: Vec<f64> = (0..50).map(|i| f64::from(i % 7) / 7.0).collect();
        assert!((randomization_test(&a, &a, 1000, 1).unwrap() - 1.0).abs() < 1e-12);
        let b: Vec<f64> = a.iter().map(|x| x + 0.2).collect();
        assert!(randomization_test(&b, &a, 1000, 1).unwrap() < 0.01);
    }
}
