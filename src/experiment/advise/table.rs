//! How an advice report prints: the table of estimators with every pilot number to the
//! digits its standard error allows, the bias check and the recommendation.
//!
//! Why apart from the pilot (`advise.rs`): the rounding of an estimate to its error is a
//! rule of its own, tested on its own.

use super::AdviseReport;

/// `x ± se` with the standard error to two significant digits and `x` to the same decimal
/// place, at most three significant digits of `x` (in scientific notation outside
/// `[0.001, 10^5)`); `x` alone to three significant digits when there is no error, and `0`
/// for an exact zero (Reparam's variance where no parameter reaches the objective).
pub fn with_se(x: f64, se: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = |v: f64| v.abs().log10().floor() as i32;
    let plain = x == 0.0 || (1e-3..1e5).contains(&x.abs());
    if !plain {
        let e = mag(x);
        let scale = 10f64.powi(e);
        return if se.is_finite() && se > 0.0 {
            let d = (mag(x) - mag(se) + 1).clamp(0, 2) as usize;
            format!("({:.d$} ± {:.d$})e{e}", x / scale, se / scale)
        } else {
            format!("{:.2}e{e}", x / scale)
        };
    }
    let top = if x == 0.0 { 0 } else { mag(x) };
    let three = 2 - top;
    let decimals = if se.is_finite() && se > 0.0 {
        (1 - mag(se)).min(three)
    } else {
        three
    }
    .max(0) as usize;
    if se.is_finite() && se > 0.0 {
        let se_text = format!("{se:.decimals$}");
        let se_text = if se_text.trim_start_matches(['0', '.']).is_empty() {
            format!("{se:.1e}")
        } else {
            se_text
        };
        format!("{x:.decimals$} ± {se_text}")
    } else {
        format!("{x:.decimals$}")
    }
}

impl std::fmt::Display for AdviseReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "model {}: recommended estimator: {}",
            self.model, self.recommendation
        )?;
        for r in &self.reasons {
            writeln!(f, "  - {r}")?;
        }
        writeln!(
            f,
            "if-statements {}, affine {} (LYY18 {}), depending on a parameter directly {}",
            self.if_statements,
            self.affine_guards,
            if self.lyy18_applicable {
                "applies"
            } else {
                "does not apply"
            },
            self.param_dependent_guards.len()
        )?;
        for g in self.param_dependent_guards.iter().take(10) {
            writeln!(f, "  {}: {}", g.location, g.reason)?;
        }
        if let Some(g) = &self.smoothing_gap {
            writeln!(f, "{g}")?;
        }
        writeln!(
            f,
            "pilot at the initial parameters: {} samples (seed {}); work-normalised variance \
             = cost x Avg(V(.)), as in Table 2; ± one standard error of the pilot (costs are \
             timed, their error not included)",
            self.pilot_samples, self.seed
        )?;
        writeln!(
            f,
            "  {:<8} {:>10} {:>20} {:>22} {:>18}  bias",
            "estimator", "µs/sample", "Avg(V(.))", "work x var", "/ Score"
        )?;
        for a in &self.estimators {
            if let Some(why) = &a.not_applicable {
                writeln!(f, "  {:<8} not applicable: {why}", a.estimator)?;
                continue;
            }
            let bias = match (a.biased, &a.bias_note) {
                (Some(true), Some(n)) => format!("biased: {n}"),
                (Some(true), None) => "biased".into(),
                (Some(false), Some(n)) => format!("unbiased: {n}"),
                (Some(false), None) => "unbiased".into(),
                (None, Some(n)) => n.clone(),
                (None, None) => "unknown".into(),
            };
            writeln!(
                f,
                "  {:<8} {:>10} {:>20} {:>22} {:>18}  {bias}",
                a.estimator,
                with_se(a.seconds_per_sample * 1e6, f64::NAN),
                with_se(a.avg_var, a.avg_var_se),
                with_se(a.work_normalised_var, a.work_normalised_var_se),
                with_se(a.work_ratio_to_score, a.work_ratio_to_score_se),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::with_se;

    #[test]
    fn estimates_show_two_digits_of_their_error_and_at_most_three_of_their_own() {
        assert_eq!(with_se(999.4, 120.0), "999 ± 120");
        assert_eq!(with_se(713.26, 95.3), "713 ± 95");
        assert_eq!(with_se(0.123456, 0.0123), "0.123 ± 0.012");
        assert_eq!(with_se(12.345678, 1e-6), "12.3 ± 1.0e-6");
        assert_eq!(with_se(1.0, 0.0), "1.00");
        assert_eq!(with_se(3.14159e-6, 2.2e-7), "(3.14 ± 0.22)e-6");
        assert_eq!(with_se(2.5e7, f64::NAN), "2.50e7");
        assert_eq!(with_se(f64::NAN, 1.0), "n/a");
        assert_eq!(with_se(0.0, 1e-44), "0");
    }
}
