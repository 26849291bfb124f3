//! One run's settings: [`RunOptions`] (what a user gave, every field optional) resolved with
//! a model's recommended values and the defaults into a checked [`RunConfig`].
//!
//! Room for more choices: a new optimiser is one more [`OptimizerKind`] (parsed from its
//! name by `FromStr`, so the command line and Python accept it at once), its
//! hyperparameters one more arm of [`RunOptions::optimizer_config`], and their checks one
//! more arm of [`RunConfig::validate`].

use std::str::FromStr;

use super::error::{SettingError, Style};
use super::precise::{PreciseConfig, PreciseOptions};
use super::resources::{Footprint, check_memory, check_threads, default_threads};
use super::values::{self, at_least, positive, shown};
use crate::estimate::{EstimatorKind, START_AMPLITUDE, Schedule};
use crate::ir::Model;
use crate::models::Recommended;
use crate::optim::{AdamConfig, DogConfig, OptimizerConfig, SgdConfig};

/// DSGD's accuracy at iteration 4000, and Fixed's throughout, unless given.
pub const DEFAULT_ETA: f64 = 0.1;

/// The largest decay of DSGD's schedule `eta_k = eta (4000 / (k + 1))^decay`. The paper's
/// `1 / (2 l)` is at most 0.5; at 10 the first step's eta is `4000^10 = 1e36` times the
/// given one and the last of `u64::MAX` steps' still above zero, while `1e308` makes eta
/// infinite at the start and zero later.
pub const MAX_ETA_DECAY: f64 = 10.0;

/// The smoothing accuracy `eta`: positive and finite.
pub fn eta(x: f64) -> Result<f64, SettingError> {
    if x > 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(SettingError::invalid(
            "eta",
            format!("must be positive and finite, got {}", shown(x)),
        ))
    }
}

/// DSGD's decay: at least 0 and at most [`MAX_ETA_DECAY`].
pub fn eta_decay(x: f64) -> Result<f64, SettingError> {
    if !(0.0..=MAX_ETA_DECAY).contains(&x) {
        return Err(SettingError::invalid(
            "eta_decay",
            format!(
                "must be at least 0 and at most {MAX_ETA_DECAY} (eta_k = eta (4000 / (k + \
                 1))^decay would overflow or vanish), got {}",
                shown(x)
            ),
        ));
    }
    Ok(x)
}

/// What to do when the objective or a gradient becomes NaN or infinite.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum OnNonFinite {
    /// End the run, keeping the trajectory so far.
    #[default]
    Stop,
    /// Keep going: skip steps whose gradient is not finite, keep logging.
    Continue,
}

impl FromStr for OnNonFinite {
    type Err = SettingError;
    fn from_str(s: &str) -> Result<Self, SettingError> {
        match s.to_ascii_lowercase().as_str() {
            "stop" => Ok(OnNonFinite::Stop),
            "continue" => Ok(OnNonFinite::Continue),
            _ => Err(SettingError::invalid(
                "on_nonfinite",
                format!("must be stop or continue, got `{s}`"),
            )),
        }
    }
}

/// `eta`: a number, or `auto` (DSGD chooses it from the run's measurements).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum EtaSetting {
    /// This accuracy (DSGD's at iteration 4000, Fixed's throughout).
    Value(f64),
    /// `estimate::AutoEta` chooses it.
    Auto,
}

impl EtaSetting {
    /// The accuracy given, or `None` for `auto`.
    pub fn value(self) -> Option<f64> {
        match self {
            EtaSetting::Value(x) => Some(x),
            EtaSetting::Auto => None,
        }
    }
}

/// A number, or the string `"auto"`: the label `--eta auto` and Python's `eta="auto"` use,
/// which every output repeats.
impl serde::Serialize for EtaSetting {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            EtaSetting::Value(x) => s.serialize_f64(*x),
            EtaSetting::Auto => s.serialize_str("auto"),
        }
    }
}

impl FromStr for EtaSetting {
    type Err = SettingError;
    fn from_str(s: &str) -> Result<Self, SettingError> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(EtaSetting::Auto);
        }
        let x: f64 = s.parse().map_err(|_| {
            SettingError::invalid("eta", format!("must be a number or \"auto\", got `{s}`"))
        })?;
        eta(x).map(EtaSetting::Value)
    }
}

/// The units DSGD's `eta` is in: each guard's own spread under the guide, or the guard's
/// units as written (the paper's).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum EtaScale {
    /// `eta_j = eta * sd_q(g_j)` for each guard linear in the latents (`ir::scale_guards`):
    /// the smoothed problem keeps the crisp one's invariance to the latents' scale.
    #[default]
    Relative,
    /// One `eta` for every guard, in the guard's units.
    Absolute,
}

impl EtaScale {
    /// The setting's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EtaScale::Relative => "relative",
            EtaScale::Absolute => "absolute",
        }
    }
}

impl FromStr for EtaScale {
    type Err = SettingError;
    fn from_str(s: &str) -> Result<Self, SettingError> {
        [EtaScale::Relative, EtaScale::Absolute]
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                SettingError::invalid(
                    "eta_scale",
                    format!("must be relative or absolute, got `{s}`"),
                )
            })
    }
}

/// Which optimiser (its hyperparameters come from the other options). None is named by
/// default: [`RunOptions::optimizer_kind`] chooses DoG, or Adam when a step size is given.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OptimizerKind {
    /// DoG: no step size to choose, the iterates averaged.
    Dog,
    /// Adam with bias correction (the paper's).
    Adam,
    /// Plain SGD with step `gamma_0 / k^p`.
    Sgd,
}

impl OptimizerKind {
    /// Every optimiser, in the order the help lists them.
    pub const ALL: [OptimizerKind; 3] =
        [OptimizerKind::Dog, OptimizerKind::Adam, OptimizerKind::Sgd];

    /// `dog`, `adam`, `sgd`.
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Dog => "dog",
            OptimizerKind::Adam => "adam",
            OptimizerKind::Sgd => "sgd",
        }
    }
}

impl FromStr for OptimizerKind {
    type Err = SettingError;
    fn from_str(s: &str) -> Result<Self, SettingError> {
        OptimizerKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = OptimizerKind::ALL.iter().map(|k| k.name()).collect();
                SettingError::invalid(
                    "optimizer",
                    format!("must be one of {}, got `{s}`", names.join(", ")),
                )
            })
    }
}

/// The settings of one run, every one decided.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// The gradient estimator (default DSGD).
    pub estimator: EstimatorKind,
    /// Accuracy at iteration 4000 (DSGD) or the fixed accuracy (Fixed).
    pub eta: f64,
    /// DSGD's decay; `None` means `1 / (2 l)` from the nesting depth.
    pub eta_decay: Option<f64>,
    /// `--eta auto`: DSGD's accuracy is chosen from the run's measurements
    /// (`estimate::AutoEta`) and `eta` is not read.
    pub eta_auto: bool,
    /// The units of DSGD's `eta` (Fixed always uses the guards' own).
    pub eta_scale: EtaScale,
    /// Optimisation steps.
    pub iterations: u64,
    /// Gradient samples averaged per step.
    pub batch: usize,
    /// The optimiser and its step size.
    pub optimizer: OptimizerConfig,
    /// The seed: the run is a pure function of it.
    pub seed: u64,
    /// Iterations between two measurements.
    pub log_every: u64,
    /// Fresh samples per measurement.
    pub log_samples: usize,
    /// What to do on a NaN or infinite objective or gradient.
    pub on_nonfinite: OnNonFinite,
    /// Worker threads; `None` uses rayon's global pool.
    pub threads: Option<usize>,
    /// Measure the objective at the final parameters precisely (many samples, a stated
    /// standard error) besides the paper's 1,000-sample final value; `None`: do not.
    pub precise: Option<PreciseConfig>,
    /// Each optimisation step reads this many rows of every plate, drawn afresh, the plate's
    /// sums scaled by `n / M` (an unbiased gradient); `None` reads every row. Measurements
    /// read M rows per chunk of samples, drawn afresh for each chunk (standard errors over
    /// chunks).
    pub subsample: Option<usize>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            estimator: EstimatorKind::Dsgd,
            eta: DEFAULT_ETA,
            eta_decay: None,
            eta_auto: false,
            eta_scale: EtaScale::default(),
            iterations: 10_000,
            batch: 16,
            optimizer: OptimizerConfig::default(),
            seed: 0,
            log_every: 100,
            log_samples: 1000,
            on_nonfinite: OnNonFinite::Stop,
            threads: None,
            precise: None,
            subsample: None,
        }
    }
}

impl RunConfig {
    /// The defaults with a built-in model's recommended settings (Adam at temperature's and
    /// xornet's step sizes, xornet's decay); for any other name, the plain defaults (DoG).
    pub fn recommended(model_name: &str) -> RunConfig {
        RunOptions::default()
            .resolve(crate::models::recommended(model_name))
            .unwrap_or_default()
    }

    /// Checks the settings, naming the first bad one.
    pub fn validate(&self) -> Result<(), SettingError> {
        eta(self.eta)?;
        if self.eta_auto && self.estimator != EstimatorKind::Dsgd {
            return Err(SettingError::invalid(
                "eta",
                format!("auto adapts DSGD's schedule only, not {}'s", self.estimator),
            ));
        }
        if let Some(d) = self.eta_decay {
            eta_decay(d)?;
            self.check_schedule(d)?;
        }
        at_least("iters", self.iterations, 1)?;
        at_least("batch", self.batch, 1)?;
        at_least("log_every", self.log_every, 1)?;
        at_least("log_samples", self.log_samples, 2)?;
        match self.optimizer {
            OptimizerConfig::Dog(c) => {
                check_dog(c)?;
            }
            OptimizerConfig::Adam(c) => {
                positive("lr", c.lr)?;
            }
            OptimizerConfig::Sgd(c) => {
                positive("lr", c.lr)?;
                values::non_negative("sgd_power", c.power)?;
            }
        }
        if let Some(n) = self.threads {
            check_threads(n)?;
        }
        if let Some(p) = &self.precise {
            p.validate()?;
        }
        if let Some(m) = self.subsample {
            at_least("subsample", m, 1)?;
        }
        Ok(())
    }

    /// DSGD's accuracy must stay a positive finite number from the first step to the last.
    fn check_schedule(&self, decay: f64) -> Result<(), SettingError> {
        if self.estimator != EstimatorKind::Dsgd {
            return Ok(());
        }
        let s = Schedule::Tightening {
            eta: self.eta,
            decay,
        };
        let first = s.eta(0).unwrap_or(self.eta);
        let last = s.eta(self.iterations.saturating_sub(1)).unwrap_or(self.eta);
        if !(first.is_finite() && last > 0.0) {
            return Err(SettingError::invalid(
                "eta_decay",
                format!(
                    "{} with eta {} makes eta_k {} (eta_0 = {first:e}, eta at the last \
                     iteration {last:e}); use a smaller decay",
                    shown(decay),
                    shown(self.eta),
                    if first.is_finite() {
                        "vanish"
                    } else {
                        "overflow"
                    }
                ),
            ));
        }
        Ok(())
    }

    /// Refuses a setting whose memory cannot fit on this machine, before any of it is
    /// allocated: the batch and measurement samples with a workspace per thread, and the
    /// trajectory (one row per measurement).
    pub fn check_resources(&self, model: &Model) -> Result<(), SettingError> {
        let f = Footprint::of(model);
        let threads = self.threads.unwrap_or_else(default_threads);
        check_memory(
            vec![
                ("batch", self.batch.to_string()),
                ("log_samples", self.log_samples.to_string()),
                ("threads", threads.to_string()),
            ],
            f.run_bytes(self.batch, self.log_samples, threads),
        )?;
        check_memory(
            vec![
                ("iters", self.iterations.to_string()),
                ("log_every", self.log_every.to_string()),
            ],
            f.report_bytes(self.iterations, self.log_every),
        )
    }
}

impl RunConfig {
    /// Refuses a comparison whose runs cannot fit in memory: `seeds` seeds of every arm
    /// (DSGD and Fixed per each of `etas` etas, and the other estimators), each run with
    /// these settings, one per thread at a time, every report kept until the end.
    pub fn check_comparison(
        &self,
        model: &Model,
        seeds: u64,
        etas: usize,
    ) -> Result<(), SettingError> {
        let f = Footprint::of(model);
        let runs = u128::from(seeds) * (2 * etas as u128 + 5);
        let threads = self.threads.unwrap_or_else(default_threads);
        check_memory(
            vec![
                ("seeds", seeds.to_string()),
                ("log_samples", self.log_samples.to_string()),
            ],
            threads as u128 * f.run_bytes(self.batch, self.log_samples, 1)
                + runs * f.report_bytes(self.iterations, self.log_every),
        )
    }
}

/// DoG's settings (none is an option of the front ends; a library caller may set them): a
/// positive first step, a non-negative averaging `gamma`, a forgetting decay in `[0, 1)`.
fn check_dog(c: DogConfig) -> Result<(), SettingError> {
    let bad = |what: String| Err(SettingError::invalid("optimizer", format!("dog's {what}")));
    if !(c.alpha > 0.0 && c.alpha.is_finite()) {
        return bad(format!(
            "alpha must be positive and finite, got {}",
            shown(c.alpha)
        ));
    }
    if let Some(g) = c.average.filter(|g| !(*g >= 0.0 && g.is_finite())) {
        return bad(format!(
            "averaging gamma must be non-negative and finite, got {}",
            shown(g)
        ));
    }
    if let Some(b) = c.forget.filter(|b| !(0.0..1.0).contains(b)) {
        return bad(format!(
            "forgetting decay must be in [0, 1), got {}",
            shown(b)
        ));
    }
    Ok(())
}

/// A run's settings as a user gave them: `None` is "not given", filled in by
/// [`RunOptions::resolve`] from a model's recommended settings, then the defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOptions {
    /// The estimator.
    pub estimator: Option<EstimatorKind>,
    /// `eta` or `auto`.
    pub eta: Option<EtaSetting>,
    /// DSGD's decay.
    pub eta_decay: Option<f64>,
    /// The units of DSGD's `eta`.
    pub eta_scale: Option<EtaScale>,
    /// Optimisation steps.
    pub iterations: Option<u64>,
    /// Gradient samples per step.
    pub batch: Option<usize>,
    /// The optimiser (default: [`RunOptions::optimizer_kind`]).
    pub optimizer: Option<OptimizerKind>,
    /// The optimiser's (initial) step size; given without an optimiser, it selects Adam.
    pub lr: Option<f64>,
    /// SGD's power.
    pub sgd_power: Option<f64>,
    /// The seed.
    pub seed: Option<u64>,
    /// Iterations between measurements.
    pub log_every: Option<u64>,
    /// Fresh samples per measurement.
    pub log_samples: Option<usize>,
    /// What to do on a non-finite step.
    pub on_nonfinite: Option<OnNonFinite>,
    /// Worker threads.
    pub threads: Option<usize>,
    /// The precise final measurement, when asked for.
    pub precise: Option<PreciseOptions>,
    /// Rows of each plate read per optimisation step.
    pub subsample: Option<usize>,
}

impl RunOptions {
    /// The optimiser: the one named, else Adam when a step size is given (by the user, or a
    /// built-in model whose paper-tuned Adam beats DoG on it), else DoG, which needs none
    /// ([`OptimizerConfig::default_for`]).
    pub fn optimizer_kind(&self, recommended: Recommended) -> OptimizerKind {
        match (self.optimizer, self.lr.or(recommended.lr)) {
            (Some(kind), _) => kind,
            (None, Some(_)) => OptimizerKind::Adam,
            (None, None) => OptimizerKind::Dog,
        }
    }

    /// The optimiser with its hyperparameters: what was given, else the model's
    /// recommendation, else the optimiser's defaults.
    pub fn optimizer_config(&self, recommended: Recommended) -> OptimizerConfig {
        match self.optimizer_kind(recommended) {
            OptimizerKind::Dog => OptimizerConfig::Dog(DogConfig::default()),
            OptimizerKind::Adam => {
                let d = AdamConfig::default();
                OptimizerConfig::Adam(AdamConfig {
                    lr: self.lr.or(recommended.lr).unwrap_or(d.lr),
                    ..d
                })
            }
            OptimizerKind::Sgd => {
                let d = SgdConfig::default();
                OptimizerConfig::Sgd(SgdConfig {
                    lr: self.lr.unwrap_or(d.lr),
                    power: self.sgd_power.unwrap_or(d.power),
                })
            }
        }
    }

    /// The whole configuration, checked: what was given, else `recommended` (a built-in
    /// model's own settings, [`crate::models::recommended`]), else the defaults.
    pub fn resolve(&self, recommended: Recommended) -> Result<RunConfig, SettingError> {
        let d = RunConfig::default();
        let (eta, eta_auto) = match self.eta {
            None => (d.eta, false),
            Some(EtaSetting::Value(x)) => (x, false),
            Some(EtaSetting::Auto) => (START_AMPLITUDE, true),
        };
        let precise = self.precise.map(|p| {
            let dp = PreciseConfig::default();
            PreciseConfig {
                rel_se: p.rel_se.unwrap_or(dp.rel_se),
                min_samples: p.min_samples.unwrap_or(dp.min_samples),
                max_samples: p.max_samples.unwrap_or(dp.max_samples),
            }
        });
        let config = RunConfig {
            estimator: self.estimator.unwrap_or(d.estimator),
            eta,
            eta_auto,
            eta_decay: self.eta_decay.or(recommended.eta_decay),
            eta_scale: self
                .eta_scale
                .or(recommended.eta_scale)
                .unwrap_or(d.eta_scale),
            iterations: self.iterations.unwrap_or(d.iterations),
            batch: self.batch.unwrap_or(d.batch),
            optimizer: self.optimizer_config(recommended),
            seed: self.seed.unwrap_or(d.seed),
            log_every: self.log_every.unwrap_or(d.log_every),
            log_samples: self.log_samples.unwrap_or(d.log_samples),
            on_nonfinite: self.on_nonfinite.unwrap_or(d.on_nonfinite),
            threads: self.threads,
            precise,
            subsample: self.subsample,
        };
        config.validate()?;
        Ok(config)
    }

    /// The options given that this estimator or optimiser does not read: the run goes on
    /// without them, and a front end may warn. `recommended` is the model's, which may
    /// choose the optimiser (see [`RunOptions::optimizer_kind`]).
    pub fn ignored(&self, recommended: Recommended) -> Vec<Ignored> {
        let estimator = self.estimator.unwrap_or(EstimatorKind::Dsgd);
        let optimizer = self.optimizer_kind(recommended);
        let by_estimator = ("estimator", estimator.name().to_string());
        let mut out = Vec::new();
        if matches!(self.eta, Some(EtaSetting::Value(_))) && !estimator.uses_eta() {
            out.push(Ignored {
                option: "eta",
                by: by_estimator.clone(),
                reason: "only dsgd and fixed smooth",
            });
        }
        if self.eta_decay.is_some() && estimator != EstimatorKind::Dsgd {
            out.push(Ignored {
                option: "eta_decay",
                by: by_estimator,
                reason: "only dsgd tightens eta",
            });
        }
        if self.sgd_power.is_some() && optimizer != OptimizerKind::Sgd {
            out.push(Ignored {
                option: "sgd_power",
                by: ("optimizer", optimizer.name().to_string()),
                reason: "only sgd has a step power",
            });
        }
        if self.lr.is_some() && optimizer == OptimizerKind::Dog {
            out.push(Ignored {
                option: "lr",
                by: ("optimizer", optimizer.name().to_string()),
                reason: "it has no step size",
            });
        }
        out
    }
}

/// An option given that the chosen estimator or optimiser does not read.
#[derive(Clone, Debug, PartialEq)]
pub struct Ignored {
    /// The option given.
    pub option: &'static str,
    /// The choice that leaves it unread, with its value.
    pub by: (&'static str, String),
    /// Why it is not read.
    pub reason: &'static str,
}

impl Ignored {
    /// `--eta does not apply to --estimator score (only dsgd and fixed smooth)`.
    pub fn render(&self, style: Style) -> String {
        format!(
            "{} does not apply to {} ({})",
            style.name(self.option),
            style.given(self.by.0, &self.by.1),
            self.reason
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_and_its_decay_are_checked() {
        assert_eq!(eta(0.3), Ok(0.3));
        assert_eq!(
            eta(-1.0).unwrap_err().to_string(),
            "eta must be positive and finite, got -1"
        );
        assert!(eta(f64::NAN).is_err() && eta(f64::INFINITY).is_err());
        assert_eq!(eta_decay(0.5), Ok(0.5));
        let e = eta_decay(1e308).unwrap_err().to_string();
        assert!(
            e.starts_with("eta_decay must be at least 0 and at most 10"),
            "{e}"
        );
        assert!(e.ends_with("got 1e308"), "{e}");
        assert!(eta_decay(-0.1).is_err() && eta_decay(f64::NAN).is_err());
    }

    #[test]
    fn unset_options_come_from_the_model_then_the_defaults() {
        let none = RunOptions::default()
            .resolve(Recommended::default())
            .unwrap();
        assert_eq!(none, RunConfig::default());
        let xornet = Recommended {
            lr: Some(0.01),
            eta_decay: Some(0.2),
            eta_scale: Some(EtaScale::Absolute),
        };
        let c = RunOptions::default().resolve(xornet).unwrap();
        assert_eq!(c.optimizer.lr(), Some(0.01));
        assert_eq!(c.eta_decay, Some(0.2));
        let given = RunOptions {
            lr: Some(0.5),
            eta: Some(EtaSetting::Auto),
            ..RunOptions::default()
        };
        let c = given.resolve(xornet).unwrap();
        assert_eq!(c.optimizer.lr(), Some(0.5));
        assert!(c.eta_auto && c.eta == START_AMPLITUDE);
        assert_eq!(RunConfig::recommended("xornet").optimizer.lr(), Some(0.01));
        // The model's absolute eta, unless the user names the scale.
        assert_eq!(c.eta_scale, EtaScale::Absolute);
        assert_eq!(none.eta_scale, EtaScale::Relative);
        let relative = RunOptions {
            eta_scale: Some(EtaScale::Relative),
            ..RunOptions::default()
        };
        assert_eq!(
            relative.resolve(xornet).unwrap().eta_scale,
            EtaScale::Relative
        );
        assert_eq!("Absolute".parse::<EtaScale>(), Ok(EtaScale::Absolute));
        assert!("both".parse::<EtaScale>().is_err());
    }

    #[test]
    fn the_optimiser_is_dog_unless_a_step_size_is_given() {
        let temperature = Recommended {
            lr: Some(0.0015),
            ..Recommended::default()
        };
        let kind = |o: &RunOptions, r| o.resolve(r).unwrap().optimizer.name();
        assert_eq!(kind(&RunOptions::default(), Recommended::default()), "dog");
        assert_eq!(RunConfig::default().optimizer.lr(), None);
        // A step size, the user's or the model's own, means Adam at that step.
        let lr = RunOptions {
            lr: Some(0.01),
            ..RunOptions::default()
        };
        assert_eq!(
            lr.resolve(Recommended::default()).unwrap().optimizer.lr(),
            Some(0.01)
        );
        assert_eq!(kind(&lr, Recommended::default()), "adam");
        assert_eq!(kind(&RunOptions::default(), temperature), "adam");
        let dog = RunOptions {
            optimizer: Some(OptimizerKind::Dog),
            ..lr.clone()
        };
        assert_eq!(kind(&dog, temperature), "dog");
        assert_eq!(lr.ignored(Recommended::default()), vec![]);
        let ignored = dog.ignored(temperature);
        assert_eq!(ignored.len(), 1);
        assert_eq!(
            ignored[0].render(Style::Flag),
            "--lr does not apply to --optimizer dog (it has no step size)"
        );
        let bad = RunConfig {
            optimizer: OptimizerConfig::Dog(DogConfig {
                alpha: 0.0,
                ..DogConfig::default()
            }),
            ..RunConfig::default()
        };
        assert_eq!(bad.validate().unwrap_err().option(), "optimizer");
    }

    #[test]
    fn absurd_settings_are_refused_naming_the_option() {
        let bad = |o: RunOptions| o.resolve(Recommended::default()).unwrap_err();
        let e = bad(RunOptions {
            eta_decay: Some(1e308),
            ..RunOptions::default()
        });
        assert_eq!(e.option(), "eta_decay");
        // Within the cap, but with an eta whose first step overflows.
        let e = bad(RunOptions {
            eta: Some(EtaSetting::Value(1e300)),
            eta_decay: Some(10.0),
            ..RunOptions::default()
        });
        assert!(e.to_string().contains("overflow"), "{e}");
        let e = bad(RunOptions {
            eta: Some(EtaSetting::Value(1e-300)),
            eta_decay: Some(10.0),
            iterations: Some(u64::MAX),
            ..RunOptions::default()
        });
        assert!(e.to_string().contains("vanish"), "{e}");
        assert_eq!(
            bad(RunOptions {
                estimator: Some(EstimatorKind::Score),
                eta: Some(EtaSetting::Auto),
                ..RunOptions::default()
            })
            .option(),
            "eta"
        );
        assert_eq!(
            bad(RunOptions {
                threads: Some(100_000),
                ..RunOptions::default()
            })
            .option(),
            "threads"
        );
        assert_eq!(
            "rmsprop".parse::<OptimizerKind>().unwrap_err().option(),
            "optimizer"
        );
        assert_eq!("x".parse::<EtaSetting>().unwrap_err().option(), "eta");
        assert_eq!("auto".parse::<EtaSetting>(), Ok(EtaSetting::Auto));
        assert_eq!(
            "ignore".parse::<OnNonFinite>().unwrap_err().option(),
            "on_nonfinite"
        );
    }

    #[test]
    fn a_trajectory_beyond_memory_is_refused_up_front() {
        let model = crate::models::builtin("example").unwrap().unwrap();
        let config = RunConfig {
            iterations: u64::MAX,
            log_every: 1,
            ..RunConfig::default()
        };
        let e = config.check_resources(&model).unwrap_err();
        assert_eq!(e.kind, super::super::SettingKind::Memory);
        assert!(
            e.render(super::super::Style::Flag)
                .starts_with("--iters 18446744073709551615 with --log-every 1 would need"),
            "{e}"
        );
        let big_batch = RunConfig {
            batch: 1 << 62,
            ..RunConfig::default()
        };
        assert_eq!(
            big_batch.check_resources(&model).unwrap_err().option(),
            "batch"
        );
        assert!(RunConfig::default().check_resources(&model).is_ok());
    }
}
