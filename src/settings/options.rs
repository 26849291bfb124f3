//! [`RunOptions`]: a run's settings as a user gave them, resolved with a model's
//! recommended values and the defaults into a checked [`RunConfig`], and the options that a
//! choice makes moot ([`Ignored`]).

use super::choices::{EtaScale, EtaSetting, OnNonFinite, OptimizerKind};
use super::error::{SettingError, Style};
use super::precise::{PreciseConfig, PreciseOptions};
use super::run::RunConfig;
use crate::estimate::{EstimatorKind, START_AMPLITUDE};
use crate::models::Recommended;
use crate::optim::{AdamConfig, DogConfig, OptimizerConfig, SgdConfig};

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

impl RunConfig {
    /// The defaults with a built-in model's recommended settings (Adam at temperature's and
    /// xornet's step sizes, xornet's decay); for any other name, the plain defaults (DoG).
    pub fn recommended(model_name: &str) -> RunConfig {
        RunOptions::default()
            .resolve(crate::models::recommended(model_name))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
