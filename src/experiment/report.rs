//! The serialisable result of a run (`dsgd run --json`, `run.json`, `trajectory.csv`); the
//! files are written whole by [`super::outfiles`].
//!
//! These structs are the only serialised types of a run; every field is documented here and
//! in `docs/json.md`. Non-finite numbers are written as `null` in JSON. New measurements are
//! added as new fields (a reader ignores what it does not know).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

pub use super::draws::{DrawError, Draws};
use super::precise::PreciseValue;
pub use super::summary::LatentSummary;
use crate::settings::EtaSetting;

/// One measurement: at iteration `iter` (steps taken so far), the crisp objective estimate,
/// the variance of the estimator's gradient samples, and the fitted values at that iterate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrajectoryRow {
    /// Steps taken when the measurement was made (0 = the initial parameters).
    pub iter: u64,
    /// Mean crisp `f` over the fresh samples: the ELBO, or in objective mode the user's `E`
    /// (for `minimize E` this is `E` itself, not the maximised `-E`).
    pub value: f64,
    /// Monte Carlo standard error of `value` (sample sd over `sqrt(log_samples)`).
    pub value_se: f64,
    /// Mean over components of the per-component sample variance (ddof 1).
    pub var_component: f64,
    /// Sample variance (ddof 1) of the L2 norm of the gradient samples.
    pub var_norm: f64,
    /// The accuracy coefficient the estimator used at this iteration (smoothed estimators).
    pub eta: Option<f64>,
    /// The smoothed objective at `eta` on the same samples as `value` (smoothed estimators).
    pub smoothed: Option<f64>,
    /// The smoothing gap `smoothed - value`: how far the problem the estimator differentiates
    /// is from the original one at this iterate.
    pub gap: Option<f64>,
    /// The standard error of `gap` (the per-sample differences' sd over the square root of
    /// their number).
    pub gap_se: Option<f64>,
    /// The model's own parameters at this iterate, in the order of `RunReport::params`.
    pub params: Vec<f64>,
    /// Each fitted latent's family location (guide mean in VI), in the order of
    /// `RunReport::latents`.
    pub latent_loc: Vec<f64>,
    /// Each fitted latent's family scale (guide standard deviation in VI).
    pub latent_scale: Vec<f64>,
}

/// Why a run ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// All requested iterations were taken.
    Completed,
    /// The objective or a gradient became NaN or infinite.
    NonFinite,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StopReason::Completed => "all iterations taken",
            StopReason::NonFinite => "stopped early: non-finite objective or gradient",
        })
    }
}

/// What a run's objective is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectiveKind {
    /// The evidence lower bound of a variational guide (a model with `sample`/`observe`).
    Elbo,
    /// A user's `maximize E` / `minimize E`.
    Objective,
}

impl ObjectiveKind {
    /// How stdout, CSV headers and figure axes name the value: `ELBO` or `objective`.
    pub fn label(self) -> &'static str {
        match self {
            ObjectiveKind::Elbo => "ELBO",
            ObjectiveKind::Objective => "objective",
        }
    }

    /// The CSV column of the value: `elbo` or `objective`.
    pub fn column(self) -> &'static str {
        match self {
            ObjectiveKind::Elbo => "elbo",
            ObjectiveKind::Objective => "objective",
        }
    }
}

/// Named values that serialise as a JSON object in their order (`{"theta": 0.37}`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NamedValues(pub Vec<(String, f64)>);

impl NamedValues {
    /// The value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// The names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }
}

impl Serialize for NamedValues {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Everything a run reports. `seconds` is the only field that depends on the machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// The model's name (the file stem, or the built-in's name).
    pub model: String,
    /// `elbo` (variational inference) or `objective` (`maximize`/`minimize`).
    pub kind: ObjectiveKind,
    /// `dsgd`, `fixed`, `reparam`, `score` or `lyy18`.
    pub estimator: String,
    /// `--eta` (the accuracy at iteration 4000, or Fixed's constant), `auto` (in JSON the
    /// string `"auto"`) when DSGD chose its accuracy from the run's measurements; `None`
    /// (null) when unused.
    pub eta: Option<EtaSetting>,
    /// True when DSGD chose its accuracy from the run's measurements (`--eta auto`; `eta`
    /// is then `auto` and the trajectory's `eta` shows the accuracy used at each
    /// measurement).
    pub eta_auto: bool,
    /// The decay of DSGD's schedule; null for other estimators.
    pub eta_decay: Option<f64>,
    /// `relative` when DSGD smoothed each guard linear in the latents at eta times its
    /// standard deviation under the guide (`--eta-scale relative`); absent when every eta is
    /// in the guards' own units (the paper's smoothing, and Fixed's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta_scale: Option<String>,
    /// `dog`, `adam` or `sgd`.
    pub optimizer: String,
    /// The step size (Adam's, or SGD's `gamma_0`); null for DoG, which has none.
    pub lr: Option<f64>,
    /// SGD's `p` in `gamma_0 / k^p`; null for the others.
    pub sgd_power: Option<f64>,
    /// Gradient samples averaged per step.
    pub batch: usize,
    /// The seed: the run is a pure function of it.
    pub seed: u64,
    /// Steps actually taken.
    pub iterations: u64,
    /// Steps asked for.
    pub iterations_requested: u64,
    /// Iterations between two measurements.
    pub log_every: u64,
    /// Fresh samples per measurement.
    pub log_samples: usize,
    /// The rows of each plate an optimisation step read (`--subsample`); absent when steps
    /// read every row. The measurements then read M rows too, each chunk of 16 samples rows
    /// of its own: `final_value` and the trajectory estimate the full-data objective from
    /// `log_samples` fresh samples, their standard errors over those chunks (the rows'
    /// sampling included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subsample: Option<usize>,
    /// The last measured value of the objective (the ELBO, or the user's `E`).
    pub final_value: f64,
    /// Monte Carlo standard error of `final_value`.
    pub final_value_se: f64,
    /// `final_value` again, present only when `kind` is `elbo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_elbo: Option<f64>,
    /// The objective at the final parameters from many fresh samples, with its standard
    /// error (`value`, `se`, `samples`); only when asked for (`dsgd run --precise`, and in
    /// `dsgd reproduce`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_precise: Option<PreciseValue>,
    /// The model's own parameters (`param`) at the end, by name (an empty object if none).
    pub params: NamedValues,
    /// Each fitted latent's distribution at the end, in its own units (fixed latents are
    /// left out).
    pub latents: Vec<LatentSummary>,
    /// Whether the run converged by the documented rule (`docs/design.md`).
    pub converged: bool,
    /// Why it is or is not judged converged, and what to change if not.
    pub convergence: String,
    /// The optimised vector: the model's parameters, then `(mu, rho)` per guided latent.
    pub theta: Vec<f64>,
    /// The names of `theta`'s components (`theta`, `mu[z]`, `rho[z]`).
    pub theta_names: Vec<String>,
    /// `completed` or `non_finite`.
    pub stop_reason: StopReason,
    /// What went wrong, naming the iteration and the term, when the run stopped early.
    pub stop_message: Option<String>,
    /// Steps skipped because a sample's log-density or the mean gradient was not finite
    /// (`--on-nonfinite continue`).
    pub skipped_steps: u64,
    /// Set when a smoothing run ends with a smoothing gap larger than its noise: the answer
    /// is then that of the smoothed problem, not yet of the original one.
    pub smoothing_warning: Option<String>,
    /// Set when the estimator is biased for this program (`dsgd advise` says the same): its
    /// answer is then its own stationary point, not the program's.
    pub bias_warning: Option<String>,
    /// The measurements, every `log_every` iterations and at the end.
    pub trajectory: Vec<TrajectoryRow>,
    /// Wall-clock time of the run.
    pub seconds: f64,
}

impl RunReport {
    /// `n` independent draws of every fitted latent from the fitted family, deterministic
    /// in `seed` (draw `k` is the same however many are asked for).
    pub fn draws(&self, n: usize, seed: u64) -> Result<Draws, DrawError> {
        super::draws::draw(&self.latents, n, seed)
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// With `--on-nonfinite continue`, what went past a non-finite value, in a sentence: how
    /// many steps were skipped and how many measurements were not finite (each counted only
    /// when there is one: a non-finite measurement skips no step), then where the first
    /// problem was; `None` when nothing did or the run stopped there.
    pub fn nonfinite_note(&self) -> Option<String> {
        if self.stop_reason != StopReason::Completed {
            return None;
        }
        let msg = self.stop_message.as_deref()?;
        let measurements = self
            .trajectory
            .iter()
            .filter(|r| !r.value.is_finite())
            .count();
        let mut parts = Vec::new();
        if self.skipped_steps > 0 {
            parts.push(format!("{} non-finite step(s) skipped", self.skipped_steps));
        }
        if measurements > 0 {
            let tail = if self.skipped_steps == 0 {
                " (no step was skipped)"
            } else {
                ""
            };
            parts.push(format!("{measurements} measurement(s) not finite{tail}"));
        }
        Some(if parts.is_empty() {
            format!("a non-finite value was met and passed; first {msg}")
        } else {
            format!("{}; first {msg}", parts.join(" and "))
        })
    }

    /// The trajectory as a table, the columns of `trajectory.csv` and of the Python
    /// package's `Fit.to_pandas()` alike: `iter`, `value` (the ELBO or objective, as `kind`
    /// says) and `value_se`, the variances, `eta`, the smoothed value, the smoothing gap and
    /// its standard error (`None` unless smoothed), then one column per parameter (in its own
    /// units) and `u_loc[z]`, `u_scale[z]` per fitted latent: the `u_` columns are on the
    /// latent's unconstrained scale (the guide's Gaussian on `u`, with `z = T(u)`; `log z`
    /// for a positive latent). A cell is `None` where a row has no value (a family that
    /// could not be evaluated).
    pub fn trajectory_table(&self) -> (Vec<String>, Vec<Vec<Option<f64>>>) {
        let mut header: Vec<String> = [
            "iter",
            "value",
            "value_se",
            "var_component",
            "var_norm",
            "eta",
            "smoothed",
            "gap",
            "gap_se",
        ]
        .map(String::from)
        .to_vec();
        header.extend(self.params.names().map(String::from));
        for l in &self.latents {
            header.push(format!("u_loc[{}]", l.name));
            header.push(format!("u_scale[{}]", l.name));
        }
        let rows = self
            .trajectory
            .iter()
            .map(|row| {
                let mut rec = vec![
                    Some(row.iter as f64),
                    Some(row.value),
                    Some(row.value_se),
                    Some(row.var_component),
                    Some(row.var_norm),
                    row.eta,
                    row.smoothed,
                    row.gap,
                    row.gap_se,
                ];
                rec.extend(row.params.iter().copied().map(Some));
                for (loc, scale) in row.latent_loc.iter().zip(&row.latent_scale) {
                    rec.push(Some(*loc));
                    rec.push(Some(*scale));
                }
                rec.resize(header.len(), None);
                rec
            })
            .collect();
        (header, rows)
    }

    /// The trajectory as CSV: the columns of [`RunReport::trajectory_table`], an empty cell
    /// where it has none.
    pub fn trajectory_csv(&self) -> Result<String, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let (header, rows) = self.trajectory_table();
        w.write_record(&header)?;
        for (row, rec) in self.trajectory.iter().zip(rows) {
            let mut cells: Vec<String> = rec
                .into_iter()
                .map(|x| x.map(|x| x.to_string()).unwrap_or_default())
                .collect();
            // `iter` as an integer, as it was counted.
            cells[0] = row.iter.to_string();
            w.write_record(&cells)?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| csv::Error::from(e.into_error()))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Writes `run.json` and `trajectory.csv` into `dir` (created if needed) as a pair: never
    /// one beside the other's counterpart from another run (see [`super::outfiles`]).
    pub fn write_to(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let csv = self.trajectory_csv().map_err(std::io::Error::other)?;
        let json = self.to_json();
        super::outfiles::write_together(
            dir,
            &[
                ("run.json", json.as_bytes()),
                ("trajectory.csv", csv.as_bytes()),
            ],
        )
    }
}
