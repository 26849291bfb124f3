//! A run's settings, decided in one place: every option's default, a built-in model's
//! recommended values, the check of each value, and the resource checks (memory, threads)
//! made before anything of a setting's size is allocated.
//!
//! The front ends only fill in what their user gave: the command line's flags and the
//! Python package's keywords become a [`RunOptions`], which [`RunOptions::resolve`] turns
//! into a checked [`RunConfig`]. An error is a [`SettingError`] that names the options at
//! fault; each front end renders it in its own words (`--log-samples 5` on the command line,
//! `log_samples=5` in Python, see [`Style`]), and Python raises `MemoryError` for a
//! [`SettingKind::Memory`] and `ValueError` for the rest.

mod choices;
mod error;
mod options;
mod precise;
mod resources;
mod run;
mod values;

pub use choices::{EtaScale, EtaSetting, OnNonFinite, OptimizerKind};
pub use error::{SettingError, SettingKind, Style};
pub use options::{Ignored, RunOptions};
pub use precise::{PreciseConfig, PreciseOptions};
pub use resources::{
    Footprint, THREAD_CAP, check_memory, check_threads, default_threads, human_bytes, max_threads,
    memory_limit,
};
pub use run::{DEFAULT_ETA, RunConfig};
pub use values::{MAX_ETA_DECAY, at_least, eta, eta_decay, non_negative, positive, whole};
