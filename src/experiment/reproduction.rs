//! What a reproduction is and what it produced: its settings (the paper's, or the quick
//! ones) and its outcome per model. Data only, apart from the pipeline (`reproduce.rs`) and
//! the Markdown (`report_md.rs`, `fidelity_md.rs`), which both read it without importing
//! each other.

use serde::Serialize;

use super::compare::ModelComparison;
use super::cost::{Cost, CostConfig};
use super::precise::PreciseConfig;
use super::protocol::{self, paper_run};
use super::run::RunConfig;
use super::tables::{self, VarianceRow};

/// The paper's six models, in its order (Example 1.1 is Figure 1a).
pub const PAPER_MODELS: [&str; 6] = crate::models::PAPER_MODELS;

/// Everything a reproduction does.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReproduceConfig {
    /// Quick mode: fewer iterations, seeds and etas; not comparable to the paper.
    pub quick: bool,
    /// The built-in models, by name.
    pub models: Vec<String>,
    /// Seeds per cell.
    pub seeds: u64,
    /// DSGD's and Fixed's etas.
    pub etas: Vec<f64>,
    /// Iterations per run.
    pub iterations: u64,
    /// Gradient samples per step.
    pub batch: usize,
    /// Iterations between logged rows.
    pub log_every: u64,
    /// Samples per logged measurement.
    pub log_samples: usize,
    /// The eta whose DSGD and Fixed runs give Table 2's variances.
    pub variance_eta: f64,
    /// Seeds of the band cells judged by their median (`tables::judged_by_median`: xornet);
    /// the first `seeds` of them are Table 1's, the rest are run for the band only.
    pub band_median_seeds: u64,
    /// Each run's precise final value (see [`super::precise`]); `None`: not measured.
    pub precise: Option<PreciseConfig>,
    /// How Table 2's costs are timed.
    #[serde(skip)]
    pub cost: CostConfig,
}

impl ReproduceConfig {
    /// The paper's settings: 10,000 iterations, batch 16, log every 100 with 1,000 samples,
    /// 5 seeds, eta 0.06 to 0.22.
    pub fn full() -> ReproduceConfig {
        ReproduceConfig {
            quick: false,
            models: PAPER_MODELS.iter().map(|s| s.to_string()).collect(),
            seeds: 5,
            etas: super::paper::ETAS.to_vec(),
            iterations: protocol::ITERATIONS,
            batch: protocol::BATCH,
            log_every: protocol::LOG_EVERY,
            log_samples: protocol::LOG_SAMPLES,
            variance_eta: protocol::VARIANCE_ETA,
            band_median_seeds: 20,
            precise: Some(protocol::PRECISE),
            cost: CostConfig::default(),
        }
    }

    /// The same pipeline, small: 1,000 iterations, 2 seeds, eta 0.1 and 0.14, 200 samples
    /// per measurement, short timings.
    pub fn quick() -> ReproduceConfig {
        ReproduceConfig {
            quick: true,
            seeds: 2,
            band_median_seeds: 2,
            etas: vec![0.1, 0.14],
            iterations: 1000,
            log_samples: 200,
            precise: Some(PreciseConfig {
                rel_se: 1e-3,
                min_samples: 1 << 13,
                max_samples: 1 << 15,
            }),
            cost: CostConfig {
                batch: 16,
                warmup_seconds: 0.02,
                repeats: 5,
                repeat_seconds: 0.01,
                threads: 1,
            },
            ..ReproduceConfig::full()
        }
    }

    /// The settings of one run of `model` (before estimator, eta and seed).
    pub fn base_run(&self, model: &str) -> RunConfig {
        RunConfig {
            eta: self.variance_eta,
            iterations: self.iterations,
            batch: self.batch,
            log_every: self.log_every,
            log_samples: self.log_samples,
            precise: self.precise,
            ..paper_run(model)
        }
    }
}

/// One model's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelOutcome {
    /// The comparison of the estimators (Table 1's cells).
    pub comparison: ModelComparison,
    /// The step size of the runs.
    pub lr: f64,
    /// The decay of DSGD's eta.
    pub eta_decay: f64,
    /// Table 2's cost measurements, one per estimator.
    pub costs: Vec<Cost>,
    /// Table 2's rows.
    pub variance: Vec<VarianceRow>,
    /// The band cells judged by their median, over all their seeds.
    pub median_cells: Vec<tables::MedianCell>,
    /// The trajectory figure, relative to the output directory, without extension.
    pub figure: String,
}

/// What a reproduction produced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reproduction {
    /// The settings.
    pub config: ReproduceConfig,
    /// One outcome per model, in the configuration's order.
    pub models: Vec<ModelOutcome>,
    /// Runs done.
    pub runs: usize,
    /// Threads of the sweep.
    pub threads: usize,
    /// Wall time of the sweep of runs.
    pub sweep_seconds: f64,
    /// Wall time of the cost measurements.
    pub cost_seconds: f64,
    /// From the start to the report (runs, files, figures, costs).
    pub wall_seconds: f64,
}
