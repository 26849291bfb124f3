//! The objective's trend over the last fifth: a least-squares line through the
//! measurements, its change's standard error from each measurement's Monte Carlo standard
//! error, and whether the measurements scatter about the line by more than those errors say.

/// A least-squares line through `(t_i, y_i)` and its change over the span of `t`.
pub(super) struct Line {
    /// The slope times `t_last - t_first`.
    pub(super) drift: f64,
    /// The slope.
    slope: f64,
    /// The line's value at the mean of `t`.
    level: f64,
    /// The mean of `t`.
    tbar: f64,
}

impl Line {
    pub(super) fn fit(t: &[f64], y: &[f64]) -> Line {
        let n = t.len() as f64;
        let tbar = t.iter().sum::<f64>() / n;
        let ybar = y.iter().sum::<f64>() / n;
        let sxx: f64 = t.iter().map(|x| (x - tbar) * (x - tbar)).sum();
        let sxy: f64 = t.iter().zip(y).map(|(x, v)| (x - tbar) * (v - ybar)).sum();
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        Line {
            drift: slope * (t[t.len() - 1] - t[0]),
            slope,
            level: ybar,
            tbar,
        }
    }

    /// The standard error of `drift` when each `y_i` has a known standard error `se_i`:
    /// the slope is `sum_i w_i y_i` with `w_i = (t_i - tbar) / Sxx`.
    pub(super) fn drift_se_known(&self, t: &[f64], se: &[f64]) -> f64 {
        let n = t.len() as f64;
        let tbar = t.iter().sum::<f64>() / n;
        let sxx: f64 = t.iter().map(|x| (x - tbar) * (x - tbar)).sum();
        if sxx <= 0.0 {
            return f64::INFINITY;
        }
        let var: f64 = t
            .iter()
            .zip(se)
            .map(|(x, s)| ((x - tbar) / sxx).powi(2) * s * s)
            .sum();
        var.sqrt() * (t[t.len() - 1] - t[0])
    }
}

/// How the measurements scatter about their line: a measurement's Monte Carlo standard
/// error says how far it may lie from the value at its iterate, so a scatter far beyond it
/// means the iterates themselves move between measurements. Scatter that is correlated from
/// one measurement to the next is a trend the line does not follow (a curve: the values are
/// still on their way); uncorrelated scatter is the values jumping about (a step too large).
pub(super) struct Scatter {
    /// `sum_i (residual_i / se_i)^2 / (n - 2)`: 1 when the residuals are Monte Carlo noise.
    pub(super) dispersion: f64,
    /// The lag-one autocorrelation of the residuals.
    pub(super) lag1: f64,
    /// How many measurements.
    n: usize,
}

/// The `z` of a one-sided test at level 0.1 %.
const Z_ONE_PERMILLE: f64 = 3.090;

impl Scatter {
    pub(super) fn of(line: &Line, t: &[f64], y: &[f64], se: &[f64]) -> Scatter {
        let res: Vec<f64> = t
            .iter()
            .zip(y)
            .map(|(x, v)| v - (line.level + line.slope * (x - line.tbar)))
            .collect();
        let n = res.len();
        let dof = n.saturating_sub(2).max(1) as f64;
        let dispersion = res
            .iter()
            .zip(se)
            .map(|(r, s)| (r / s) * (r / s))
            .sum::<f64>()
            / dof;
        let ss: f64 = res.iter().map(|r| r * r).sum();
        let lag1 = if ss > 0.0 {
            res.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / ss
        } else {
            0.0
        };
        Scatter {
            dispersion,
            lag1,
            n,
        }
    }

    /// Whether the values jump between measurements: the dispersion beyond the upper 0.1 %
    /// point of its chi-square (over `n - 2` degrees of freedom, by Wilson and Hilferty's
    /// approximation) and the residuals' lag-one autocorrelation below two of its standard
    /// errors (`1 / sqrt(n)`) for uncorrelated residuals. Never with fewer than five
    /// measurements, nor when a standard error is zero (an exact objective).
    pub(super) fn jumps(&self) -> bool {
        if self.n < 5 || !self.dispersion.is_finite() {
            return false;
        }
        let k = (self.n - 2) as f64;
        let a = 2.0 / (9.0 * k);
        let quantile = (1.0 - a + Z_ONE_PERMILLE * a.sqrt()).powi(3);
        self.dispersion > quantile && self.lag1 < 2.0 / (self.n as f64).sqrt()
    }
}
