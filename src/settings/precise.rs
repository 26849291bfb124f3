//! The precise final measurement's settings: when it stops drawing, as given and decided.

use serde::Serialize;

use super::error::SettingError;
use super::values::{at_least, positive};

/// When the precise final measurement stops drawing.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct PreciseConfig {
    /// Stop once the standard error is at most this fraction of `|value|`.
    pub rel_se: f64,
    /// Always draw at least this many samples: an event rarer than about `3 / min_samples`
    /// may otherwise go unseen, and with it the standard error that it would cause.
    pub min_samples: usize,
    /// Never draw more than this many.
    pub max_samples: usize,
}

impl Default for PreciseConfig {
    fn default() -> Self {
        PreciseConfig {
            rel_se: 1e-3,
            min_samples: 100_000,
            max_samples: 1_000_000,
        }
    }
}

impl PreciseConfig {
    /// Checks the settings, naming the first bad one.
    pub fn validate(&self) -> Result<(), SettingError> {
        positive("precise_rel_se", self.rel_se)?;
        at_least("precise_min_samples", self.min_samples, 2)?;
        if self.max_samples < self.min_samples {
            return Err(SettingError::invalid(
                "precise_max_samples",
                format!(
                    "({}) must be at least precise_min_samples ({})",
                    self.max_samples, self.min_samples
                ),
            ));
        }
        Ok(())
    }
}

/// The precise measurement's settings as given (`precise=True` and its three numbers).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct PreciseOptions {
    /// The target standard error relative to `|value|`.
    pub rel_se: Option<f64>,
    /// The floor of samples.
    pub min_samples: Option<usize>,
    /// The cap of samples.
    pub max_samples: Option<usize>,
}
