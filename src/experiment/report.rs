//! The serialisable result of a run (`dsgd run --json`, `run.json`, `trajectory.csv`) and
//! the atomic writing of those files.
//!
//! These structs are the only serialised types of a run; their snake_case keys are the ones
//! DESIGN.md section 6 fixes. Non-finite numbers are written as `null` in JSON.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// One measurement: at iteration `iter` (steps taken so far), the crisp objective estimate
/// and the variance of the estimator's gradient samples.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrajectoryRow {
    pub iter: u64,
    /// Mean crisp `f` over the fresh samples: the ELBO, or in objective mode the user's `E`
    /// (for `minimize E` this is `E` itself, not the maximised `-E`).
    pub elbo: f64,
    /// Mean over components of the per-component sample variance (ddof 1).
    pub var_component: f64,
    /// Sample variance (ddof 1) of the L2 norm of the gradient samples.
    pub var_norm: f64,
    /// The accuracy coefficient the estimator used at this iteration (smoothed estimators).
    pub eta: Option<f64>,
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
            StopReason::Completed => "completed",
            StopReason::NonFinite => "non-finite objective or gradient",
        })
    }
}

/// Everything a run reports. `seconds` is the only field that depends on the machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    pub model: String,
    /// `variational` (the objective is the ELBO) or `objective` (a user's `E`).
    pub mode: String,
    pub estimator: String,
    /// `--eta` (the accuracy at iteration 4000, or Fixed's constant); null when unused.
    pub eta: Option<f64>,
    /// The decay of DSGD's schedule; null for other estimators.
    pub eta_decay: Option<f64>,
    pub optimizer: String,
    pub lr: f64,
    /// SGD's `p` in `gamma_0 / k^p`; null for Adam.
    pub sgd_power: Option<f64>,
    pub batch: usize,
    pub seed: u64,
    /// Steps actually taken.
    pub iterations: u64,
    pub iterations_requested: u64,
    pub log_every: u64,
    pub log_samples: usize,
    /// The last logged objective estimate.
    pub final_elbo: f64,
    pub theta: Vec<f64>,
    pub theta_names: Vec<String>,
    pub stop_reason: StopReason,
    /// What went wrong, naming the iteration and the term, when the run stopped early.
    pub stop_message: Option<String>,
    /// Steps skipped because the gradient was not finite (`--on-nonfinite continue`).
    pub skipped_steps: u64,
    pub trajectory: Vec<TrajectoryRow>,
    /// Wall-clock time of the run.
    pub seconds: f64,
}

impl RunReport {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The trajectory as CSV (`iter,elbo,var_component,var_norm,eta`).
    pub fn trajectory_csv(&self) -> Result<String, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for row in &self.trajectory {
            w.serialize(row)?;
        }
        if self.trajectory.is_empty() {
            w.write_record(["iter", "elbo", "var_component", "var_norm", "eta"])?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| csv::Error::from(e.into_error()))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Writes `run.json` and `trajectory.csv` into `dir` (created if needed), each atomically.
    pub fn write_to(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let csv = self.trajectory_csv().map_err(std::io::Error::other)?;
        let json = dir.join("run.json");
        let traj = dir.join("trajectory.csv");
        write_atomic(&json, self.to_json().as_bytes())?;
        write_atomic(&traj, csv.as_bytes())?;
        Ok(vec![json, traj])
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it into place, so a reader
/// never sees a half-written file. The temporary file is new ([`create_temp_beside`]): a
/// symbolic link planted in a shared output directory is never written through.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (tmp, mut f) = create_temp_beside(path)?;
    let result = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The marker in the name of every temporary file of [`create_temp_beside`].
pub const TEMP_MARKER: &str = ".tmp-";

/// Creates a new, empty file beside `target` named `.NAME.tmp-RANDOM[.EXT]` (the extension
/// last, because some encoders choose the format from it). The name cannot be predicted and
/// the file is opened with `create_new`, which fails rather than follow a symbolic link or
/// reuse a file someone else put there.
pub fn create_temp_beside(target: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::hash::{BuildHasher, Hasher};
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".to_string());
    let ext = target
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let mut last = None;
    for attempt in 0u64..16 {
        // `RandomState` is keyed from the operating system's random source.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(attempt);
        h.write_u32(std::process::id());
        let tmp = target.with_file_name(format!(".{name}{TEMP_MARKER}{:016x}{ext}", h.finish()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// Deletes the temporary files an interrupted writer left under `dir` (recursively). Call
/// it only while no other writer uses `dir` (`reproduce` holds its lock).
pub fn remove_leftover_temps(dir: &Path) -> std::io::Result<usize> {
    let mut removed = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if name.starts_with('.') && name.contains(TEMP_MARKER) {
                std::fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}
