//! Tukey's honestly significant difference test over k groups, as `scipy.stats.tukey_hsd` computes
//! it: the groups are independent samples (one-way ANOVA), the pooled variance is the mean square
//! error with N - k degrees of freedom, and each pair's p-value is the upper tail of the studentized
//! range distribution at |mean_i - mean_j| / sqrt(MSE / 2 (1/n_i + 1/n_j)).
//!
//! The studentized range distribution is the double integral
//! P(Q >= q) = ∫ f(s) (1 - W(q s)) ds over the scaled chi distribution f of ν degrees of freedom,
//! with W(w) = k ∫ φ(z) (Φ(z) - Φ(z - w))^(k-1) dz, both by composite Gauss-Legendre quadrature
//! (the outer one in ln s, where f is close to a bell for every ν).

use super::distributions::normal_two_sided;
use super::significance::{scale_by_power_of_two, to_unit, RESOLUTION_ULPS};
use crate::error::FusionError;

/// Gauss-Legendre nodes per panel, and panels of the inner and outer integrals.
const NODES: usize = 10;
const INNER_PANELS: usize = 20;
const OUTER_PANELS: usize = 14;
/// φ(z) < 1e-17 beyond this: the inner integral's range.
const Z_LIMIT: f64 = 9.0;
/// The outer integrand is cut where it is below e^-40 of its peak.
const LOG_CUT: f64 = 40.0;

/// What the groups are, as messages name them.
pub const GROUPS: &str = "sequences of numbers";

/// `(mean_i - mean_j, p)` for every pair of groups, as a k x k matrix (the diagonal is (0, 1)).
///
/// # Errors
/// Fewer than two groups, a group with no value, no degree of freedom left (every group of one
/// value), or a value that is not finite.
pub fn tukey_hsd(groups: &[Vec<f64>]) -> Result<Vec<Vec<(f64, f64)>>, FusionError> {
    let k = groups.len();
    if k < 2 {
        return Err(FusionError::invalid(format!("tukey_hsd needs at least 2 groups (got {k})")));
    }
    for (g, group) in groups.iter().enumerate() {
        if group.is_empty() {
            return Err(FusionError::invalid(format!("tukey_hsd: group {g} is empty")));
        }
        if let Some((i, v)) = group.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(FusionError::invalid(format!(
                "tukey_hsd: groups[{g}][{i}] is {v}; every value must be a finite number"
            )));
        }
    }
    let total: usize = groups.iter().map(Vec::len).sum();
    if total <= k {
        return Err(FusionError::invalid(format!(
            "tukey_hsd needs more values than groups (got {total} values in {k} groups)"
        )));
    }
    // In one unit whatever the scores' (exact: a power of two), so that neither the p-values nor
    // the test of zero variance depend on it, and no square underflows or overflows.
    let mut values: Vec<f64> = groups.iter().flatten().copied().collect();
    let exponent = to_unit(&mut values);
    let mut rest = values.as_slice();
    let groups: Vec<&[f64]> = groups
        .iter()
        .map(|g| {
            let (group, after) = rest.split_at(g.len());
            rest = after;
            group
        })
        .collect();
    // What rounding alone can move a value by, in that unit (see significance::Differences).
    let resolution = RESOLUTION_ULPS * f64::EPSILON * values.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let means: Vec<f64> = groups.iter().map(|g| g.iter().sum::<f64>() / g.len() as f64).collect();
    let squares: f64 = groups.iter().zip(&means).map(|(g, m)| g.iter().map(|x| (x - m).powi(2)).sum::<f64>()).sum();
    let df = (total - k) as f64;
    let mse = squares / df;
    let constant = groups.iter().zip(&means).all(|(g, m)| g.iter().all(|x| (x - m).abs() <= resolution));
    let distribution = StudentizedRange::new(k, df);
    let mut out = vec![vec![(0.0, 1.0); k]; k];
    for i in 0..k {
        for j in i + 1..k {
            // One integral per pair: thousands of runs make minutes of them.
            crate::interrupt::checkpoint()?;
            let difference = means[i] - means[j];
            let error = (mse / 2.0 * (1.0 / groups[i].len() as f64 + 1.0 / groups[j].len() as f64)).sqrt();
            let p = if !constant {
                distribution.sf(difference.abs() / error)
            } else if difference.abs() <= resolution {
                1.0
            } else {
                0.0
            };
            // The difference in the scores' own unit again.
            let difference = scale_by_power_of_two(difference, -exponent);
            out[i][j] = (difference, p);
            out[j][i] = (-difference, p);
        }
    }
    Ok(out)
}

/// The studentized range distribution of k means and ν degrees of freedom.
struct StudentizedRange {
    k: usize,
    /// Outer nodes: ln s as s, and the normalized weight of f there.
    outer: Vec<(f64, f64)>,
    /// Inner nodes: z, weight times φ(z), and Φ(z).
    inner: Vec<(f64, f64, f64)>,
}

impl StudentizedRange {
    fn new(k: usize, df: f64) -> Self {
        let rule = gauss_legendre(NODES);
        // ln of f in ln s, up to a constant: ν u - ν e^(2u) / 2, peak at u = 0.
        let log_density = |u: f64| df * u - df * (2.0 * u).exp_m1() / 2.0;
        let low = bisect(|u| log_density(u) + LOG_CUT, -LOG_CUT / df - 50.0, 0.0);
        let high = bisect(|u| -(log_density(u) + LOG_CUT), 0.0, 10.0);
        let mut outer = composite(&rule, low, high, OUTER_PANELS, |u, w| (u.exp(), w * log_density(u).exp()));
        let norm: f64 = outer.iter().map(|(_, w)| w).sum();
        for node in &mut outer {
            node.1 /= norm;
        }
        let inner = composite(&rule, -Z_LIMIT, Z_LIMIT, INNER_PANELS, |z, w| {
            (z, w * (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt(), normal_cdf(z))
        });
        Self { k, outer, inner }
    }

    /// P(Q >= q).
    fn sf(&self, q: f64) -> f64 {
        let exponent = i32::try_from(self.k - 1).unwrap_or(i32::MAX);
        let range_cdf = |w: f64| {
            let k = self.k as f64;
            k * self.inner.iter().map(|(z, weight, cdf)| weight * (cdf - normal_cdf(z - w)).powi(exponent)).sum::<f64>()
        };
        self.outer.iter().map(|(s, weight)| weight * (1.0 - range_cdf(q * s))).sum::<f64>().clamp(0.0, 1.0)
    }
}

/// Φ(x), from the two-sided tail so that both tails keep their precision.
fn normal_cdf(x: f64) -> f64 {
    let tail = normal_two_sided(x) / 2.0;
    if x < 0.0 {
        tail
    } else {
        1.0 - tail
    }
}

/// The root of the increasing-then-crossing `f` between `low` (f < 0) and `high` (f >= 0).
fn bisect(f: impl Fn(f64) -> f64, mut low: f64, mut high: f64) -> f64 {
    for _ in 0..200 {
        let middle = f64::midpoint(low, high);
        if f(middle) < 0.0 {
            low = middle;
        } else {
            high = middle;
        }
    }
    f64::midpoint(low, high)
}

/// The nodes of `rule` over `panels` equal panels of [low, high], mapped by `node(x, weight)`.
fn composite<T>(rule: &[(f64, f64)], low: f64, high: f64, panels: usize, node: impl Fn(f64, f64) -> T) -> Vec<T> {
    let width = (high - low) / panels as f64;
    (0..panels)
        .flat_map(|p| {
            let centre = low + (p as f64 + 0.5) * width;
            rule.iter().map(move |(x, w)| (centre + x * width / 2.0, w * width / 2.0))
        })
        .map(|(x, w)| node(x, w))
        .collect()
}

/// Gauss-Legendre nodes and weights on [-1, 1]: roots of P_n by Newton's method from Chebyshev
/// guesses.
fn gauss_legendre(n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|i| {
            let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            let mut derivative = 1.0;
            for _ in 0..100 {
                // P_n(x) and P_n'(x) by the three-term recurrence.
                let (mut previous, mut current) = (1.0, x);
                for m in 2..=n {
                    let m = m as f64;
                    (previous, current) = (current, ((2.0 * m - 1.0) * x * current - (m - 1.0) * previous) / m);
                }
                derivative = n as f64 * (x * current - previous) / (x * x - 1.0);
                let step = current / derivative;
                x -= step;
                if step.abs() < 1e-16 {
                    break;
                }
            }
            (x, 2.0 / ((1.0 - x * x) * derivative * derivative))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_legendre_integrates_polynomials_exactly() {
        let rule = gauss_legendre(NODES);
        assert!((rule.iter().map(|(_, w)| w).sum::<f64>() - 2.0).abs() < 1e-14);
        // ∫ x^18 over [-1, 1] = 2 / 19: degree 2n - 2 is within the rule's exactness.
        assert!((rule.iter().map(|(x, w)| w * x.powi(18)).sum::<f64>() - 2.0 / 19.0).abs() < 1e-14);
    }

    #[test]
    fn studentized_range_of_two_means_is_a_scaled_t() {
        // With k = 2, Q = sqrt(2) |T|: P(Q >= q) = P(|T| >= q / sqrt(2)).
        for (df, q) in [(5.0, 3.0), (30.0, 2.5), (400.0, 4.0)] {
            let expected = super::super::distributions::student_t_two_sided(q / 2_f64.sqrt(), df);
            let p = StudentizedRange::new(2, df).sf(q);
            assert!((p - expected).abs() < 1e-10, "df={df} q={q}: {p} vs {expected}");
        }
    }

    #[test]
    fn bad_groups_are_refused() {
        let err = |groups: &[Vec<f64>]| tukey_hsd(groups).unwrap_err().to_string();
        assert!(err(&[vec![1.0]]).contains("at least 2 groups (got 1)"));
        assert!(err(&[vec![1.0], vec![]]).contains("group 1 is empty"));
        assert!(err(&[vec![1.0], vec![2.0]]).contains("more values than groups"));
        assert!(err(&[vec![1.0, f64::NAN], vec![2.0]]).contains("groups[0][1] is NaN"));
    }
}
