//! `dsgd advise` over many if-statements: DSGD's smoothing gap at the pilot's eta, and when it
//! hands the recommendation to an unbiased estimator.
//!
//! Each smoothed if-statement adds its own gap (smoothed minus crisp objective) to the
//! objective, so a model with one if-statement per data row can end far from the crisp
//! problem's answer at an eta that is accurate for a handful of them. The pilot measures that
//! gap at the initial parameters, at exactly the pilot's eta (a fixed-accuracy smoothing), with
//! its standard error, and judges it with `dsgd run`'s rule for the final gap: beyond
//! [`GAP_NOISE_FACTOR`] times its noise (the larger of its own standard error and the
//! objective's) and above [`GAP_NEGLIGIBLE`] of `1 + |objective|`. When it is, and an unbiased
//! estimator that applies costs at most [`COMPETITIVE_FACTOR`] times DSGD's work-normalised
//! variance (not excluded by the pilot's noise), the recommendation is that estimator: DSGD's
//! answer at the pilot's eta would be the smoothed problem's, and tightening eta until the gap
//! is within noise costs variance that the table's DSGD row does not show.

use serde::Serialize;

use super::super::run::{GAP_NEGLIGIBLE, GAP_NOISE_FACTOR, RunError};
use super::{AdviseConfig, EstimatorAdvice, PILOT_BATCH, with_se};
use crate::estimate::{self, Engine, EstimatorKind, ITERATION_AT_ETA, Problem, Purpose, StreamKey};

/// How many times DSGD's work-normalised variance an unbiased estimator may cost and still be
/// recommended over DSGD when DSGD's smoothing gap is beyond noise.
pub const COMPETITIVE_FACTOR: f64 = 10.0;

/// The stream of the gap's samples, apart from every estimator's pilot.
const GAP_STREAM: u32 = 0xad7f;

/// DSGD's smoothing gap at the pilot's eta and the initial parameters.
#[derive(Clone, Debug, Serialize)]
pub struct SmoothingGap {
    /// The accuracy the gap is measured at (the pilot's eta).
    pub eta: f64,
    /// If-statements the objective evaluates, a plate's body's once per row.
    pub if_statements: usize,
    /// The smoothed objective minus the crisp one, in nats (the objective's units).
    pub gap: f64,
    /// The standard error of `gap`.
    pub gap_se: f64,
    /// The crisp objective's estimate.
    pub objective: f64,
    /// The standard error of `objective`.
    pub objective_se: f64,
    /// Samples the gap is averaged over.
    pub samples: usize,
    /// Whether the gap matters by `dsgd run`'s rule for the final gap.
    pub beyond_noise: bool,
}

/// The smoothing gap at `config.eta` over the pilot's number of samples, or `None` when DSGD
/// smooths nothing (no if-statement whose branches differ on the boundary).
pub fn measure(
    problem: &Problem,
    theta: &[f64],
    config: &AdviseConfig,
) -> Result<Option<SmoothingGap>, RunError> {
    if !problem.analysis().guards.iter().any(|g| g.jump()) {
        return Ok(None);
    }
    let Ok(est) = estimate::build(EstimatorKind::Fixed, problem, config.eta, None) else {
        return Ok(None);
    };
    let mut engine = Engine::new(problem.clone(), est);
    let sign = problem.objective_sign();
    let (mut diffs, mut crisp) = (Vec::new(), Vec::new());
    for it in 0..config.batches {
        let key = StreamKey::new(
            config.seed,
            ITERATION_AT_ETA + it,
            Purpose::Other(GAP_STREAM),
        );
        engine.evaluate(theta, key, PILOT_BATCH, true)?;
        for (s, c) in engine.values().iter().zip(engine.crisp_values()) {
            diffs.push(sign * (s - c));
            crisp.push(sign * c);
        }
    }
    let (gap, gap_se) = mean_and_se(&diffs);
    let (objective, objective_se) = mean_and_se(&crisp);
    let beyond_noise = gap.abs() > GAP_NOISE_FACTOR * gap_se.max(objective_se)
        && gap.abs() > GAP_NEGLIGIBLE * (1.0 + objective.abs());
    Ok(Some(SmoothingGap {
        eta: config.eta,
        if_statements: problem.if_statements(),
        gap,
        gap_se,
        objective,
        objective_se,
        samples: diffs.len(),
        beyond_noise,
    }))
}

/// The mean of independent samples and its standard error.
fn mean_and_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// When the gap is beyond noise: the unbiased estimator to recommend instead of DSGD (the
/// lowest work-normalised variance among `unbiased`, which are sorted by it) and the one
/// sentence saying why, if it costs at most [`COMPETITIVE_FACTOR`] times DSGD's per unit of
/// variance within two combined standard errors.
pub fn hand_over(
    gap: Option<&SmoothingGap>,
    unbiased: &[&&EstimatorAdvice],
    dsgd: &EstimatorAdvice,
) -> Option<(String, String)> {
    let g = gap.filter(|g| g.beyond_noise)?;
    let u = unbiased.first()?;
    let ratio = u.work_ratio_to_score / dsgd.work_ratio_to_score;
    let ratio_se = ratio.abs()
        * (u.work_ratio_to_score_se / u.work_ratio_to_score)
            .hypot(dsgd.work_ratio_to_score_se / dsgd.work_ratio_to_score);
    if ratio - 2.0 * ratio_se > COMPETITIVE_FACTOR || ratio.is_nan() {
        return None;
    }
    Some((
        u.estimator.clone(),
        format!(
            "{}: DSGD's answer would be the smoothed problem's; {} is unbiased and costs {}x \
             DSGD's work per unit of variance",
            gap_clause(g),
            u.estimator,
            with_se(ratio, ratio_se)
        ),
    ))
}

/// The sentence's first half: "with N if-statements the smoothing gap at eta X is G ± SE
/// nats".
pub fn gap_clause(g: &SmoothingGap) -> String {
    format!(
        "with {} if-statements the smoothing gap at eta {} is {} nats",
        thousands(g.if_statements),
        with_se(g.eta, f64::NAN),
        with_se(g.gap, g.gap_se)
    )
}

/// When the table already recommends an unbiased estimator and the gap is beyond noise, one
/// more reason for it.
pub fn also(gap: Option<&SmoothingGap>) -> Option<String> {
    let g = gap.filter(|g| g.beyond_noise)?;
    Some(format!(
        "{}: DSGD's answer at that eta would be the smoothed problem's",
        gap_clause(g)
    ))
}

impl std::fmt::Display for SmoothingGap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "smoothing gap at eta {} over {} if-statements (a plate's counted once per row): \
             {} nats (± one standard error), {} samples at the initial parameters: {}",
            with_se(self.eta, f64::NAN),
            thousands(self.if_statements),
            with_se(self.gap, self.gap_se),
            self.samples,
            if self.beyond_noise {
                "beyond noise"
            } else {
                "within noise"
            }
        )
    }
}

/// `n` with a comma every three digits.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (k, c) in s.chars().enumerate() {
        if k > 0 && (s.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{EstimatorAdvice, SmoothingGap, hand_over, thousands};

    fn row(name: &str, ratio: f64, se: f64) -> EstimatorAdvice {
        EstimatorAdvice {
            biased: Some(name == "dsgd"),
            work_ratio_to_score: ratio,
            work_ratio_to_score_se: se,
            ..EstimatorAdvice::unmeasured(name)
        }
    }

    fn gap(beyond_noise: bool) -> SmoothingGap {
        SmoothingGap {
            eta: 0.1,
            if_statements: 10_000,
            gap: 3.6,
            gap_se: 0.1,
            objective: -4900.0,
            objective_se: 0.5,
            samples: 4096,
            beyond_noise,
        }
    }

    #[test]
    fn a_gap_beyond_noise_hands_over_to_a_competitive_unbiased_estimator() {
        let dsgd = row("dsgd", 0.1, 0.01);
        let lyy18 = row("lyy18", 0.18, 0.01);
        let unbiased = [&&lyy18];
        let (name, why) = hand_over(Some(&gap(true)), &unbiased, &dsgd).unwrap();
        assert_eq!(name, "lyy18");
        assert!(
            why.starts_with(
                "with 10,000 if-statements the smoothing gap at eta 0.100 is 3.60 ± 0.10 nats: \
                 DSGD's answer would be the smoothed problem's; lyy18 is unbiased and costs 1.8"
            ),
            "{why}"
        );
        // Within noise: nothing new.
        assert!(hand_over(Some(&gap(false)), &unbiased, &dsgd).is_none());
        assert!(hand_over(None, &unbiased, &dsgd).is_none());
        // Nothing unbiased applies.
        assert!(hand_over(Some(&gap(true)), &[], &dsgd).is_none());
        // 50 times DSGD's work per unit of variance, a few percent uncertain: not competitive.
        let score = row("score", 5.0, 0.1);
        assert!(hand_over(Some(&gap(true)), &[&&score], &dsgd).is_none());
        // 12 times, but with errors wide enough that 10 is within two of them: competitive.
        let rloo = row("rloo", 1.2, 0.3);
        assert!(hand_over(Some(&gap(true)), &[&&rloo], &dsgd).is_some());
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(123456), "123,456");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
