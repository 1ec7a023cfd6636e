//! Distribution functions of the significance tests: Student's t (through the regularized
//! incomplete beta function) and the standard normal (through the regularized incomplete gamma
//! function), in plain f64 so that no statistics library is needed at run time.

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2).
pub(super) fn student_t_two_sided(t: f64, df: f64) -> f64 {
    regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// P(|Z| >= |z|) for the standard normal: erfc(|z|/√2), which is Q(1/2, z²/2), the regularized
/// upper incomplete gamma function.
pub(super) fn normal_two_sided(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    upper_incomplete_gamma(0.5, z * z / 2.0).clamp(0.0, 1.0)
}

/// Q(a, x) = Γ(a, x) / Γ(a): the series of P = 1 - Q below x = a + 1, the continued fraction
/// (modified Lentz) of Q above, each where it converges fast and keeps relative precision.
#[allow(clippy::many_single_char_names)] // the names of the series and of Lentz's recurrence in Numerical Recipes
fn upper_incomplete_gamma(a: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    if x <= 0.0 {
        return 1.0;
    }
    if x.is_infinite() {
        return 0.0;
    }
    let ln_front = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut denominator) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            denominator += 1.0;
            term *= x / denominator;
            sum += term;
            if term.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        return 1.0 - sum * ln_front.exp();
    }
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..=10_000 {
        let i = f64::from(i);
        let an = -i * (i - a);
        b += 2.0;
        let delta = lentz_step(&mut c, &mut d, an, b);
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    ln_front.exp() * h
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
        let delta = lentz_step(&mut c, &mut d, aa, 1.0);
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// One step of the modified Lentz method for a continued fraction with partial numerator `a` and
/// denominator `b`: updates C and D (kept away from zero) and returns the factor of the estimate.
fn lentz_step(c: &mut f64, d: &mut f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let away_from_zero = |x: f64| if x.abs() < TINY { TINY } else { x };
    *d = 1.0 / away_from_zero(b + a * *d);
    *c = away_from_zero(b + a / *c);
    *d * *c
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
    fn normal_tails_match_known_values() {
        // 2 * (1 - Φ(z)) for z = 1.959963984540054 (the 95% quantile), 1, 3 and 8.
        for (z, p) in [
            (1.959_963_984_540_054, 0.05),
            (1.0, 0.317_310_507_862_914_15),
            (3.0, 0.002_699_796_063_260_186_6),
            (8.0, 1.244_192_114_854_348e-15),
        ] {
            assert!((normal_two_sided(z) - p).abs() <= 1e-13 * p, "z={z}");
            assert!((normal_two_sided(-z) - p).abs() <= 1e-13 * p, "z=-{z}");
        }
        assert!((normal_two_sided(0.0) - 1.0).abs() < 1e-15);
    }
}
