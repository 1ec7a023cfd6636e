//! Paired significance of the difference between two systems' per-query scores: a two-sided
//! randomization (sign-flip permutation) test with a fixed seed, so reruns print the same p-value,
//! and a two-sided paired Student t-test (the one `scipy.stats.ttest_rel` computes).

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

/// p-value of H0 "a and b come from the same system": the share of `iterations` random sign flips
/// of the paired differences whose |mean| is at least the observed one, with the +1 correction.
///
/// # Panics
/// If `a` and `b` differ in length (the binding checks this first).
#[must_use]
pub fn randomization_test(a: &[f64], b: &[f64], iterations: u32, seed: u64) -> f64 {
    assert_eq!(a.len(), b.len(), "paired samples must have equal length");
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let observed = diffs.iter().sum::<f64>().abs();
    // Compare sums, not means, and allow for rounding so identical systems give p = 1.
    let tolerance = 1e-12 * diffs.iter().map(|d| d.abs()).sum::<f64>().max(1.0);
    let mut rng = SplitMix(seed);
    let mut at_least = 0_u64;
    for _ in 0..iterations {
        let mut sum = 0.0;
        let mut bits = 0_u64;
        for (i, d) in diffs.iter().enumerate() {
            if i % 64 == 0 {
                bits = rng.next();
            }
            sum += if bits & 1 == 1 { *d } else { -*d };
            bits >>= 1;
        }
        if sum.abs() >= observed - tolerance {
            at_least += 1;
        }
    }
    (at_least + 1) as f64 / (f64::from(iterations) + 1.0)
}

/// Two-sided p-value of the paired t-test of mean(a - b) = 0, as `scipy.stats.ttest_rel` gives it.
/// Fewer than two pairs give NaN (no variance to test against). Identical differences (zero variance)
/// give 1 when they are all zero (identical systems, like the randomization test) and 0 otherwise.
///
/// # Panics
/// If `a` and `b` differ in length (the binding checks this first).
#[must_use]
pub fn paired_t_test(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "paired samples must have equal length");
    let n = a.len();
    if n < 2 {
        return f64::NAN;
    }
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let count = n as f64;
    let mean = diffs.iter().sum::<f64>() / count;
    // Two-pass variance: no cancellation when the differences are large and close together.
    let variance = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (count - 1.0);
    // Rounding can leave a tiny mean and variance for identical inputs; treat both relative to the data.
    let scale = diffs.iter().map(|d| d.abs()).fold(0.0, f64::max);
    if variance <= (1e-15 * scale).powi(2) {
        return if mean.abs() <= 1e-12 * scale.max(f64::MIN_POSITIVE) { 1.0 } else { 0.0 };
    }
    let t = mean / (variance / count).sqrt();
    student_t_two_sided(t, count - 1.0)
}

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2).
fn student_t_two_sided(t: f64, df: f64) -> f64 {
    regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// I_x(a, b) by the continued fraction of Numerical Recipes (modified Lentz), using the symmetry
/// I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges slowly.
fn regularized_incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        (ln_front.exp() * beta_fraction(a, b, x) / a).clamp(0.0, 1.0)
    } else {
        (1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b).clamp(0.0, 1.0)
    }
}

#[allow(clippy::many_single_char_names)] // the names of the Lentz recurrence in Numerical Recipes
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=10_000 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 by the Lanczos approximation (g = 7, 9 terms; ~1e-15 relative), since
/// `f64::ln_gamma` is not stable Rust.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1-x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_distribution_matches_known_values() {
        // Two-sided critical values from standard t tables: P(|T| >= t) = 0.05 and 0.01.
        for (t, df, p) in [(12.706_204_736, 1.0, 0.05), (2.228_138_852, 10.0, 0.05), (2.845_339_707, 20.0, 0.01)] {
            assert!((student_t_two_sided(t, df) - p).abs() < 1e-8, "t={t} df={df}");
        }
        // df = 1 is the Cauchy distribution: P(|T| >= 1) = 1/2 exactly.
        assert!((student_t_two_sided(1.0, 1.0) - 0.5).abs() < 1e-13);
        assert!((student_t_two_sided(0.0, 5.0) - 1.0).abs() < 1e-15);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
        assert!((ln_gamma(10.0) - 362_880_f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn paired_t_test_edge_cases() {
        let a = [0.1, 0.5, 0.3, 0.9];
        assert!((paired_t_test(&a, &a) - 1.0).abs() < 1e-15);
        let shifted: Vec<f64> = a.iter().map(|x| x + 0.25).collect();
        assert!(paired_t_test(&shifted, &a).abs() < 1e-15);
        assert!(paired_t_test(&[1.0], &[0.0]).is_nan());
        // scipy.stats.ttest_rel([1, 2, 3, 5], [1, 1, 2, 2]).pvalue
        assert!((paired_t_test(&[1.0, 2.0, 3.0, 5.0], &[1.0, 1.0, 2.0, 2.0]) - 0.141_121_939_714_034_47).abs() < 1e-12);
    }

    #[test]
    fn identical_systems_are_not_significant_and_a_clear_gap_is() {
        let a: Vec<f64> = (0..50).map(|i| f64::from(i % 7) / 7.0).collect();
        assert!((randomization_test(&a, &a, 1000, 1) - 1.0).abs() < 1e-12);
        let b: Vec<f64> = a.iter().map(|x| x + 0.2).collect();
        assert!(randomization_test(&b, &a, 1000, 1) < 0.01);
    }
}
