//! `dsgd advise`: which gradient estimator suits a model, and why.
//!
//! From the static analysis: which if-statements read a parameter directly (their boundary
//! moves with theta, so the crisp gradients of Reparam, Score and RLOO are biased and only
//! smoothing applies) and which are affine (LYY18 applies when all are). From a short pilot
//! at the initial parameters, every applicable estimator's mean gradient with its standard
//! error (from independent batch means, so RLOO's shared baselines are accounted for), its
//! variance and its cost per sample, hence its work-normalised variance as in Table 2; and
//! whether Reparam is biased there: its gradient and an unbiased one's (LYY18's, else
//! Score's) disagree beyond their standard errors.
//!
//! The pilot's numbers are a pure function of (model, samples, seed); the costs are timed.

use serde::Serialize;

use super::check::{CheckReport, GuardNote};
use super::cost::{self, CostConfig};
use super::run::RunError;
use crate::estimate::{self, Engine, EstimatorKind, ITERATION_AT_ETA, Problem, Purpose, StreamKey};
use crate::ir::{Model, Span, analyse};
use crate::special::probit;

/// The pilot's settings.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct AdviseConfig {
    /// Batches of [`PILOT_BATCH`] gradient samples per estimator.
    pub batches: u64,
    pub seed: u64,
    /// The smoothing accuracy of the DSGD pilot (its eta at iteration 4000).
    pub eta: f64,
    /// How long to time each estimator.
    pub cost: CostConfig,
}

/// The batch size of the pilot (the default batch of a run).
pub const PILOT_BATCH: usize = 16;

/// The family-wise error rate of the bias test over all gradient components.
pub const BIAS_TEST_LEVEL: f64 = 1e-3;

impl Default for AdviseConfig {
    fn default() -> Self {
        AdviseConfig {
            batches: 256,
            seed: 0,
            eta: crate::settings::DEFAULT_ETA,
            cost: CostConfig {
                batch: 16,
                warmup_seconds: 0.02,
                repeats: 5,
                repeat_seconds: 0.02,
                threads: 1,
            },
        }
    }
}

/// What the pilot found about one estimator.
#[derive(Clone, Debug, Serialize)]
pub struct EstimatorAdvice {
    pub estimator: String,
    /// Why it does not apply (then there are no numbers).
    pub not_applicable: Option<String>,
    /// Whether it is biased on this model: `Some(true)` from the analysis or the pilot,
    /// `Some(false)` when unbiased by construction, `None` when the pilot could not tell.
    pub biased: Option<bool>,
    /// Why it is (or may be) biased.
    pub bias_note: Option<String>,
    /// The mean gradient over the pilot and its standard errors, by component.
    pub mean_gradient: Vec<f64>,
    pub standard_error: Vec<f64>,
    /// Mean over components of the per-sample variance (Table 2's `Avg(V(.))`).
    pub avg_var: f64,
    pub seconds_per_sample: f64,
    /// `seconds_per_sample * avg_var`, and that as a ratio to Score's.
    pub work_normalised_var: f64,
    pub work_ratio_to_score: f64,
}

/// Reparam against an unbiased reference at the initial parameters.
#[derive(Clone, Debug, Serialize)]
pub struct BiasCheck {
    pub reference: String,
    /// The largest `|reparam - reference| / combined standard error` over components.
    pub max_z: f64,
    /// The component where it is, by name.
    pub component: String,
    /// The two-sided threshold at [`BIAS_TEST_LEVEL`], Bonferroni over the components.
    pub threshold: f64,
    pub biased: bool,
}

/// Everything `dsgd advise` says.
#[derive(Clone, Debug, Serialize)]
pub struct AdviseReport {
    pub model: String,
    pub if_statements: usize,
    /// If-statements whose guard reads a parameter directly.
    pub param_dependent_guards: Vec<GuardNote>,
    pub affine_guards: usize,
    pub lyy18_applicable: bool,
    pub pilot_samples: usize,
    pub seed: u64,
    pub estimators: Vec<EstimatorAdvice>,
    pub reparam_bias: Option<BiasCheck>,
    /// The estimator to use, and the reasons.
    pub recommendation: String,
    pub reasons: Vec<String>,
}

/// Mean, standard error and mean per-sample variance of `engine`'s gradient over `batches`
/// independent batches of [`PILOT_BATCH`] at `theta`.
/// Each estimator draws from its own stream (`stream`), so that two estimators' means are
/// independent and the standard error of their difference is the two combined.
fn pilot(
    engine: &mut Engine,
    theta: &[f64],
    config: &AdviseConfig,
    stream: u32,
) -> Result<(Vec<f64>, Vec<f64>, f64), RunError> {
    let d = theta.len();
    let (mut sum, mut sq) = (vec![0.0; d], vec![0.0; d]);
    for it in 0..config.batches {
        // From iteration 3999 on, where DSGD's eta is `config.eta` (and within 3 % of it
        // over 256 batches).
        let key = StreamKey::new(config.seed, ITERATION_AT_ETA + it, Purpose::Other(stream));
        engine.evaluate(theta, key, PILOT_BATCH, false)?;
        for (p, g) in engine.mean_gradient().iter().enumerate() {
            sum[p] += g;
            sq[p] += g * g;
        }
    }
    let n = config.batches as f64;
    let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
    let var: Vec<f64> = (0..d)
        .map(|p| ((sq[p] / n - mean[p] * mean[p]) * n / (n - 1.0)).max(0.0))
        .collect();
    let se = var.iter().map(|v| (v / n).sqrt()).collect();
    // The batch mean's variance is the per-sample variance over the batch size.
    let avg_var = if d == 0 {
        0.0
    } else {
        var.iter().sum::<f64>() * PILOT_BATCH as f64 / d as f64
    };
    Ok((mean, se, avg_var))
}

/// The advice for `model`. `locate` turns a span into `file:line:col`.
pub fn advise(
    model: &Model,
    config: &AdviseConfig,
    locate: &dyn Fn(Span) -> String,
) -> Result<AdviseReport, RunError> {
    if config.batches < 2 {
        return Err(RunError::Config(
            "the pilot needs at least 2 batches".into(),
        ));
    }
    let check = CheckReport::new(model, locate);
    let analysis = analyse(&model.program);
    let problem = Problem::new(model)?;
    let theta = problem.family().init();
    let names = problem.family().names().to_vec();
    let moving = !check.param_dependent_guards.is_empty();
    let has_ifs = analysis.if_count() > 0;
    let order = [
        EstimatorKind::Dsgd,
        EstimatorKind::Reparam,
        EstimatorKind::Score,
        EstimatorKind::Rloo,
        EstimatorKind::Lyy18,
    ];
    let mut advice = Vec::new();
    let mut applicable = Vec::new();
    for (stream, kind) in (0u32..).zip(order) {
        // DSGD's pilot smooths at `config.eta` (its accuracy at iteration 4000).
        let built = estimate::build(kind, &problem, config.eta, None);
        let est = match built {
            Ok(e) => e,
            Err(e) => {
                advice.push(EstimatorAdvice {
                    estimator: kind.name().into(),
                    not_applicable: Some(e.to_string()),
                    biased: None,
                    bias_note: None,
                    mean_gradient: Vec::new(),
                    standard_error: Vec::new(),
                    avg_var: f64::NAN,
                    seconds_per_sample: f64::NAN,
                    work_normalised_var: f64::NAN,
                    work_ratio_to_score: f64::NAN,
                });
                continue;
            }
        };
        let mut engine = Engine::new(problem.clone(), est);
        let (mean, se, avg_var) = pilot(&mut engine, &theta, config, 0xad71 + stream)?;
        let (biased, note) = static_bias(kind, moving, has_ifs);
        applicable.push(kind);
        advice.push(EstimatorAdvice {
            estimator: kind.name().into(),
            not_applicable: None,
            biased,
            bias_note: note,
            mean_gradient: mean,
            standard_error: se,
            avg_var,
            seconds_per_sample: f64::NAN,
            work_normalised_var: f64::NAN,
            work_ratio_to_score: f64::NAN,
        });
    }
    let costs = cost::measure_interleaved(&problem, &applicable, config.eta, None, &config.cost)?;
    for c in &costs {
        if let Some(a) = advice.iter_mut().find(|a| a.estimator == c.estimator) {
            a.seconds_per_sample = c.seconds_per_sample();
            a.work_normalised_var = a.seconds_per_sample * a.avg_var;
        }
    }
    let score_work = advice
        .iter()
        .find(|a| a.estimator == "score")
        .map_or(f64::NAN, |a| a.work_normalised_var);
    for a in &mut advice {
        a.work_ratio_to_score = a.work_normalised_var / score_work;
    }
    let reparam_bias = reparam_check(&mut advice, &names, moving, has_ifs);
    let (recommendation, reasons) = recommend(&check, &advice, reparam_bias.as_ref());
    Ok(AdviseReport {
        model: model.name.clone(),
        if_statements: analysis.if_count(),
        param_dependent_guards: check.param_dependent_guards.clone(),
        affine_guards: check.affine_guards,
        lyy18_applicable: check.lyy18_applicable,
        pilot_samples: config.batches as usize * PILOT_BATCH,
        seed: config.seed,
        estimators: advice,
        reparam_bias,
        recommendation,
        reasons,
    })
}

/// What the analysis alone says about an estimator's bias.
fn static_bias(kind: EstimatorKind, moving: bool, has_ifs: bool) -> (Option<bool>, Option<String>) {
    use EstimatorKind::*;
    let moving_note = "a guard depends on a parameter directly: the crisp gradient misses the \
                       motion of its boundary";
    match kind {
        Reparam | Score | Rloo if moving => (Some(true), Some(moving_note.into())),
        Score | Rloo | Lyy18 => (Some(false), None),
        Reparam if !has_ifs => (Some(false), None),
        // Decided by the pilot.
        Reparam => (None, None),
        Dsgd | Fixed => (
            Some(has_ifs),
            has_ifs.then(|| {
                "smoothing bias at a given eta, which vanishes as eta is tightened (the \
                 run's smoothing gap shows how much is left)"
                    .into()
            }),
        ),
    }
}

/// Reparam's pilot gradient against LYY18's (or Score's), component by component.
fn reparam_check(
    advice: &mut [EstimatorAdvice],
    names: &[String],
    moving: bool,
    has_ifs: bool,
) -> Option<BiasCheck> {
    if moving || !has_ifs {
        return None;
    }
    let find = |name: &str| {
        advice
            .iter()
            .find(|a| a.estimator == name && a.not_applicable.is_none())
    };
    let reference = find("lyy18").or_else(|| find("score"))?;
    let reparam = find("reparam")?;
    let d = reparam.mean_gradient.len();
    let mut best = (0.0, 0);
    for p in 0..d {
        let se = reparam.standard_error[p].hypot(reference.standard_error[p]);
        let diff = (reparam.mean_gradient[p] - reference.mean_gradient[p]).abs();
        let z = if se > 0.0 {
            diff / se
        } else if diff > 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
        if z > best.0 {
            best = (z, p);
        }
    }
    let threshold = probit(1.0 - BIAS_TEST_LEVEL / (2.0 * d.max(1) as f64));
    let check = BiasCheck {
        reference: reference.estimator.clone(),
        max_z: best.0,
        component: names.get(best.1).cloned().unwrap_or_default(),
        threshold,
        biased: best.0 > threshold,
    };
    if let Some(r) = advice.iter_mut().find(|a| a.estimator == "reparam") {
        r.biased = Some(check.biased);
        r.bias_note = Some(if check.biased {
            format!(
                "its pilot gradient differs from {}'s by {:.1} standard errors (component {})",
                check.reference, check.max_z, check.component
            )
        } else {
            format!(
                "no disagreement with {}'s gradient beyond {:.1} standard errors at the initial \
                 parameters (it may still be biased elsewhere)",
                check.reference, check.threshold
            )
        });
    }
    Some(check)
}

/// The recommendation and its reasons.
fn recommend(
    check: &CheckReport,
    advice: &[EstimatorAdvice],
    bias: Option<&BiasCheck>,
) -> (String, Vec<String>) {
    let mut reasons = Vec::new();
    let get = |name: &str| {
        advice
            .iter()
            .find(|a| a.estimator == name && a.not_applicable.is_none())
    };
    if check.if_statements == 0 {
        reasons.push(
            "the model has no if-statements: the reparameterisation gradient is unbiased and \
             needs no smoothing"
                .into(),
        );
        return ("reparam".into(), reasons);
    }
    if let Some(first) = check.param_dependent_guards.first() {
        reasons.push(format!(
            "{} guard(s) depend on a parameter directly (first at {}): Reparam, Score and \
             RLOO differentiate the crisp program at fixed samples and miss the moving \
             boundary, and LYY18 does not apply; only smoothing accounts for it",
            check.param_dependent_guards.len(),
            first.location
        ));
        return ("dsgd".into(), reasons);
    }
    if let Some(b) = bias {
        reasons.push(if b.biased {
            format!(
                "Reparam is biased here: its gradient differs from {}'s by {:.1} standard errors \
                 (threshold {:.1})",
                b.reference, b.max_z, b.threshold
            )
        } else {
            format!(
                "Reparam's gradient agrees with {}'s at the initial parameters (largest \
                 difference {:.1} standard errors), but if-statements can bias it elsewhere",
                b.reference, b.max_z
            )
        });
    }
    let ratio = |name: &str| get(name).map(|a| a.work_ratio_to_score);
    let mut unbiased: Vec<(&str, f64)> = ["lyy18", "rloo", "score"]
        .into_iter()
        .filter_map(|n| ratio(n).map(|r| (n, r)))
        .filter(|(_, r)| r.is_finite())
        .collect();
    unbiased.sort_by(|a, b| a.1.total_cmp(&b.1));
    let dsgd = ratio("dsgd").filter(|r| r.is_finite());
    match (unbiased.first(), dsgd) {
        (Some(&(name, r)), Some(d)) if r <= d => {
            reasons.push(format!(
                "{name} is unbiased and its work-normalised variance at the initial parameters \
                 ({:.2e} of Score's) is not above DSGD's ({d:.2e}): no eta to tune",
                r
            ));
            (name.into(), reasons)
        }
        (best, Some(d)) => {
            reasons.push(format!(
                "DSGD's work-normalised variance is {d:.2e} of Score's{}; its smoothing bias \
                 vanishes as eta tightens (use --eta auto, and watch the run's smoothing gap)",
                best.map_or(String::new(), |&(n, r)| format!(
                    ", below the best unbiased estimator's ({n}: {r:.2e})"
                ))
            ));
            ("dsgd".into(), reasons)
        }
        (Some(&(name, _)), None) => (name.into(), reasons),
        (None, None) => ("dsgd".into(), reasons),
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
        writeln!(
            f,
            "pilot at the initial parameters: {} samples (seed {}); work-normalised variance \
             = cost x Avg(V(.)), as in Table 2",
            self.pilot_samples, self.seed
        )?;
        writeln!(
            f,
            "  {:<8} {:>12} {:>12} {:>14} {:>10}  bias",
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
                (Some(false), _) => "unbiased".into(),
                (None, Some(n)) => n.clone(),
                (None, None) => "unknown".into(),
            };
            let bias = match (a.biased, &a.bias_note) {
                (Some(false), Some(n)) => format!("unbiased at the initial parameters: {n}"),
                _ => bias,
            };
            let ratio = if a.work_ratio_to_score.is_finite() {
                format!("{:.3e}", a.work_ratio_to_score)
            } else {
                "n/a".into()
            };
            writeln!(
                f,
                "  {:<8} {:>12.4} {:>12.4e} {:>14.4e} {:>10}  {bias}",
                a.estimator,
                a.seconds_per_sample * 1e6,
                a.avg_var,
                a.work_normalised_var,
                ratio
            )?;
        }
        Ok(())
    }
}
