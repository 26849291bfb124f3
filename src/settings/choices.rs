//! A run's named choices and their text forms: the optimiser, `eta` as a number or `auto`,
//! the scale `eta` is given on, and what a run does on a non-finite value. Parsed by
//! `FromStr`, so that the command line and Python accept the same words.

use super::error::SettingError;
use super::values::eta;
use std::str::FromStr;

#[cfg(doc)]
use super::RunOptions;

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
