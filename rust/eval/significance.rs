//! Paired significance of the difference between two systems' per-query scores: a two-sided
//! randomization (sign-flip permutation) test with a fixed seed, so reruns print the same p-value.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_systems_are_not_significant_and_a_clear_gap_is() {
        let a: Vec<f64> = (0..50).map(|i| f64::from(i % 7) / 7.0).collect();
        assert!((randomization_test(&a, &a, 1000, 1) - 1.0).abs() < 1e-12);
        let b: Vec<f64> = a.iter().map(|x| x + 0.2).collect();
        assert!(randomization_test(&b, &a, 1000, 1) < 0.01);
    }
}
