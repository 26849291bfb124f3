//! The objective's trend over the last fifth: a least-squares line through the
//! measurements, its change's standard error from each measurement's Monte Carlo standard
//! error, and whether the measurements scatter about the line by more than those errors say.

/// A least-squares line through `(t_i, y_i)` and its change over the span of `t`.
pub(super) struct Line {
    /// The slope times `t_last - t_first`.
    pub(super) drift: f64,
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
