//! `dsgd run`: one optimisation run of a model with one estimator.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use dsgd::estimate::{EstimateError, EstimatorKind};
use dsgd::experiment::observe::Observer;
use dsgd::experiment::report::{ObjectiveKind, RunReport, StopReason};
use dsgd::experiment::run::{RunError, run as run_model};
use dsgd::models::Recommended;
use dsgd::settings::{
    EtaScale, EtaSetting, OnNonFinite, OptimizerKind, PreciseConfig, PreciseOptions, RunConfig,
    RunOptions, Style,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::args::{UsageError, count, eta_decay, non_negative, positive, threads};
use crate::load::{Loaded, SourceArgs, load_with_data};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A model file (`.dsgd`) or the name of a built-in model.
    model: String,
    #[command(flatten)]
    source: SourceArgs,
    /// A JSON object binding the model's `data` declarations by name (replacing their values).
    #[arg(long, value_name = "FILE.json")]
    pub data: Option<std::path::PathBuf>,
    /// The gradient estimator.
    #[arg(long, value_enum, default_value_t = EstimatorArg::Dsgd)]
    estimator: EstimatorArg,
    /// Smoothing accuracy: DSGD reaches it at iteration 4000; Fixed uses it throughout
    /// [default: 0.1]. `auto` (DSGD only) chooses it from the run's measurements
    /// (docs/adaptive-eta.md).
    #[arg(long, allow_negative_numbers = true, value_parser = eta)]
    eta: Option<EtaSetting>,
    /// DSGD's decay in eta_k = eta (4000 / (k + 1))^decay [default: a built-in model's own,
    /// else 1 / (2 * nesting depth)].
    #[arg(long, allow_negative_numbers = true, value_parser = eta_decay)]
    eta_decay: Option<f64>,
    /// The units of DSGD's eta: `relative` smooths each guard linear in the latents at eta
    /// times its standard deviation under the guide; `absolute` at eta in the guard's own
    /// units, as the paper does [default: relative] (docs/adaptive-eta.md).
    #[arg(long, value_parser = eta_scale)]
    eta_scale: Option<EtaScale>,
    /// Optimisation steps.
    #[arg(long, default_value_t = RunConfig::default().iterations, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
    /// Gradient samples averaged per step.
    #[arg(long, default_value_t = RunConfig::default().batch, value_parser = count::<1>)]
    batch: usize,
    /// The optimiser [default: dog, which needs no step size; adam when --lr is given or a
    /// built-in model has its own step size (temperature, xornet)].
    #[arg(long, value_parser = optimizer)]
    optimizer: Option<OptimizerKind>,
    /// Step size: Adam's (default: a built-in model's own, else 0.0015) or SGD's gamma_0 in
    /// gamma_0 / k^p (default 0.5). Given without --optimizer, it selects adam.
    #[arg(long, allow_negative_numbers = true, value_parser = positive)]
    lr: Option<f64>,
    /// SGD's p in gamma_0 / k^p [default: 1].
    #[arg(long, allow_negative_numbers = true, value_parser = non_negative)]
    sgd_power: Option<f64>,
    /// Random seed; the run is a pure function of it.
    #[arg(long, default_value_t = RunConfig::default().seed)]
    seed: u64,
    /// Measure the objective and the gradient variance every N iterations.
    #[arg(long, default_value_t = RunConfig::default().log_every, value_parser = clap::value_parser!(u64).range(1..))]
    log_every: u64,
    /// Fresh samples per measurement.
    #[arg(long, default_value_t = RunConfig::default().log_samples, value_parser = count::<2>)]
    log_samples: usize,
    /// Write run.json and trajectory.csv into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Worker threads [default: all cores]; results do not depend on it.
    #[arg(long, value_parser = threads)]
    threads: Option<usize>,
    /// Each step reads M rows of every loop kept as a plate, drawn afresh, the plate's sum
    /// scaled by rows / M: an unbiased gradient whose cost does not grow with the rows. The
    /// objective is measured on M rows per 16 samples, drawn afresh (an unbiased estimate
    /// of the full-data objective, its standard error including the rows' sampling). Not
    /// with LYY18.
    #[arg(long, value_name = "M", value_parser = count::<1>)]
    subsample: Option<usize>,
    /// What to do when the objective or a gradient is NaN or infinite.
    #[arg(long, value_enum, default_value_t = OnNonFiniteArg::Stop)]
    on_nonfinite: OnNonFiniteArg,
    /// Also measure the objective at the final parameters precisely: fresh samples until the
    /// standard error is at most --precise-rel-se of the value (at least
    /// --precise-min-samples, at most --precise-max-samples); reported as `final_precise`.
    #[arg(long)]
    precise: bool,
    /// The precise measurement's target standard error, relative to |value|.
    #[arg(long, default_value_t = PreciseConfig::default().rel_se, value_parser = positive, requires = "precise")]
    precise_rel_se: f64,
    /// The precise measurement's floor of samples.
    #[arg(long, default_value_t = PreciseConfig::default().min_samples, value_parser = count::<2>, requires = "precise")]
    precise_min_samples: usize,
    /// The precise measurement's cap of samples.
    #[arg(long, default_value_t = PreciseConfig::default().max_samples, value_parser = count::<2>, requires = "precise")]
    precise_max_samples: usize,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum EstimatorArg {
    Dsgd,
    Fixed,
    Reparam,
    Score,
    Lyy18,
    /// Score with a leave-one-out baseline.
    Rloo,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum OnNonFiniteArg {
    /// End the run and report the trajectory so far.
    Stop,
    /// Skip non-finite steps and keep going.
    Continue,
}

/// `--eta`: a positive number or `auto`.
fn eta(s: &str) -> Result<EtaSetting, String> {
    s.parse()
        .map_err(|e: dsgd::settings::SettingError| e.why().to_string())
}

/// `--optimizer`: any of the library's optimisers, by name.
fn optimizer(s: &str) -> Result<OptimizerKind, String> {
    s.parse()
        .map_err(|e: dsgd::settings::SettingError| e.why().to_string())
}

/// `--eta-scale`: relative or absolute.
fn eta_scale(s: &str) -> Result<EtaScale, String> {
    s.parse()
        .map_err(|e: dsgd::settings::SettingError| e.why().to_string())
}

impl RunArgs {
    /// What the user gave; the library fills in the rest.
    fn options(&self) -> RunOptions {
        RunOptions {
            estimator: Some(match self.estimator {
                EstimatorArg::Dsgd => EstimatorKind::Dsgd,
                EstimatorArg::Fixed => EstimatorKind::Fixed,
                EstimatorArg::Reparam => EstimatorKind::Reparam,
                EstimatorArg::Score => EstimatorKind::Score,
                EstimatorArg::Lyy18 => EstimatorKind::Lyy18,
                EstimatorArg::Rloo => EstimatorKind::Rloo,
            }),
            eta: self.eta,
            eta_decay: self.eta_decay,
            eta_scale: self.eta_scale,
            iterations: Some(self.iters),
            batch: Some(self.batch),
            optimizer: self.optimizer,
            lr: self.lr,
            sgd_power: self.sgd_power,
            seed: Some(self.seed),
            log_every: Some(self.log_every),
            log_samples: Some(self.log_samples),
            on_nonfinite: Some(match self.on_nonfinite {
                OnNonFiniteArg::Stop => OnNonFinite::Stop,
                OnNonFiniteArg::Continue => OnNonFinite::Continue,
            }),
            threads: self.threads,
            precise: self.precise.then_some(PreciseOptions {
                rel_se: Some(self.precise_rel_se),
                min_samples: Some(self.precise_min_samples),
                max_samples: Some(self.precise_max_samples),
            }),
            subsample: self.subsample,
        }
    }
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
struct Progress {
    bar: ProgressBar,
}

impl Progress {
    fn new(total: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} iterations  {msg}") {
            bar.set_style(style);
        }
        Progress { bar }
    }
}

impl Observer for Progress {
    fn iteration(&mut self, done: u64) {
        if done.is_multiple_of(50) {
            self.bar.set_position(done);
        }
    }

    fn logged(&mut self, row: &dsgd::experiment::report::TrajectoryRow) {
        self.bar.set_message(format!("value {:.4}", row.value));
    }

    fn finished(&mut self, _report: &RunReport) {
        self.bar.finish_and_clear();
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let options = args.options();
    if let Some(dir) = &args.out {
        // Before the run, not after every iteration has run.
        dsgd::experiment::outfiles::check_out_writable(dir)?;
    }
    let loaded = load_with_data(&args.model, &args.source, args.data.as_deref())?;
    let recommended = if loaded.builtin {
        dsgd::models::recommended(&loaded.model.name)
    } else {
        Recommended::default()
    };
    for ignored in options.ignored(recommended) {
        eprintln!("warning: {}; ignored", ignored.render(Style::Flag));
    }
    let config = options.resolve(recommended).map_err(UsageError::from)?;
    config
        .check_resources(&loaded.model)
        .map_err(UsageError::from)?;
    let mut progress = std::io::stderr()
        .is_terminal()
        .then(|| Progress::new(config.iterations));
    let mut observers: Vec<&mut dyn Observer> = Vec::new();
    if let Some(p) = progress.as_mut() {
        observers.push(p);
    }
    let report =
        run_model(&loaded.model, &config, &mut observers).map_err(|e| locate(e, &loaded))?;
    let written = match &args.out {
        Some(dir) => report
            .write_to(dir)
            .with_context(|| format!("writing results to {}", dir.display()))?,
        None => Vec::new(),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", report.to_json())?;
    } else {
        let own = Own {
            lr: args.lr.is_none()
                && recommended.lr.is_some()
                && options.optimizer_kind(recommended) == OptimizerKind::Adam,
            decay: args.eta_decay.is_none() && recommended.eta_decay.is_some(),
        };
        write_summary(&mut out, &report, own, &written)?;
    }
    out.flush()?;
    if let Some(w) = &report.smoothing_warning {
        eprintln!("warning: {w}");
    }
    if let Some(w) = &report.bias_warning {
        eprintln!("warning: {w}");
    }
    if report.iterations > 0 && report.skipped_steps == report.iterations {
        eprintln!(
            "error: every step was skipped: the gradient was never finite ({})",
            report.stop_message.as_deref().unwrap_or("no message")
        );
        return Ok(ExitCode::from(1));
    }
    match (report.stop_reason, &report.stop_message) {
        (StopReason::NonFinite, Some(msg)) => {
            eprintln!("error: run stopped {msg}");
            Ok(ExitCode::from(1))
        }
        (_, Some(_)) => {
            if let Some(note) = report.nonfinite_note() {
                eprintln!("warning: {note}");
            }
            Ok(ExitCode::SUCCESS)
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Which settings came from the built-in model rather than the user or the defaults.
#[derive(Copy, Clone, Debug, Default)]
struct Own {
    lr: bool,
    decay: bool,
}

/// A run error, with a non-affine guard's source position as `file:line:column`.
fn locate(err: RunError, loaded: &Loaded) -> anyhow::Error {
    match err {
        RunError::Estimate(EstimateError::NotAffine {
            index,
            span: Some(span),
            reason,
        }) => {
            let at = dsgd::lang::locate(&loaded.source, span);
            anyhow::anyhow!(
                "LYY18 does not apply to this model: the guard of if-statement #{index} at {}:{}:{} is not affine ({reason})",
                loaded.file,
                at.line,
                at.column
            )
        }
        other => other.into(),
    }
}

fn write_summary(
    out: &mut impl Write,
    r: &RunReport,
    own: Own,
    written: &[PathBuf],
) -> std::io::Result<()> {
    let mark = |yes: bool| if yes { " (the model's own)" } else { "" };
    let mut est = r.estimator.clone();
    let eta = if r.eta_auto {
        Some("auto".to_string())
    } else {
        r.eta.and_then(EtaSetting::value).map(|eta| eta.to_string())
    };
    if let Some(eta) = eta {
        est += &format!(" (eta {eta}");
        if let Some(d) = r.eta_decay {
            est += &format!(", decay {d}{}", mark(own.decay));
        }
        if let Some(scale) = &r.eta_scale {
            est += &format!(", {scale} to each guard's spread");
        }
        est += ")";
    }
    let optimizer = match r.lr {
        Some(lr) => format!("{} lr {lr}{}", r.optimizer, mark(own.lr)),
        None => format!("{} (no step size, iterates averaged)", r.optimizer),
    };
    writeln!(
        out,
        "{}: {est}, {optimizer}, batch {}, seed {}",
        r.model, r.batch, r.seed
    )?;
    let what = r.kind.label();
    writeln!(
        out,
        "{} of {} iterations in {:.2} s ({}); final {what} {:.6} (standard error {:.2e})",
        r.iterations,
        r.iterations_requested,
        r.seconds,
        r.stop_reason,
        r.final_value,
        r.final_value_se
    )?;
    if let Some(m) = r.subsample {
        writeln!(
            out,
            "steps read {m} rows of each plate, drawn afresh at each step (sums scaled by rows / {m}); \
             the {what} is estimated from {} fresh samples, each {} of them on {m} rows of their \
             own, its standard error over those groups (the rows' sampling included)",
            r.log_samples,
            dsgd::estimate::SAMPLE_GROUP
        )?;
    }
    if let Some(p) = &r.final_precise {
        writeln!(
            out,
            "precise final {what} {:.6} ± {:.2e} (standard error, {} samples)",
            p.value, p.se, p.samples
        )?;
    }
    if let Some(last) = r.trajectory.last()
        && let (Some(gap), Some(se)) = (last.gap, last.gap_se)
    {
        writeln!(
            out,
            "smoothing gap at the end: {gap:.6} ± {se:.2e} (smoothed minus original {what})"
        )?;
    }
    writeln!(out, "{}", r.convergence)?;
    if !r.params.0.is_empty() {
        writeln!(out, "parameters:")?;
        let width = r.params.names().map(str::len).max().unwrap_or(0);
        for (name, value) in &r.params.0 {
            writeln!(out, "  {name:<width$}  {value:.6}")?;
        }
    }
    if !r.latents.is_empty() {
        let heading = match r.kind {
            ObjectiveKind::Elbo => "latents (posterior approximation)",
            ObjectiveKind::Objective => "latents (sampling distribution at the final parameters)",
        };
        writeln!(out, "{heading}:")?;
        let width = r
            .latents
            .iter()
            .map(|l| l.name.len())
            .max()
            .unwrap_or(0)
            .max(6);
        writeln!(
            out,
            "  {:<width$}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}",
            "latent", "mean", "sd", "5%", "50%", "95%"
        )?;
        for l in &r.latents {
            writeln!(
                out,
                "  {:<width$}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}",
                l.name,
                short(l.mean),
                short(l.sd),
                short(l.q05),
                short(l.q50),
                short(l.q95)
            )?;
        }
    }
    for path in written {
        writeln!(out, "wrote {}", path.display())?;
    }
    Ok(())
}

/// A number in at most 11 characters, six significant digits.
fn short(x: f64) -> String {
    let s = format!("{x:.6}");
    if s.len() <= 11 { s } else { format!("{x:.4e}") }
}
