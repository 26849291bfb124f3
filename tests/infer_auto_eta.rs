//! `--eta auto` and the smoothing gap: determinism, the gap's bookkeeping, the adaptive
//! schedule's guarantees (its amplitude never grows, `eta_k -> 0`), and the adaptive schedule
//! against DSGD's default on two problems whose answer is known: Example 1.1 (stationary
//! point 0.3722) and a model whose optimal guide has a closed form.

use std::path::Path;

use dsgd::estimate::{EstimatorKind, K_MATCH, START_AMPLITUDE};
use dsgd::experiment::report::RunReport;
use dsgd::experiment::run::{RunConfig, run};
use dsgd::lang::{CompileOptions, compile_source};
use dsgd::special::normal_cdf;

/// An if-statement inside an observation's mean whose guard is built from another
/// if-statement (`abs`): with prior N(0, 1), observation 0.3 ~ N(m(z), 0.5),
/// `m = 1` when `|z| < 1` else `-1`.
const OBS: &str = "let z = sample Normal(0, 1) init(mean = 0.5, std = 1);
observe 0.3 ~ Normal(if abs(z) < 1 { 1 } else { -1 }, 0.5);
";

/// The model as written: its if-statement is not lifted out of the observation (lifted, the
/// smoothing's error is of second order and the default schedule already ends at the
/// optimum, `the_lifted_observation_puts_the_default_at_the_optimum`), so that the
/// tightening rule has a first-order bias to remove.
fn model() -> dsgd::ir::Model {
    let opts = CompileOptions {
        lift_observations: false,
        ..CompileOptions::default()
    };
    compile_source("obs", OBS, Path::new("."), &opts).unwrap()
}

/// The ELBO of the guide N(mu, s^2) in closed form: the observation's mean is 1 with
/// probability P = Phi((1 - mu) / s) - Phi((-1 - mu) / s) under the guide.
fn elbo(mu: f64, s: f64) -> f64 {
    use std::f64::consts::PI;
    let log_n =
        |y: f64, m: f64, sd: f64| -0.5 * ((y - m) / sd).powi(2) - sd.ln() - 0.5 * (2.0 * PI).ln();
    let p = normal_cdf((1.0 - mu) / s) - normal_cdf((-1.0 - mu) / s);
    -0.5 * (mu * mu + s * s) - 0.5 * (2.0 * PI).ln()
        + p * log_n(0.3, 1.0, 0.5)
        + (1.0 - p) * log_n(0.3, -1.0, 0.5)
        + s.ln()
        + 0.5 * (2.0 * PI * std::f64::consts::E).ln()
}

/// The optimal guide standard deviation (the optimal mean is 0 by symmetry), by golden
/// section on the closed form.
fn optimal_sd() -> f64 {
    let (mut a, mut b) = (0.2, 1.5);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..200 {
        let (c, d) = (b - g * (b - a), a + g * (b - a));
        if elbo(0.0, c) > elbo(0.0, d) {
            b = d;
        } else {
            a = c;
        }
    }
    0.5 * (a + b)
}

fn config(eta_auto: bool, seed: u64) -> RunConfig {
    RunConfig {
        estimator: EstimatorKind::Dsgd,
        eta_auto,
        seed,
        ..RunConfig::default()
    }
}

fn strip(mut r: RunReport) -> RunReport {
    r.seconds = 0.0;
    r
}

#[test]
fn the_closed_form_is_right() {
    // Symmetric in mu, and its maximiser lies inside the bracket.
    assert!((elbo(0.2, 0.6) - elbo(-0.2, 0.6)).abs() < 1e-12);
    let s = optimal_sd();
    assert!(s > 0.3 && s < 1.2, "{s}");
    assert!(elbo(0.0, s) > elbo(0.05, s) && elbo(0.0, s) > elbo(0.0, s * 1.05));
}

#[test]
fn auto_runs_are_the_same_for_any_thread_count() {
    let m = model();
    let one = run(
        &m,
        &RunConfig {
            threads: Some(1),
            ..config(true, 3)
        },
        &mut [],
    )
    .unwrap();
    let two = run(
        &m,
        &RunConfig {
            threads: Some(2),
            ..config(true, 3)
        },
        &mut [],
    )
    .unwrap();
    assert!(one.eta_auto && one.eta == Some(dsgd::settings::EtaSetting::Auto));
    assert_eq!(strip(one), strip(two));
}

/// Mean and standard error over `seeds` runs of `f(report)`.
fn over_seeds(
    m: &dsgd::ir::Model,
    auto: bool,
    seeds: u64,
    f: impl Fn(&RunReport) -> f64,
) -> (f64, f64) {
    let v: Vec<f64> = (0..seeds)
        .map(|seed| f(&run(m, &config(auto, seed), &mut []).unwrap()))
        .collect();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

#[test]
fn auto_finds_the_optimal_guide_within_its_monte_carlo_error() {
    let m = model();
    let target = optimal_sd();
    let sd = |r: &RunReport| {
        assert!(r.latents[0].mean.abs() < 0.1, "{:?}", r.latents);
        r.latents[0].sd
    };
    let (auto, se) = over_seeds(&m, true, 8, sd);
    let (default, default_se) = over_seeds(&m, false, 8, sd);
    // Three standard errors of the seeds' mean: the smoothing's bias is gone within the
    // Monte Carlo error (the default schedule ends at about 0.65, 25 of its errors away).
    assert!(
        (auto - target).abs() < 3.0 * se,
        "auto {auto} +- {se}, optimum sd {target}"
    );
    assert!(
        (auto - target).abs() < (default - target).abs(),
        "auto {auto} +- {se} vs default {default} +- {default_se} (optimum sd {target})"
    );
}

/// The same model with its observation's if-statement lifted (the compiler's default): the
/// smoothed program mixes the two log-densities, an error of second order in eta, and the
/// default schedule ends at the optimal guide within its Monte Carlo error (measured, 8
/// seeds: sd 0.5583 +- 0.0010 against 0.5580; written as is, 0.647 +- 0.003). Catches a
/// lift that does not happen or mixes the arguments.
#[test]
fn the_lifted_observation_puts_the_default_at_the_optimum() {
    let m = compile_source("obs", OBS, Path::new("."), &CompileOptions::default()).unwrap();
    let target = optimal_sd();
    let (default, se) = over_seeds(&m, false, 8, |r: &RunReport| r.latents[0].sd);
    assert!(
        (default - target).abs() < 3.0 * se,
        "default {default} +- {se}, optimum sd {target}"
    );
}

#[test]
fn smoothing_runs_log_the_gap_and_warn_when_it_is_visible() {
    let m = model();
    let fixed = |eta: f64| RunConfig {
        estimator: EstimatorKind::Fixed,
        eta,
        iterations: 300,
        ..RunConfig::default()
    };
    let coarse = run(&m, &fixed(1.0), &mut []).unwrap();
    for row in &coarse.trajectory {
        let (s, g, se) = (row.smoothed.unwrap(), row.gap.unwrap(), row.gap_se.unwrap());
        assert!((s - row.value - g).abs() < 1e-9 * (1.0 + s.abs()));
        assert!(se > 0.0);
    }
    // At eta 1 the smoothed observation mean is far from the crisp one.
    let last = coarse.trajectory.last().unwrap();
    assert!(
        last.gap.unwrap().abs() > 10.0 * last.gap_se.unwrap(),
        "{last:?}"
    );
    assert!(coarse.smoothing_warning.is_some());
    let crisp = run(
        &m,
        &RunConfig {
            estimator: EstimatorKind::Reparam,
            iterations: 300,
            ..RunConfig::default()
        },
        &mut [],
    )
    .unwrap();
    assert!(crisp.trajectory.iter().all(|r| r.gap.is_none()));
    assert!(crisp.smoothing_warning.is_none());
}

#[test]
fn auto_is_refused_for_other_estimators() {
    let cfg = RunConfig {
        estimator: EstimatorKind::Fixed,
        eta_auto: true,
        ..RunConfig::default()
    };
    let err = run(&model(), &cfg, &mut []).unwrap_err().to_string();
    assert!(err.contains("eta auto"), "{err}");
}

/// Example 1.1 (`maximize E[-z^2/2 + [z >= 0]]`, `z ~ N(theta, 1)`) with its built-in
/// settings: Adam, step 0.0015, 10,000 iterations.
fn example() -> dsgd::ir::Model {
    dsgd::models::builtin("example").unwrap().unwrap()
}

/// The paper's stationary point of Example 1.1: the root of `theta = N(theta | 0, 1)`.
const STATIONARY: f64 = 0.3722;

/// Mean and standard error of the final `theta` over `seeds` runs.
fn final_theta(auto: bool, seeds: u64) -> (f64, f64) {
    over_seeds(&example(), auto, seeds, |r| r.theta[0])
}

#[test]
fn auto_finds_example_1_1s_stationary_point_within_its_monte_carlo_error() {
    let (auto, se) = final_theta(true, 6);
    let (default, default_se) = final_theta(false, 6);
    // Three standard errors of the seeds' mean (plus the paper's rounding of 0.3722), for
    // both. Not "auto lands closer than the default": over 60 seeds auto ends 0.004 (+-
    // 0.0007, paired) below the default, which sits on the stationary point, so which of
    // the two lands closer on six seeds is chance.
    assert!(
        (auto - STATIONARY).abs() < 3.0 * se + 5e-5,
        "auto {auto} +- {se}, want {STATIONARY}"
    );
    assert!(
        (default - STATIONARY).abs() < 3.0 * default_se + 5e-5,
        "default {default} +- {default_se}, want {STATIONARY}"
    );
}

/// The amplitude `eta_k / (K_MATCH / (k + 1))^decay` of each measurement of a run.
fn amplitudes(r: &RunReport) -> Vec<f64> {
    let decay = r.eta_decay.unwrap();
    r.trajectory
        .iter()
        .map(|row| row.eta.unwrap() / (K_MATCH / (row.iter as f64 + 1.0)).powf(decay))
        .collect()
}

#[test]
fn the_adaptive_amplitude_never_grows_and_eta_goes_to_zero() {
    for (m, seed) in [(model(), 0), (model(), 1), (example(), 2)] {
        let r = run(&m, &config(true, seed), &mut []).unwrap();
        let a = amplitudes(&r);
        assert!(a[0] <= START_AMPLITUDE * (1.0 + 1e-12), "{a:?}");
        for w in a.windows(2) {
            assert!(w[1] <= w[0] * (1.0 + 1e-12), "the amplitude grew: {a:?}");
        }
        // So eta_k is below the largest paper schedule, which tends to 0.
        let etas: Vec<f64> = r.trajectory.iter().map(|row| row.eta.unwrap()).collect();
        for (row, eta) in r.trajectory.iter().zip(&etas) {
            let bound =
                START_AMPLITUDE * (K_MATCH / (row.iter as f64 + 1.0)).powf(r.eta_decay.unwrap());
            assert!(*eta <= bound * (1.0 + 1e-12), "{eta} > {bound}");
        }
        assert!(etas.last().unwrap() < &(0.5 * etas[0]), "{etas:?}");
    }
}

/// The starting race on two paper models that want opposite smoothing: temperature ends
/// best with the least (Table 1: -76 at eta 0.06, -163,476 at 0.22), xornet with the most
/// (-1,055 at 0.06, -28 at 0.22). The candidates run from the initial parameters with the
/// paper's settings, to 10 % of the run, and the two best on to 50 %.
#[test]
fn the_starting_race_picks_opposite_amplitudes_on_temperature_and_xornet() {
    use dsgd::estimate::race::{RaceConfig, Start, race};
    use dsgd::estimate::{AutoEta, Problem};
    for (name, want) in [("temperature", 0.055), ("xornet", 0.22)] {
        let m = dsgd::models::builtin(name).unwrap().unwrap();
        let problem = Problem::new(&m).unwrap();
        let settings = dsgd::models::recommended(name);
        let decay = settings
            .eta_decay
            .unwrap_or_else(|| problem.analysis().default_eta_decay());
        let auto = AutoEta::new(decay, 10_000);
        let optimizer = dsgd::OptimizerConfig::Adam(dsgd::AdamConfig {
            lr: settings.lr.unwrap_or(dsgd::AdamConfig::default().lr),
            ..Default::default()
        })
        .build(problem.dim());
        let theta = problem.family().init();
        let cfg = RaceConfig {
            length: auto.race_length(),
            batch: 16,
            samples: 1000,
            decay,
            seed: 0,
            subsample: None,
        };
        let start = Start {
            k: 0,
            theta: &theta,
            optimizer: optimizer.as_ref(),
            cancel: &std::sync::atomic::AtomicBool::new(false),
        };
        let r = race(&problem, &cfg, &start, &auto.race_at(0).unwrap());
        assert_eq!(r.chosen, want, "{name}: {:?}", r.entries);
        // Not a tie broken by preference: the chosen candidate is the best outright.
        let best = r.entries.iter().map(|e| e.value).fold(f64::MIN, f64::max);
        assert_eq!(
            r.entries
                .iter()
                .find(|e| e.amplitude == want)
                .unwrap()
                .value,
            best
        );
    }
}

/// The acceptance on the paper's six models (about two minutes on one core: run with
/// `--ignored`): with the paper's settings and seeds 0-4, auto's mean final objective is at
/// least the median over Table 1's five etas of fixed-schedule DSGD's, on every model, and
/// within 2 % (or 3 nats) of the best of them on at least four. Runs are pure functions of
/// their seeds, so this is exact, but cheating's margin (0.0002 nats, its etas spanning
/// 0.004) is a coin toss that any change of numerics may flip (docs/adaptive-eta.md).
#[test]
#[ignore]
fn auto_against_the_fixed_etas_on_the_paper_models() {
    use dsgd::experiment::protocol::paper_settings;
    let mean_final = |m: &dsgd::ir::Model, name: &str, eta: Option<f64>| {
        let (lr, eta_decay) = paper_settings(name);
        (0..5)
            .map(|seed| {
                let cfg = RunConfig {
                    estimator: EstimatorKind::Dsgd,
                    eta: eta.unwrap_or(0.1),
                    eta_auto: eta.is_none(),
                    eta_decay,
                    optimizer: dsgd::OptimizerConfig::Adam(dsgd::AdamConfig {
                        lr,
                        ..Default::default()
                    }),
                    seed,
                    ..RunConfig::default()
                };
                run(m, &cfg, &mut []).unwrap().final_value
            })
            .sum::<f64>()
            / 5.0
    };
    let mut near = 0;
    for name in dsgd::experiment::reproduction::PAPER_MODELS {
        let m = dsgd::models::builtin(name).unwrap().unwrap();
        let mut fixed: Vec<f64> = dsgd::experiment::paper::ETAS
            .iter()
            .map(|&eta| mean_final(&m, name, Some(eta)))
            .collect();
        fixed.sort_by(f64::total_cmp);
        let auto = mean_final(&m, name, None);
        let (median, best) = (fixed[2], fixed[4]);
        eprintln!("{name}: auto {auto}, fixed {fixed:?}");
        assert!(auto >= median, "{name}: auto {auto} < median {median}");
        if best - auto <= (0.02 * best.abs()).max(3.0) {
            near += 1;
        }
    }
    assert!(near >= 4, "near the best on {near} of 6");
}
