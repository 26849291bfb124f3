//! Subsampled steps over a plate with a latent per row: a step reads and moves the shared
//! parameters and the drawn rows' guides alone (an undrawn row's guide is left bit for bit,
//! whatever the optimiser), and the subsampled fit still ends at the full-data answer: on a
//! normal random-effects model, whose exact posterior is known, the fitted guide's means are
//! the posterior means (mean-field on a Gaussian posterior keeps the means exact).

use std::path::Path;

use dsgd::estimate::{Engine, EstimatorKind, Problem, Purpose, StreamKey, build};
use dsgd::lang::{CompileOptions, PlatePolicy, compile_source};
use dsgd::{AdamConfig, DogConfig, Model, OptimizerConfig, RunConfig, SgdConfig};

/// The prior scale of `mu`, the rows' spread `tau` and the noise `sigma`.
const S0: f64 = 10.0;
const TAU: f64 = 1.0;
const SIGMA: f64 = 0.5;

/// `n` responses `y_i = 1.5 + u_i + sigma e_i`, `u_i, e_i` standard normals from a fixed
/// generator (Box-Muller on a linear congruential sequence).
fn responses(n: usize) -> Vec<f64> {
    let mut state = 11u64;
    let mut uniform = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let mut normal = || {
        let (a, b) = (uniform(), uniform());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    };
    (0..n)
        .map(|_| 1.5 + TAU * normal() + SIGMA * normal())
        .collect()
}

/// The random-intercept model over `y`, its loop kept as a plate: `mu ~ N(0, S0)`, a latent
/// `u_i ~ N(0, TAU)` per row, `y_i ~ N(mu + u_i, SIGMA)`.
fn model(y: &[f64]) -> Model {
    let data: Vec<String> = y.iter().map(|v| format!("{v:?}")).collect();
    let source = format!(
        "data y = [{}];\n\
         let mu = sample Normal(0, {S0:?});\n\
         for i in 0..len(y) {{\n\
           let u = sample Normal(0, {TAU:?});\n\
           observe y[i] ~ Normal(mu + u, {SIGMA:?});\n\
         }}\n",
        data.join(", ")
    );
    let opts = CompileOptions {
        plates: PlatePolicy::On,
        ..CompileOptions::default()
    };
    let model = compile_source("ranef.dsgd", &source, Path::new("."), &opts).unwrap();
    assert_eq!(model.plates.len(), 1, "the loop is a plate");
    assert_eq!(model.plates[0].row_latents.len(), 1);
    model
}

/// The exact posterior means of `mu` and of each `u_i`, and the mean-field optimum's
/// standard deviation of `mu` (the inverse root of its posterior precision's diagonal).
/// Marginally `y_i ~ N(mu, sigma^2 + tau^2)`, so `E[mu | y]` is the conjugate normal mean,
/// and `E[u_i | y] = tau^2 / (sigma^2 + tau^2) (y_i - E[mu | y])`.
fn posterior(y: &[f64]) -> (f64, Vec<f64>, f64) {
    let v = SIGMA * SIGMA + TAU * TAU;
    let n = y.len() as f64;
    let mu = (y.iter().sum::<f64>() / v) / (1.0 / (S0 * S0) + n / v);
    let u = y.iter().map(|&yi| TAU * TAU / v * (yi - mu)).collect();
    let sd_mu = (1.0 / (S0 * S0) + n / (SIGMA * SIGMA)).sqrt().recip();
    (mu, u, sd_mu)
}

/// The components of `theta` that belong to row `r`'s latent `u[r]` (`mu[u[r]]`,
/// `rho[u[r]]`).
fn row_components(problem: &Problem, r: usize) -> Vec<usize> {
    let names = problem.family().names();
    let (mu, rho) = (format!("mu[u[{r}]]"), format!("rho[u[{r}]]"));
    names
        .iter()
        .enumerate()
        .filter(|(_, n)| **n == mu || **n == rho)
        .map(|(p, _)| p)
        .collect()
}

/// Over 40 subsampled steps of each optimiser (DoG, Adam, SGD; and Adam under the score
/// estimators, whose steps evaluate every row's guide), every component of an
/// undrawn row's guide is bit for bit what it was before the step, every drawn row's guide
/// is among the components the step touched, and the shared `mu` moves at every step.
/// Catches a step that moves every component (Adam's momentum moving rows without a
/// gradient), a touched set that misses a drawn row, and an engine that reads no subsample.
#[test]
fn an_undrawn_rows_guide_is_left_bit_for_bit() {
    let (n, m) = (60, 7);
    let model = model(&responses(n));
    let problem = Problem::new(&model).unwrap();
    let rows: Vec<Vec<usize>> = (0..n).map(|r| row_components(&problem, r)).collect();
    assert!(rows.iter().all(|c| c.len() == 2));
    let shared = problem.family().names().iter().position(|s| s == "mu[mu]");
    let shared = shared.unwrap();
    let optimisers = [
        OptimizerConfig::Dog(DogConfig::default()),
        OptimizerConfig::Adam(AdamConfig {
            lr: 0.05,
            ..AdamConfig::default()
        }),
        OptimizerConfig::Sgd(SgdConfig {
            lr: 0.01,
            power: 0.5,
        }),
    ];
    // Every optimiser under DSGD (a step that reads only the drawn rows), Adam under
    // Score and RLOO (a dense step whose gradient is zero at the undrawn rows).
    let runs = optimisers
        .iter()
        .map(|&o| (EstimatorKind::Dsgd, o))
        .chain([EstimatorKind::Score, EstimatorKind::Rloo].map(|k| (k, optimisers[1])));
    for (kind, config) in runs {
        let estimator = build(kind, &problem, 0.1, None).unwrap();
        let mut engine = Engine::new(problem.clone(), estimator);
        engine.set_subsample(Some(m));
        assert_eq!(engine.sparse_steps(), kind == EstimatorKind::Dsgd);
        let mut opt = config.build(problem.dim());
        let mut theta = problem.family().init();
        for k in 0..40 {
            let key = StreamKey::new(3, k, Purpose::Step);
            engine.step(&theta, key, 16).unwrap();
            let drawn: Vec<usize> = engine
                .subsample()
                .unwrap()
                .drawn(0)
                .unwrap()
                .iter()
                .map(|&r| r as usize)
                .collect();
            assert_eq!(drawn.len(), m);
            let touched = engine.touched().expect("a sparse step").to_vec();
            let before = theta.clone();
            opt.step_touched(&mut theta, engine.mean_gradient(), &touched);
            for (r, comps) in rows.iter().enumerate() {
                for &p in comps {
                    if drawn.contains(&r) {
                        assert!(touched.contains(&(p as u32)), "{kind} {config:?}: row {r}");
                    } else {
                        assert!(!touched.contains(&(p as u32)), "{kind} {config:?}: row {r}");
                        assert_eq!(
                            theta[p].to_bits(),
                            before[p].to_bits(),
                            "{kind} {config:?} step {k}: row {r} moved"
                        );
                    }
                }
            }
            assert!(theta[shared] != before[shared], "{config:?} step {k}");
        }
    }
}

/// A subsampled run (`dsgd::fit`) of one step: the guides of the rows the step did not draw
/// are still their initial values, bit for bit; the drawn rows' moved.
#[test]
fn a_subsampled_fit_leaves_the_undrawn_rows_at_their_start() {
    let (n, m) = (50, 5);
    let model = model(&responses(n));
    let problem = Problem::new(&model).unwrap();
    let init = problem.family().init();
    for optimizer in [
        OptimizerConfig::Dog(DogConfig::default()),
        OptimizerConfig::Adam(AdamConfig::default()),
    ] {
        let config = RunConfig {
            iterations: 1,
            subsample: Some(m),
            optimizer,
            seed: 4,
            log_every: 1,
            log_samples: 16,
            threads: Some(1),
            ..RunConfig::default()
        };
        let report = dsgd::fit(&model, &config).unwrap();
        let key = StreamKey::new(4, 0, Purpose::Step);
        let state = problem.family().state();
        let sub = problem.subsample(key, m, &state).unwrap();
        let drawn = sub.drawn(0).unwrap();
        for r in 0..n {
            let moved = row_components(&problem, r)
                .iter()
                .any(|&p| report.theta[p].to_bits() != init[p].to_bits());
            assert_eq!(moved, drawn.contains(&(r as u32)), "{optimizer:?}: row {r}");
        }
    }
}

/// The subsampled fit ends at the full-data answer: on the random-effects model (200 rows,
/// 20 drawn a step) DSGD with DoG, over six seeds, gives a fitted mean of `mu` within 4
/// standard errors (over the seeds) of the exact posterior mean, and its guide's standard
/// deviation within 10 % of the mean-field optimum's; the rows' fitted means are the exact
/// ones to within a tenth of their posterior spread on average. Catches a missing `n / M`
/// (the rows' likelihood then weighs M / n of what it should, moving `mu` towards its
/// prior and widening its guide tenfold) and rows that are never updated.
#[test]
fn a_subsampled_fit_converges_to_the_full_data_posterior() {
    let (n, m) = (200, 20);
    let y = responses(n);
    let model = model(&y);
    let (mu, u, sd_mu) = posterior(&y);
    let problem = Problem::new(&model).unwrap();
    let names = problem.family().latent_names().to_vec();
    let seeds = 6;
    let mut fitted = Vec::new();
    let mut row_error = 0.0;
    for seed in 0..seeds {
        let config = RunConfig {
            iterations: 20_000,
            subsample: Some(m),
            seed,
            log_every: 5_000,
            log_samples: 64,
            threads: Some(1),
            ..RunConfig::default()
        };
        let report = dsgd::fit(&model, &config).unwrap();
        let latent = |name: &str| report.latents.iter().find(|l| l.name == name).unwrap();
        let fit_mu = latent("mu");
        fitted.push(fit_mu.mean);
        assert!(
            (fit_mu.sd / sd_mu - 1.0).abs() < 0.1,
            "seed {seed}: sd {} against {sd_mu}",
            fit_mu.sd
        );
        // Each row's posterior spread: 1 / sqrt(1 / tau^2 + 1 / sigma^2).
        let sd_u = (1.0 / (TAU * TAU) + 1.0 / (SIGMA * SIGMA)).sqrt().recip();
        let mut sq = 0.0;
        for (r, exact) in u.iter().enumerate() {
            let name = format!("u[{r}]");
            assert!(names.contains(&name));
            let d = (latent(&name).mean - exact) / sd_u;
            sq += d * d;
        }
        row_error += (sq / n as f64).sqrt() / seeds as f64;
    }
    let k = seeds as f64;
    let mean = fitted.iter().sum::<f64>() / k;
    let var = fitted.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (k - 1.0);
    let se = (var / k).sqrt();
    assert!(
        (mean - mu).abs() <= 4.0 * se,
        "fitted mu {mean} (se {se}) against the posterior mean {mu} (sd {sd_mu})"
    );
    assert!(row_error < 0.1, "the rows' means are off by {row_error} sd");
}

/// A subsampled fit over row latents is a function of its seed alone: with a batch of three
/// chunks (shared out to the threads), one thread and two give the same report, bit for
/// bit. Catches chunks that draw their noise from the lanes of another chunk, or sums over
/// the touched components taken in the order the threads finish.
#[test]
fn a_subsampled_fit_does_not_depend_on_the_threads() {
    let model = model(&responses(80));
    let run = |threads| {
        let config = RunConfig {
            iterations: 200,
            batch: 48,
            subsample: Some(9),
            log_every: 100,
            log_samples: 32,
            threads: Some(threads),
            ..RunConfig::default()
        };
        let report = dsgd::fit(&model, &config).unwrap();
        let bits: Vec<u64> = report.theta.iter().map(|x| x.to_bits()).collect();
        (bits, report.final_value.to_bits())
    };
    assert!(run(1) == run(2));
}
