//! `dsgd advise`: which gradient estimator suits a model, and why.
//!
//! From the static analysis (`bias.rs`, the same warning `dsgd run` prints): which jumps read
//! a parameter directly (their boundary moves with theta, so the crisp gradients of Reparam,
//! Score and RLOO are biased and only smoothing applies), which read a latent (Reparam is
//! biased), and which are affine (LYY18 applies when all jumps are); continuous
//! if-statements (`min`, `max`, ...) bias nothing. From a short pilot
//! at the initial parameters, every applicable estimator's mean gradient with its standard
//! error (from independent batch means, so RLOO's shared baselines are accounted for), its
//! variance and its cost per sample, hence its work-normalised variance as in Table 2; and
//! whether Reparam is biased there: its gradient and an unbiased one's (LYY18's, else
//! Score's) disagree beyond their standard errors.
//!
//! Every pilot number comes with its standard error (the variance's from the spread of the
//! batches' squared deviations, so heavy tails show), and the table prints 2-3 significant
//! digits: a pilot of a few thousand samples knows no more. The recommendation is the
//! lowest work-normalised variance among the estimators unbiased here (DSGD's bias vanishes
//! as eta tightens), preferring an unbiased one with no eta when DSGD's lead is within the
//! pilot's noise, and says why when the table's lowest row is not the one recommended.
//!
//! The pilot's numbers are a pure function of (model, samples, seed); the costs are timed
//! (their error is not estimated).

use serde::Serialize;

use super::check::{CheckReport, GuardNote};
use super::cost::{self, CostConfig};
use super::run::RunError;
use crate::estimate::{self, Engine, EstimatorKind, ITERATION_AT_ETA, Problem, Purpose, StreamKey};
use crate::ir::{Model, Span};

mod recommend;
mod rows;
mod table;

use recommend::{recommend, reparam_check, static_bias};
pub use rows::SmoothingGap;
pub use table::with_se;

/// The pilot's settings.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct AdviseConfig {
    /// Batches of [`PILOT_BATCH`] gradient samples per estimator.
    pub batches: u64,
    /// The seed of the pilot's gradient samples.
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
    /// The estimator's name (`dsgd`, `fixed`, `score`, `reparam`, `lyy18`, `rloo`).
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
    /// The standard errors of `mean_gradient`, by component.
    pub standard_error: Vec<f64>,
    /// Mean over components of the per-sample variance (Table 2's `Avg(V(.))`), and its
    /// standard error.
    pub avg_var: f64,
    /// The standard error of `avg_var`.
    pub avg_var_se: f64,
    /// Seconds per gradient sample, one thread (timed).
    pub seconds_per_sample: f64,
    /// `seconds_per_sample * avg_var`, and that as a ratio to Score's, with standard errors
    /// from the pilot's (the timing's error is not included).
    pub work_normalised_var: f64,
    /// The standard error of `work_normalised_var`.
    pub work_normalised_var_se: f64,
    /// `work_normalised_var` as a ratio to Score's.
    pub work_ratio_to_score: f64,
    /// The standard error of `work_ratio_to_score`.
    pub work_ratio_to_score_se: f64,
}

impl EstimatorAdvice {
    /// A row for `estimator` without a pilot's numbers (empty, or NaN), applicable and of
    /// unknown bias: what a row that does not apply, or a test's, fills in from.
    fn unmeasured(estimator: &str) -> EstimatorAdvice {
        EstimatorAdvice {
            estimator: estimator.into(),
            not_applicable: None,
            biased: None,
            bias_note: None,
            mean_gradient: Vec::new(),
            standard_error: Vec::new(),
            avg_var: f64::NAN,
            avg_var_se: f64::NAN,
            seconds_per_sample: f64::NAN,
            work_normalised_var: f64::NAN,
            work_normalised_var_se: f64::NAN,
            work_ratio_to_score: f64::NAN,
            work_ratio_to_score_se: f64::NAN,
        }
    }
}

/// Reparam against an unbiased reference at the initial parameters.
#[derive(Clone, Debug, Serialize)]
pub struct BiasCheck {
    /// The unbiased estimator Reparam is compared with.
    pub reference: String,
    /// The largest `|reparam - reference| / combined standard error` over components.
    pub max_z: f64,
    /// The component where it is, by name.
    pub component: String,
    /// The two-sided threshold at [`BIAS_TEST_LEVEL`], Bonferroni over the components.
    pub threshold: f64,
    /// Whether `max_z` exceeds `threshold`: Reparam is biased here.
    pub biased: bool,
}

/// Everything `dsgd advise` says.
#[derive(Clone, Debug, Serialize)]
pub struct AdviseReport {
    /// The model's name.
    pub model: String,
    /// If-statements of the program.
    pub if_statements: usize,
    /// If-statements whose guard reads a parameter directly.
    pub param_dependent_guards: Vec<GuardNote>,
    /// Guards that are affine in the latents.
    pub affine_guards: usize,
    /// Whether LYY18 applies (every guard affine).
    pub lyy18_applicable: bool,
    /// Gradient samples of the pilot, per estimator.
    pub pilot_samples: usize,
    /// The pilot's seed.
    pub seed: u64,
    /// What the pilot found, one entry per estimator.
    pub estimators: Vec<EstimatorAdvice>,
    /// Reparam against an unbiased reference, when the model has jumps.
    pub reparam_bias: Option<BiasCheck>,
    /// DSGD's smoothing gap at the pilot's eta, when it smooths anything.
    pub smoothing_gap: Option<SmoothingGap>,
    /// The estimator to use, and the reasons.
    pub recommendation: String,
    /// Why `recommendation` is recommended, one sentence each.
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
) -> Result<Pilot, RunError> {
    let d = theta.len();
    let (mut sum, mut sq) = (vec![0.0; d], vec![0.0; d]);
    // The batch means themselves, to give Avg(V)'s standard error from the batches'
    // squared deviations; too many to keep for a very large model, which then takes the
    // normal-theory error.
    let keep = (config.batches as usize).saturating_mul(d) <= KEEP_BATCH_MEANS;
    let mut kept: Vec<f64> = Vec::new();
    for it in 0..config.batches {
        // From iteration 3999 on, where DSGD's eta is `config.eta` (and within 3 % of it
        // over 256 batches).
        let key = StreamKey::new(config.seed, ITERATION_AT_ETA + it, Purpose::Other(stream));
        engine.evaluate(theta, key, PILOT_BATCH, false)?;
        for (p, g) in engine.mean_gradient().iter().enumerate() {
            sum[p] += g;
            sq[p] += g * g;
        }
        if keep {
            kept.extend_from_slice(engine.mean_gradient());
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
    let avg_var_se = if d == 0 {
        0.0
    } else if keep {
        // avg_var is the mean over batches of u_b = B / d * sum_p (g_bp - mean_p)^2 (times
        // n / (n - 1)): its error is that of a mean of the u_b.
        let scale = PILOT_BATCH as f64 / d as f64 * n / (n - 1.0);
        let u: Vec<f64> = kept
            .chunks_exact(d)
            .map(|g| {
                scale
                    * g.iter()
                        .zip(&mean)
                        .map(|(x, m)| (x - m) * (x - m))
                        .sum::<f64>()
            })
            .collect();
        let u_mean = u.iter().sum::<f64>() / n;
        let u_var = u.iter().map(|x| (x - u_mean) * (x - u_mean)).sum::<f64>() / (n - 1.0);
        (u_var / n).sqrt()
    } else {
        avg_var * (2.0 / (n - 1.0)).sqrt()
    };
    Ok(Pilot {
        mean,
        se,
        avg_var,
        avg_var_se,
    })
}

/// The most batch means (batches x components) the pilot keeps for Avg(V)'s error.
const KEEP_BATCH_MEANS: usize = 1 << 22;

/// One estimator's pilot: the mean gradient, its standard errors, Avg(V) and its error.
struct Pilot {
    mean: Vec<f64>,
    se: Vec<f64>,
    avg_var: f64,
    avg_var_se: f64,
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
    let problem = Problem::new(model)?;
    // The outer program's if-statements and every plate body's (see `Problem::analysis`).
    let analysis = problem.analysis().clone();
    let theta = problem.family().init();
    let names = problem.family().names().to_vec();
    let moving = !check.param_dependent_guards.is_empty();
    // Only jumps bias an estimator; continuous if-statements do not.
    let has_ifs = analysis.guards.iter().any(|g| g.jump());
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
                    not_applicable: Some(e.to_string()),
                    ..EstimatorAdvice::unmeasured(kind.name())
                });
                continue;
            }
        };
        let mut engine = Engine::new(problem.clone(), est);
        let pilot = pilot(&mut engine, &theta, config, 0xad71 + stream)?;
        let (biased, note) = static_bias(kind, &analysis, &model.program);
        applicable.push(kind);
        advice.push(EstimatorAdvice {
            estimator: kind.name().into(),
            not_applicable: None,
            biased,
            bias_note: note,
            mean_gradient: pilot.mean,
            standard_error: pilot.se,
            avg_var: pilot.avg_var,
            avg_var_se: pilot.avg_var_se,
            seconds_per_sample: f64::NAN,
            work_normalised_var: f64::NAN,
            work_normalised_var_se: f64::NAN,
            work_ratio_to_score: f64::NAN,
            work_ratio_to_score_se: f64::NAN,
        });
    }
    let costs = cost::measure_interleaved(&problem, &applicable, config.eta, None, &config.cost)?;
    for c in &costs {
        if let Some(a) = advice.iter_mut().find(|a| a.estimator == c.estimator) {
            a.seconds_per_sample = c.seconds_per_sample();
            a.work_normalised_var = a.seconds_per_sample * a.avg_var;
            a.work_normalised_var_se = a.seconds_per_sample * a.avg_var_se;
        }
    }
    let score = advice
        .iter()
        .find(|a| a.estimator == "score")
        .map_or((f64::NAN, f64::NAN), |a| (a.avg_var, a.avg_var_se));
    let score_work = advice
        .iter()
        .find(|a| a.estimator == "score")
        .map_or(f64::NAN, |a| a.work_normalised_var);
    for a in &mut advice {
        a.work_ratio_to_score = a.work_normalised_var / score_work;
        // Independent pilots: relative errors add in quadrature (Score's own ratio is 1
        // exactly).
        a.work_ratio_to_score_se = if a.estimator == "score" {
            0.0
        } else {
            a.work_ratio_to_score.abs() * (a.avg_var_se / a.avg_var).hypot(score.1 / score.0)
        };
    }
    let reparam_bias = reparam_check(&mut advice, &names, moving, has_ifs);
    let smoothing_gap = rows::measure(&problem, &theta, config)?;
    let (recommendation, reasons) = recommend(
        &check,
        has_ifs,
        &advice,
        reparam_bias.as_ref(),
        smoothing_gap.as_ref(),
    );
    Ok(AdviseReport {
        model: model.name.clone(),
        if_statements: problem.if_statements(),
        param_dependent_guards: check.param_dependent_guards.clone(),
        affine_guards: check.affine_guards,
        lyy18_applicable: check.lyy18_applicable,
        pilot_samples: config.batches as usize * PILOT_BATCH,
        seed: config.seed,
        estimators: advice,
        reparam_bias,
        smoothing_gap,
        recommendation,
        reasons,
    })
}
