//! Everything the binding asks of the `dsgd` crate, in one place: compiling a model, turning
//! keyword options into a run configuration, running fits and comparisons (cancellably),
//! summarising and sampling the fitted guide, and per-sample gradients.
//!
//! The rest of the binding speaks Python and calls only this module, so that a change in the
//! core crate's API is a change here alone. Nothing here knows Python.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dsgd::estimate::{EstimateError, EstimatorKind, ITERATION_AT_ETA};
use dsgd::experiment::check::CheckReport;
pub use dsgd::experiment::compare::CompareOptions;
use dsgd::experiment::compare::{self, ModelComparison};
use dsgd::experiment::report::RunReport;
use dsgd::experiment::run::{RunError, run_cancellable};
use dsgd::experiment::tables;
use dsgd::lang::{
    CompileError, CompileOptions, DataSet, PlatePolicy, Resolver, compile_with_data, locate,
};
use dsgd::models::Recommended;
use dsgd::settings::{
    self, DEFAULT_ETA, Footprint, RunConfig, RunOptions, SettingError, SettingKind, Style,
    check_memory,
};
use dsgd::{Model, ThetaError};
use rayon::prelude::*;

/// Why a call failed, sorted by the Python exception it becomes.
#[derive(Debug)]
pub enum CoreError {
    /// The model text does not compile (`dsgd.CompileError`).
    Compile(Box<CompileError>),
    /// An impossible option or argument (`ValueError`), saying which and why.
    Invalid(String),
    /// A setting whose memory cannot fit on this machine (`MemoryError`), naming it.
    Memory(String),
    /// A file does not exist (`FileNotFoundError`).
    NotFound(String),
    /// A file could not be read (`OSError`).
    Io(String),
    /// The caller's cancel flag rose (becomes the pending `KeyboardInterrupt`).
    Cancelled,
    /// A panic caught at the binding's boundary (`RuntimeError`), with its message.
    Panicked(String),
}

impl From<SettingError> for CoreError {
    fn from(e: SettingError) -> CoreError {
        let msg = e.render(Style::Keyword);
        match e.kind {
            SettingKind::Memory => CoreError::Memory(msg),
            SettingKind::Invalid => CoreError::Invalid(msg),
        }
    }
}

impl From<ThetaError> for CoreError {
    fn from(e: ThetaError) -> CoreError {
        match e {
            ThetaError::Invalid(msg) => CoreError::Invalid(msg),
            ThetaError::Cancelled => CoreError::Cancelled,
        }
    }
}

impl From<RunError> for CoreError {
    fn from(e: RunError) -> CoreError {
        match e {
            RunError::Cancelled => CoreError::Cancelled,
            RunError::Setting(s) => CoreError::from(s),
            other => CoreError::Invalid(other.to_string()),
        }
    }
}

/// The compiler's options: the command line's limits and the plate policy `plates` (`auto`,
/// the default: a loop of independent iterations over at least `PLATE_MIN_ROWS` rows is kept
/// as a loop), stopping when `cancel` rises.
fn compile_options(plates: PlatePolicy, cancel: &Arc<AtomicBool>) -> CompileOptions {
    CompileOptions {
        cancel: Some(cancel.clone()),
        plates,
        ..CompileOptions::default()
    }
}

/// A compile error, or [`CoreError::Cancelled`] when the caller's flag stopped it.
fn compiled_or_cancelled(
    r: Result<Model, CompileError>,
    cancel: &AtomicBool,
) -> Result<Model, CoreError> {
    if r.is_err() && cancel.load(Ordering::Relaxed) {
        return Err(CoreError::Cancelled);
    }
    compiled(r)
}

/// Where a model's text comes from; enough to compile it again in another process (pickling,
/// Ray workers), data files included.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelSource {
    /// A built-in model, by name.
    Builtin(String),
    /// Model text, named `file` in messages, with the data files it read (path as written in
    /// the model -> contents), so that it compiles again where those files do not exist.
    Text {
        file: String,
        source: String,
        files: BTreeMap<String, String>,
    },
}

/// Reads data files from disk relative to a directory and remembers what it read.
struct RecordingResolver {
    base_dir: PathBuf,
    read: Mutex<BTreeMap<String, String>>,
}

impl Resolver for RecordingResolver {
    fn read(&self, path: &str) -> Result<String, String> {
        // The command line's data policy: regular files beside the model, size-capped.
        let text =
            dsgd::lang::FsResolver::new(&self.base_dir, &CompileOptions::default()).read(path)?;
        if let Ok(mut read) = self.read.lock() {
            read.insert(path.to_string(), text.clone());
        }
        Ok(text)
    }
}

/// Serves the data files a model read when it was first compiled.
struct Recorded<'a>(&'a BTreeMap<String, String>);

impl Resolver for Recorded<'_> {
    fn read(&self, path: &str) -> Result<String, String> {
        self.0.get(path).cloned().ok_or_else(|| {
            "not among the data files read when the model was first compiled".to_string()
        })
    }
}

/// Values bound to a model's `data` declarations: per name, the array's shape (empty for a
/// number) and its numbers row-major, as numpy holds them. The numbers are shared with the
/// compiled model's data set (bound without a copy).
pub type Data = Vec<(String, Vec<usize>, Arc<[f64]>)>;

fn dataset(data: &Data) -> Result<DataSet, CoreError> {
    let mut set = DataSet::new("data");
    for (name, shape, values) in data {
        set.insert_packed(name, shape, values.clone())
            .map_err(|e| CoreError::Invalid(e.to_string()))?;
    }
    Ok(set)
}

/// A compiled model with where it came from, the data bound to it and the plate policy it
/// was compiled with (kept, so that binding other data or unpickling compiles it the same).
#[derive(Clone, Debug)]
pub struct Compiled {
    pub model: Model,
    pub source: ModelSource,
    pub data: Data,
    pub plates: PlatePolicy,
}

impl Compiled {
    /// The model's text (a built-in's embedded source).
    pub fn text(&self) -> &str {
        match &self.source {
            ModelSource::Builtin(name) => dsgd::models::builtin_source(name).unwrap_or(""),
            ModelSource::Text { source, .. } => source,
        }
    }

    /// The file name used in messages.
    pub fn file(&self) -> String {
        match &self.source {
            ModelSource::Builtin(name) => format!("{name}.dsgd"),
            ModelSource::Text { file, .. } => file.clone(),
        }
    }
}

/// The built-in models: (name, one-line description), in `dsgd models` order.
pub fn builtin_models() -> Vec<(String, String)> {
    dsgd::models::builtins()
        .iter()
        .map(|b| (b.name.to_string(), b.description.to_string()))
        .collect()
}

fn compiled(r: Result<Model, CompileError>) -> Result<Model, CoreError> {
    r.map_err(|e| CoreError::Compile(Box::new(e)))
}

/// Compiles a built-in model, its `data` declarations bound from `data` (replacing the
/// embedded values).
pub fn compile_builtin(name: &str, data: Data, plates: PlatePolicy) -> Result<Compiled, CoreError> {
    let opts = CompileOptions {
        plates,
        ..CompileOptions::default()
    };
    match dsgd::models::builtin_with_options(name, &dataset(&data)?, &opts) {
        None => Err(CoreError::Invalid(format!(
            "no built-in model `{name}` (built-ins: {})",
            dsgd::models::builtin_names().join(", ")
        ))),
        Some(r) => Ok(Compiled {
            model: compiled(r)?,
            source: ModelSource::Builtin(name.to_string()),
            data,
            plates,
        }),
    }
}

/// Compiles model text named `file` in messages; data files are read relative to `base_dir`
/// and `data` binds `data` declarations by name.
pub fn compile_text(
    file: &str,
    source: &str,
    base_dir: &Path,
    data: Data,
    plates: PlatePolicy,
    cancel: &Arc<AtomicBool>,
) -> Result<Compiled, CoreError> {
    let resolver = RecordingResolver {
        base_dir: base_dir.to_path_buf(),
        read: Mutex::new(BTreeMap::new()),
    };
    let set = dataset(&data)?;
    let model = compiled_or_cancelled(
        compile_with_data(
            file,
            source,
            &resolver,
            &set,
            &compile_options(plates, cancel),
        ),
        cancel,
    )?;
    let files = resolver.read.into_inner().unwrap_or_default();
    Ok(Compiled {
        model,
        source: ModelSource::Text {
            file: file.to_string(),
            source: source.to_string(),
            files,
        },
        data,
        plates,
    })
}

/// The text of the model file at `path`: a regular file of at most the model-file cap (never
/// /dev/zero or a FIFO), read once.
pub fn read_model_file(path: &Path) -> Result<String, CoreError> {
    dsgd::input::read_text(
        path,
        dsgd::input::Links::Follow,
        dsgd::lang::MAX_SOURCE_BYTES,
    )
    .map_err(|e| {
        let msg = format!("cannot read model file: {e}");
        if e.is_not_found() {
            CoreError::NotFound(msg)
        } else {
            CoreError::Io(msg)
        }
    })
}

/// Compiles `source` again with `data` (after unpickling in another process, or to bind
/// other data): data files come from those read the first time.
pub fn recompile(
    source: &ModelSource,
    data: Data,
    plates: PlatePolicy,
    cancel: &Arc<AtomicBool>,
) -> Result<Compiled, CoreError> {
    match source {
        ModelSource::Builtin(name) => compile_builtin(name, data, plates),
        ModelSource::Text {
            file,
            source: text,
            files,
        } => {
            let set = dataset(&data)?;
            let model = compiled_or_cancelled(
                compile_with_data(
                    file,
                    text,
                    &Recorded(files),
                    &set,
                    &compile_options(plates, cancel),
                ),
                cancel,
            )?;
            Ok(Compiled {
                model,
                source: source.clone(),
                data,
                plates,
            })
        }
    }
}

/// What `dsgd check --json` prints for this model.
pub fn check_json(c: &Compiled) -> String {
    let text = c.text();
    let file = c.file();
    let locate_span = |s| {
        let l = locate(text, s);
        format!("{file}:{}:{}", l.line, l.column)
    };
    let report = CheckReport::new(&c.model, &locate_span);
    serde_json::to_string(&report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The layout of a model's optimised vector `theta` and its fitted latents.
pub struct Layout {
    /// `theta`'s components: the model's `param`s, then `mu[z]`, `rho[z]` per guided latent.
    pub theta_names: Vec<String>,
    /// Where a fit starts.
    pub init_theta: Vec<f64>,
    /// The fitted latents (fixed ones left out), in the order of the report's `latents`.
    pub latent_names: Vec<String>,
}

/// The layout of `model`.
pub fn layout(model: &Model) -> Result<Layout, CoreError> {
    let l = dsgd::theta_layout(model)?;
    Ok(Layout {
        theta_names: l.theta_names,
        init_theta: l.init_theta,
        latent_names: l.latent_names,
    })
}

/// The model's recommended settings (a built-in's own; none for model text).
fn recommended(c: &Compiled) -> Recommended {
    match &c.source {
        ModelSource::Builtin(name) => dsgd::models::recommended(name),
        ModelSource::Text { .. } => Recommended::default(),
    }
}

/// What `dsgd run` warns of for the same options, in keyword spelling: each option given
/// that the run does not read (`eta does not apply to estimator=score (only dsgd and fixed
/// smooth); ignored`).
pub fn ignored_options(c: &Compiled, o: &RunOptions) -> Vec<String> {
    o.ignored(recommended(c))
        .iter()
        .map(|i| format!("{}; ignored", i.render(Style::Keyword)))
        .collect()
}

/// [`ignored_options`] for [`gradients`]: its estimator, eta and eta_decay.
pub fn ignored_gradient_options(o: &GradientOptions) -> Vec<String> {
    let as_run = RunOptions {
        estimator: o.estimator,
        eta: o.eta.map(settings::EtaSetting::Value),
        eta_decay: o.eta_decay,
        ..RunOptions::default()
    };
    as_run
        .ignored(Recommended::default())
        .iter()
        .map(|i| format!("{}; ignored", i.render(Style::Keyword)))
        .collect()
}

/// The run configuration `dsgd run` would build from the same options: what the caller
/// left unset comes from a built-in model's recommended settings, then the defaults; a
/// setting that cannot fit on this machine is refused before the run.
pub fn run_config(c: &Compiled, o: &RunOptions) -> Result<RunConfig, CoreError> {
    let config = o.resolve(recommended(c))?;
    config.check_resources(&c.model)?;
    Ok(config)
}

/// One fit, ending early with [`CoreError::Cancelled`] when `cancel` rises.
pub fn fit(c: &Compiled, config: &RunConfig, cancel: &AtomicBool) -> Result<RunReport, CoreError> {
    run_cancellable(&c.model, config, &mut [], cancel).map_err(|e| located(c, e))
}

/// A run error, with a non-affine guard's source position as `file:line:column` (as the
/// command line says it).
fn located(c: &Compiled, err: RunError) -> CoreError {
    match err {
        RunError::Estimate(EstimateError::NotAffine {
            index,
            span: Some(span),
            reason,
        }) => {
            let at = locate(c.text(), span);
            CoreError::Invalid(format!(
                "LYY18 does not apply to this model: the guard of if-statement #{index} at {}:{}:{} is not affine ({reason})",
                c.file(),
                at.line,
                at.column
            ))
        }
        other => CoreError::from(other),
    }
}

/// Many fits of one model in parallel across fits (results in the given order, each a pure
/// function of its configuration), ending early when `cancel` rises.
pub fn fit_many(
    c: &Compiled,
    configs: &[RunConfig],
    cancel: &AtomicBool,
) -> Result<Vec<RunReport>, CoreError> {
    configs
        .par_iter()
        .with_max_len(1)
        .map(|config| fit(c, config, cancel))
        .collect()
}

/// The report as `dsgd run --json` prints it.
pub fn report_json(r: &RunReport) -> String {
    r.to_json()
}

/// `dsgd compare` on `model`: every applicable estimator, DSGD and Fixed per eta, seeds
/// `0..seeds`, with the command line's settings. JSON: `comparison` (what `dsgd compare
/// --json` prints), per cell the paper's `paper` mean and std (built-in paper models) and
/// whether it lies in the tolerance `band`, and the command line's markdown `table`.
pub fn compare(c: &Compiled, o: &CompareOptions, cancel: &AtomicBool) -> Result<String, CoreError> {
    let model = &c.model;
    let base = o.base(model, matches!(c.source, ModelSource::Builtin(_)))?;
    let (etas, seeds) = (o.etas(), o.seeds());
    let note = compare::lyy18_refusal(model);
    let arms = compare::arms(&etas, note.is_none());
    let configs: Vec<RunConfig> = compare::jobs(0, &arms, seeds, &base)
        .into_iter()
        .map(|j| j.config)
        .collect();
    let reports = fit_many(c, &configs, cancel)?;
    let refs: Vec<&RunReport> = reports.iter().collect();
    let cmp: ModelComparison = compare::aggregate(&model.name, &arms, &refs, note);
    let paper: Vec<_> = cmp
        .cells
        .iter()
        .map(|c| {
            tables::paper_cell(&cmp.model, &c.arm)
                .map(|p| serde_json::json!({"mean": p.mean, "std": p.std}))
        })
        .collect();
    let band = tables::band_check(&cmp);
    let inside: Vec<Option<bool>> = cmp
        .cells
        .iter()
        .map(|c| {
            band.iter()
                .find(|b| b.arm == c.arm.label())
                .map(|b| b.inside)
        })
        .collect();
    let out = serde_json::json!({
        "comparison": cmp,
        "paper": paper,
        "band": inside,
        "table": tables::table1(&cmp),
    });
    Ok(out.to_string())
}

/// `n` draws of the fitted latents (the order of `RunReport::latents`) from the family at
/// `theta`, in natural units (`z = T(loc + scale s)`), row-major; a pure function of `seed`.
/// Ends early with [`CoreError::Cancelled`] when `cancel` rises; `n` beyond this machine's
/// memory is refused before anything is drawn.
pub fn sample(
    model: &Model,
    theta: &[f64],
    n: u64,
    seed: u64,
    cancel: &AtomicBool,
) -> Result<Vec<f64>, CoreError> {
    check_memory(
        vec![("n", n.to_string())],
        Footprint::of(model).draw_bytes(n),
    )?;
    // Within memory, so within a machine word.
    let n = usize::try_from(n).map_err(|_| CoreError::Memory(format!("n={n} is too large")))?;
    Ok(dsgd::draws_at(model, theta, n, seed, cancel)?)
}

/// The options of [`gradients`] as given (`None`: the default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GradientOptions {
    pub estimator: Option<EstimatorKind>,
    pub eta: Option<f64>,
    pub eta_decay: Option<f64>,
    pub seed: Option<u64>,
    /// The iteration whose streams (and, for DSGD, whose `eta_k`) are used (default: the
    /// one whose `eta_k` is `eta`).
    pub iteration: Option<u64>,
}

/// `n` per-sample gradient estimates at `theta`, row-major `(n, dim)`: the samples that an
/// optimisation step at `iteration` with batch `n` would average (gradients of the maximised
/// objective: the ELBO, `E` for `maximize`, `-E` for `minimize`).
pub fn gradients(
    model: &Model,
    theta: &[f64],
    n: usize,
    o: &GradientOptions,
    cancel: &AtomicBool,
) -> Result<Vec<f64>, CoreError> {
    if n == 0 {
        return Err(CoreError::Invalid("n must be at least 1".into()));
    }
    check_memory(
        vec![("n", n.to_string())],
        Footprint::of(model).gradient_bytes(n as u64),
    )?;
    let eta = settings::eta(o.eta.unwrap_or(DEFAULT_ETA))?;
    let eta_decay = o.eta_decay.map(settings::eta_decay).transpose()?;
    // A step of a run with these settings and the default eta scale (relative for DSGD).
    let config = RunConfig {
        estimator: o.estimator.unwrap_or(EstimatorKind::Dsgd),
        eta,
        eta_decay,
        seed: o.seed.unwrap_or(0),
        ..RunConfig::default()
    };
    let iteration = o.iteration.unwrap_or(ITERATION_AT_ETA);
    Ok(dsgd::step_gradients(
        model, &config, theta, n, iteration, cancel,
    )?)
}
