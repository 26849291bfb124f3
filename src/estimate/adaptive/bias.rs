//! `--eta auto`'s tightening test: has the smoothed run settled where the crisp problem's
//! gradient is visibly not zero?
//!
//! A race compares crisp objectives, and near an optimum the objective is too flat to show
//! what tightening gains (on a one-latent model whose optimal guide sd is 0.558, the ELBO at
//! sd 0.61 is 0.009 nats lower, a fifth of a 1,000-sample standard error). The gradient
//! there is not flat: the crisp problem's gradient is of the order of the distance to its
//! optimum. So this test asks the question directly. At the run's iterate it estimates, from
//! `SAMPLES` samples each, the smoothed gradient (DSGD at the current eta) and an unbiased
//! gradient of the crisp problem (LYY18 when every guard is affine, else Score with a
//! leave-one-out baseline), and tests each against zero component by component, with a
//! Bonferroni bound at a family-wise level of `LEVEL`. It rejects (tighten) when the crisp
//! gradient is visibly nonzero while the smoothed one is not: the run has settled at the
//! smoothed problem's stationary point, and that is not the crisp one's. While the run is
//! still moving (the smoothed gradient is visible too), it does not reject.
//!
//! Measured alternative: testing the difference of the two gradients (the smoothing's bias)
//! on common samples has far less power, because the smoothed estimator's variance grows as
//! eta shrinks (docs/adaptive-eta.md).
//!
//! When a guard reads a parameter directly, no crisp estimator is unbiased and there is no
//! test. Where the crisp estimators are very noisy (rare costly events), the test rarely
//! rejects, by design: it tightens only what it can see.

use crate::estimate::{
    Engine, Estimator, EstimatorKind, Lyy18, Pathwise, Problem, Purpose, Rloo, Schedule, StreamKey,
};
use crate::eval::CHUNK;
use crate::special::probit;

/// Samples of each gradient (a multiple of the lane chunk: the leave-one-out baseline
/// couples a chunk's lanes, so the chunks' means are the independent units).
pub const SAMPLES: usize = 4096;

/// The family-wise level of each test over the gradient's components.
pub const LEVEL: f64 = 1e-3;

/// The stream of the test's samples (apart from steps and measurements).
const TAG: u32 = 0x7e57;

/// The test's finding.
#[derive(Clone, Debug, PartialEq)]
pub struct BiasTest {
    /// The largest `|mean| / se` over the crisp gradient's components.
    pub crisp_t: f64,
    /// The same for the smoothed gradient.
    pub smoothed_t: f64,
    /// The Bonferroni threshold for the gradient's dimension.
    pub threshold: f64,
    /// The crisp estimator used.
    pub crisp: EstimatorKind,
}

impl BiasTest {
    /// Whether to tighten: the crisp gradient is visible and the smoothed one is not.
    pub fn rejects(&self) -> bool {
        self.crisp_t > self.threshold && self.smoothed_t <= self.threshold
    }
}

/// The unbiased crisp estimator for `problem`, if any: none when a guard reads a parameter.
fn crisp_estimator(problem: &Problem) -> Option<Box<dyn Estimator>> {
    if problem.analysis().param_dependent().next().is_some() {
        return None;
    }
    if let Ok(l) = Lyy18::new(problem) {
        return Some(Box::new(l));
    }
    Some(Box::new(Rloo))
}

/// The test at `theta`, iteration `k`, smoothing with `schedule`, each chunk of samples
/// reading `subsample` rows of every plate of its own (`None`: every row); `None` when no
/// crisp estimator is unbiased or an evaluation fails. With it, the plate rows the test read.
pub fn bias_test(
    problem: &Problem,
    theta: &[f64],
    k: u64,
    schedule: Schedule,
    seed: u64,
    subsample: Option<usize>,
) -> (Option<BiasTest>, u64) {
    let Some(crisp) = crisp_estimator(problem) else {
        return (None, 0);
    };
    let crisp_kind = crisp.kind();
    let key = StreamKey::new(seed, k, Purpose::Other(TAG));
    let mut c = Engine::new(problem.clone(), crisp);
    let mut s = Engine::new(
        problem.clone(),
        Box::new(Pathwise::new(EstimatorKind::Dsgd, schedule)),
    );
    // Under a subsample the chunks' rows are drawn independently, so the chunk means the
    // t-statistics read are independent estimates, the rows' sampling included.
    for e in [&mut c, &mut s] {
        e.set_subsample(subsample);
        e.set_rows_per_chunk(true);
    }
    let evaluated = c.evaluate(theta, key, SAMPLES, false).is_ok()
        && s.evaluate(theta, key, SAMPLES, false).is_ok();
    let rows_read = c.rows_read() + s.rows_read();
    (
        evaluated
            .then(|| test_of(problem, &c, &s, crisp_kind))
            .flatten(),
        rows_read,
    )
}

/// The test's finding from the evaluated crisp (`c`) and smoothed (`s`) engines.
fn test_of(
    problem: &Problem,
    c: &Engine,
    s: &Engine,
    crisp_kind: EstimatorKind,
) -> Option<BiasTest> {
    let (mut crisp_t, mut smoothed_t): (f64, f64) = (0.0, 0.0);
    for p in 0..problem.dim() {
        crisp_t = crisp_t.max(chunk_t(c.component(p)));
        smoothed_t = smoothed_t.max(chunk_t(s.component(p)));
    }
    // A NaN compares false in `max`: look at the samples' sums instead.
    if !(crisp_t.is_finite() && smoothed_t.is_finite())
        || c.first_non_finite().is_some()
        || s.first_non_finite().is_some()
    {
        return None;
    }
    Some(BiasTest {
        crisp_t,
        smoothed_t,
        threshold: threshold(problem.dim()),
        crisp: crisp_kind,
    })
}

/// `|mean| / se` of one component from its samples' chunk means.
fn chunk_t(samples: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = samples.collect();
    let means: Vec<f64> = v
        .chunks(CHUNK)
        .map(|ch| ch.iter().sum::<f64>() / ch.len() as f64)
        .collect();
    if means.len() < 2 {
        return 0.0;
    }
    let n = means.len() as f64;
    let mean = means.iter().sum::<f64>() / n;
    let var = means.iter().map(|m| (m - mean) * (m - mean)).sum::<f64>() / (n - 1.0);
    let se = (var / n).sqrt();
    if se > 0.0 { mean.abs() / se } else { 0.0 }
}

/// The two-sided Bonferroni threshold for `d` components at `LEVEL`.
fn threshold(d: usize) -> f64 {
    -probit(LEVEL / (2.0 * d.max(1) as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_bonferronis() {
        // One component at 1e-3: 3.29; two: 3.48; more components need more.
        assert!((threshold(1) - 3.2905).abs() < 1e-3);
        assert!((threshold(2) - 3.4808).abs() < 1e-3);
        assert!(threshold(100) > threshold(2));
    }

    #[test]
    fn t_statistics_come_from_chunk_means() {
        // Chunk means alternate 1 and 3 around 2: mean 2, sd 1.0 (n - 1), n = 8 chunks.
        let samples = (0..8 * CHUNK).map(|i| {
            if (i / CHUNK).is_multiple_of(2) {
                1.0
            } else {
                3.0
            }
        });
        let se = (8.0f64 / 7.0).sqrt() / 8f64.sqrt();
        assert!((chunk_t(samples) - 2.0 / se).abs() < 1e-12);
        // Constant samples have no spread: no evidence either way.
        assert_eq!(chunk_t(std::iter::repeat_n(1.0, 4 * CHUNK)), 0.0);
        let test = |crisp_t, smoothed_t| BiasTest {
            crisp_t,
            smoothed_t,
            threshold: 3.0,
            crisp: EstimatorKind::Rloo,
        };
        assert!(test(5.0, 1.0).rejects());
        // Still moving, or nothing to see: keep.
        assert!(!test(5.0, 4.0).rejects());
        assert!(!test(2.0, 1.0).rejects());
    }
}
