//! Whether the last fifth of a run is stationary: the tests on the steps' own gradients and
//! on the optimised values that the convergence rule reads.
//!
//! The runner hands every step of the window (the iterations at or after 80 % of those asked
//! for) to a [`Window`], which keeps per-component sums over [`BATCHES`] consecutive batches
//! of steps: of the step's mean gradient, and of the optimised vector after the step. That is
//! all it keeps (`2 x BATCHES` sums per component), so it costs nothing next to a step.
//!
//! From the batch sums, per component of the optimised vector:
//!
//! - **the gradient**: the mean of the steps' gradients over the window and its standard
//!   error from the batch means (batch means absorb the autocorrelation that the iterate's
//!   slow motion gives the gradients). At a stationary point the estimator's gradient has mean
//!   zero, so `|mean| / se` must be within the two-sided `t` quantile with `BATCHES - 1`
//!   degrees of freedom at [`LEVEL`], Bonferroni over the components. A biased estimator
//!   (Reparam on latent-dependent jumps) passes at its own stationary point, which is not the
//!   program's: the rule says so where the estimator is known to be biased.
//! - **the values**: the difference of the means of the window's two halves against its
//!   standard error from the batch means of each half (a drift); same level, same correction.
//!   At a fixed step size Adam's iterate on the paper's models returns more slowly than a
//!   batch even where it sits at the optimum, so batch means are correlated: both standard
//!   errors are widened by the AR(1) factor of the batch means' lag-1 autocorrelation, and
//!   a slow walk away from the optimum is left to `convergence.rs`'s resolution test (a
//!   gradient too noisy to locate the optimum cannot vouch for it).
//! - **how the values moved**: the net move over the window, the path (sum of absolute
//!   steps), the spread of the batch means and the gradient's root mean square, which the
//!   verdict's advice reads (a steady climb wants a larger step, a bouncing or stalled one a
//!   smaller one).
//!
//! Nothing here reads the objective; `convergence.rs` combines these tests with the
//! measurements' and words the verdict.

use crate::special::probit;

/// Batches of consecutive steps in the window.
pub const BATCHES: usize = 20;
/// The family-wise false-alarm rate of each test over all components.
pub const LEVEL: f64 = 0.01;

/// The per-batch sums of the window's steps.
#[derive(Clone, Debug)]
pub struct Window {
    /// The window's first iteration and the iteration after its last.
    from: u64,
    to: u64,
    dim: usize,
    batches: usize,
    /// `[b * dim + p]`: sums over batch `b` of component `p`'s gradient and value.
    gradient: Vec<f64>,
    value: Vec<f64>,
    count: Vec<u64>,
    /// Per component: the sum of `|step|` over the window, and the value before its first
    /// step and after its last.
    path: Vec<f64>,
    /// Per component: the sum of the squared gradients over the window.
    gradient_sq: Vec<f64>,
    first: Vec<f64>,
    last: Vec<f64>,
    /// The value before the step being recorded.
    before: Vec<f64>,
    steps: u64,
}

impl Window {
    /// The window of a run of `iterations` steps over a vector of `dim` components: the last
    /// fifth, `iterations - iterations / 5 .. iterations`.
    pub fn new(iterations: u64, dim: usize) -> Window {
        let from = iterations - iterations / 5;
        let len = iterations - from;
        let batches = (BATCHES as u64).min(len) as usize;
        Window {
            from,
            to: iterations,
            dim,
            batches,
            gradient: vec![0.0; batches * dim],
            value: vec![0.0; batches * dim],
            count: vec![0; batches],
            path: vec![0.0; dim],
            gradient_sq: vec![0.0; dim],
            first: Vec::new(),
            last: vec![0.0; dim],
            before: vec![0.0; dim],
            steps: 0,
        }
    }

    /// The window's first iteration.
    pub fn from(&self) -> u64 {
        self.from
    }

    /// Whether step `k` is in the window.
    pub fn wants(&self, k: u64) -> bool {
        (self.from..self.to).contains(&k)
    }

    /// Step `k` is about to move the vector from `theta` (kept for [`Window::after`]).
    pub fn before(&mut self, k: u64, theta: &[f64]) {
        if self.wants(k) {
            self.before.copy_from_slice(theta);
        }
    }

    /// Step `k` moved the vector from what [`Window::before`] kept to `theta` along
    /// `gradient`.
    pub fn after(&mut self, k: u64, gradient: &[f64], theta: &[f64]) {
        if self.wants(k) {
            let before = std::mem::take(&mut self.before);
            self.record(k, &before, gradient, theta);
            self.before = before;
        }
    }

    /// Step `k` moved the vector from `before` to `after` along `gradient`.
    pub fn record(&mut self, k: u64, before: &[f64], gradient: &[f64], after: &[f64]) {
        if !self.wants(k) || self.batches == 0 {
            return;
        }
        let len = self.to - self.from;
        let b = ((k - self.from) * self.batches as u64 / len) as usize;
        let d = self.dim;
        if self.first.is_empty() {
            self.first = before.to_vec();
        }
        for p in 0..d {
            self.gradient[b * d + p] += gradient[p];
            self.value[b * d + p] += after[p];
            self.path[p] += (after[p] - before[p]).abs();
            self.gradient_sq[p] += gradient[p] * gradient[p];
        }
        self.last.copy_from_slice(after);
        self.count[b] += 1;
        self.steps += 1;
    }

    /// The tests, or `None` when fewer than 4 batches of the window were stepped (a short
    /// run, or one that ended early).
    pub fn assess(&self) -> Option<Stationarity> {
        if self.batches < 4 || self.count.contains(&0) {
            return None;
        }
        let (d, nb) = (self.dim, self.batches);
        let means = |sums: &[f64], p: usize| -> Vec<f64> {
            (0..nb)
                .map(|b| sums[b * d + p] / self.count[b] as f64)
                .collect()
        };
        let gradient_threshold = t_quantile(1.0 - LEVEL / (2.0 * d.max(1) as f64), nb - 1);
        let half = nb / 2;
        let drift_threshold = t_quantile(1.0 - LEVEL / (2.0 * d.max(1) as f64), nb - 2);
        let components = (0..d)
            .map(|p| {
                let g = means(&self.gradient, p);
                let (g_mean, g_var) = mean_var(&g);
                let v = means(&self.value, p);
                let (a, b) = v.split_at(half);
                let (a_mean, a_var) = mean_var(a);
                let (b_mean, b_var) = mean_var(b);
                let drift = b_mean - a_mean;
                let drift_se = (a_var / a.len() as f64 + b_var / b.len() as f64).sqrt()
                    * ar1_inflation(a).max(ar1_inflation(b));
                let (_, v_var) = mean_var(&v);
                ComponentTest {
                    gradient_rms: (self.gradient_sq[p] / self.steps as f64).sqrt(),
                    gradient_mean: g_mean,
                    gradient_se: (g_var / nb as f64).sqrt() * ar1_inflation(&g),
                    drift,
                    drift_se,
                    moved: self.last[p] - self.first.get(p).copied().unwrap_or(self.last[p]),
                    path: self.path[p],
                    spread: v_var.sqrt(),
                }
            })
            .collect();
        Some(Stationarity {
            from: self.from,
            to: self.to,
            batches: nb,
            steps: self.steps,
            gradient_threshold,
            drift_threshold,
            components,
        })
    }
}

/// One component's tests.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentTest {
    /// The root mean square of the steps' gradients (what Adam divides by).
    pub gradient_rms: f64,
    /// The mean of the steps' gradients over the window and its batch-means standard error.
    pub gradient_mean: f64,
    pub gradient_se: f64,
    /// The second half's mean value minus the first half's, and its standard error.
    pub drift: f64,
    pub drift_se: f64,
    /// The value after the window's last step minus before its first.
    pub moved: f64,
    /// The sum of the absolute steps over the window.
    pub path: f64,
    /// The standard deviation of the value's batch means.
    pub spread: f64,
}

impl ComponentTest {
    /// `|gradient mean| / se` (0 for an exactly zero mean, infinite for a non-zero mean with
    /// no spread).
    pub fn gradient_z(&self) -> f64 {
        ratio(self.gradient_mean, self.gradient_se)
    }

    /// `|drift| / se`, likewise.
    pub fn drift_z(&self) -> f64 {
        ratio(self.drift, self.drift_se)
    }
}

fn ratio(x: f64, se: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else if se > 0.0 {
        x.abs() / se
    } else {
        f64::INFINITY
    }
}

/// The tests on a run's window.
#[derive(Clone, Debug, PartialEq)]
pub struct Stationarity {
    pub from: u64,
    pub to: u64,
    pub batches: usize,
    pub steps: u64,
    /// What `gradient_z` and `drift_z` may reach under stationarity.
    pub gradient_threshold: f64,
    pub drift_threshold: f64,
    /// One per component of the optimised vector.
    pub components: Vec<ComponentTest>,
}

impl Stationarity {
    /// The component whose gradient is furthest from zero, with its `z`.
    pub fn worst_gradient(&self) -> Option<(usize, f64)> {
        worst(self.components.iter().map(ComponentTest::gradient_z))
    }

    /// The component whose values drift most, as a multiple of the threshold (1 is at it).
    pub fn worst_drift(&self) -> Option<(usize, f64)> {
        worst(
            self.components
                .iter()
                .map(|c| c.drift_z() / self.drift_threshold),
        )
    }
}

fn worst(scores: impl Iterator<Item = f64>) -> Option<(usize, f64)> {
    scores
        .enumerate()
        .filter(|(_, s)| !s.is_nan())
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The factor by which correlated batch means widen the standard error of their mean:
/// `sqrt((1 + r) / (1 - r))` for an AR(1) sequence with the lag-1 autocorrelation `r`
/// estimated from `x`, clipped to `[0, 0.9]` (a factor of at most 4.4). Adam's iterate at a
/// fixed step size returns to the optimum more slowly than a batch: without the factor its
/// wandering there would read as drift.
fn ar1_inflation(x: &[f64]) -> f64 {
    let (mean, var) = mean_var(x);
    if x.len() < 3 || var <= 0.0 {
        return 1.0;
    }
    let r = x
        .windows(2)
        .map(|w| (w[0] - mean) * (w[1] - mean))
        .sum::<f64>()
        / (var * (x.len() - 1) as f64);
    let r = r.clamp(0.0, 0.9);
    ((1.0 + r) / (1.0 - r)).sqrt()
}

/// Mean and sample variance (ddof 1; 0 for fewer than two values).
fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    if x.len() < 2 {
        return (mean, 0.0);
    }
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// The `p` quantile of Student's `t` with `df` degrees of freedom, from the normal quantile by
/// the Cornish-Fisher expansion to fourth order in `1 / df` (Abramowitz and Stegun 26.7.5):
/// within 0.1 % of the exact quantile for `df >= 10` up to `p = 1 - 1e-7`, and within 1 %
/// for `df >= 3` at `p <= 0.999`.
pub fn t_quantile(p: f64, df: usize) -> f64 {
    let x = probit(p);
    let n = df.max(1) as f64;
    let x2 = x * x;
    let g1 = (x2 + 1.0) * x / 4.0;
    let g2 = ((5.0 * x2 + 16.0) * x2 + 3.0) * x / 96.0;
    let g3 = (((3.0 * x2 + 19.0) * x2 + 17.0) * x2 - 15.0) * x / 384.0;
    let g4 = ((((79.0 * x2 + 776.0) * x2 + 1482.0) * x2 - 1920.0) * x2 - 945.0) * x / 92160.0;
    x + g1 / n + g2 / (n * n) + g3 / (n * n * n) + g4 / (n * n * n * n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::convergence::tests::noise;

    #[test]
    fn t_quantiles_match_tables() {
        // Tabulated two-sided critical values.
        for (p, df, t) in [
            (0.975, 10, 2.228139),
            (0.995, 19, 2.860935),
            (0.9995, 19, 3.883406),
            (0.975, 30, 2.042272),
            (0.999, 18, 3.610485),
        ] {
            let got = t_quantile(p, df);
            assert!((got - t).abs() < 2e-3 * t, "t({p}, {df}) = {got}, not {t}");
        }
    }

    /// A window fed a deterministic sequence.
    fn fed(iterations: u64, f: impl Fn(u64) -> (f64, f64)) -> Stationarity {
        let mut w = Window::new(iterations, 1);
        let mut prev = f(0).1;
        for k in 0..iterations {
            let (g, v) = f(k);
            w.record(k, &[prev], &[g], &[v]);
            prev = v;
        }
        w.assess().expect("a full window")
    }

    #[test]
    fn zero_mean_gradient_and_flat_values_pass() {
        let s = fed(10_000, |k| (noise(k), 0.37 + 0.01 * noise(k + 7)));
        let (_, z) = s.worst_gradient().unwrap();
        assert!(z < s.gradient_threshold, "{z}");
        let (_, d) = s.worst_drift().unwrap();
        assert!(d < 1.0, "{d}");
    }

    #[test]
    fn a_gradient_off_zero_fails_and_a_trend_drifts() {
        let s = fed(10_000, |k| (0.2 + noise(k), 0.37 + 1e-5 * k as f64));
        assert!(s.worst_gradient().unwrap().1 > s.gradient_threshold);
        assert!(s.worst_drift().unwrap().1 > 1.0);
        // Batch sums: the window is 8000..10000, in 20 batches of 100.
        assert_eq!((s.from, s.to, s.batches, s.steps), (8000, 10_000, 20, 2000));
        let c = &s.components[0];
        assert!((c.moved - 1e-5 * 2000.0).abs() < 1e-12, "{}", c.moved);
    }

    #[test]
    fn correlated_batch_means_widen_the_standard_error_and_independent_ones_do_not() {
        let ramp: Vec<f64> = (0..200).map(f64::from).collect();
        assert!((ar1_inflation(&ramp) - (1.9f64 / 0.1).sqrt()).abs() < 1e-12);
        let alternating: Vec<f64> = (0..20)
            .map(|k| if k % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        assert_eq!(ar1_inflation(&alternating), 1.0);
        // A walk's batch means are correlated: its drift is measured against a wider error.
        let mut x = 0.0;
        let walk: Vec<f64> = (0..20)
            .map(|k| {
                x += noise(k);
                x
            })
            .collect();
        assert!(ar1_inflation(&walk) > 1.5, "{}", ar1_inflation(&walk));
        let iid: Vec<f64> = (0..2000).map(noise).collect();
        assert!(ar1_inflation(&iid) < 1.1, "{}", ar1_inflation(&iid));
    }

    #[test]
    fn short_windows_are_not_judged() {
        let mut w = Window::new(10, 1);
        for k in 0..10 {
            w.record(k, &[0.0], &[0.0], &[0.0]);
        }
        assert!(w.assess().is_none());
    }
}
