//! The optimisers measured against each other: the paper's Adam settings and variants of DoG
//! (the default; without the settling rule, or with a coarser one; the last iterate instead
//! of the average; the plain sum of squared gradients; per coordinate), each with the default
//! estimator (DSGD) and the model's decay, on the built-in models and on model files, over
//! several seeds.
//!
//! ```sh
//! cargo run --release --example optimiser_table -- [seeds] [model or file.dsgd ...]
//! cargo run --release --example optimiser_table -- 5 example temperature walk my_model.dsgd
//! ```
//!
//! For each model and optimiser it prints the final objective (the precise measurement at the
//! reported parameters, `dsgd run --precise`) as mean ± standard error over the seeds, the first fitted value's
//! mean ± standard error (a parameter, else the first latent's mean), and how many runs said
//! converged. Runs go in parallel, one thread each; every run is a pure function of its seed.

use rayon::prelude::*;

use dsgd::experiment::precise::PreciseConfig;
use dsgd::experiment::protocol::paper_settings;
use dsgd::experiment::run::{RunConfig, run};
use dsgd::optim::{AdamConfig, DogConfig, OptimizerConfig};

fn candidates(model: &str, builtin: bool) -> Vec<(&'static str, OptimizerConfig)> {
    let lr = if builtin {
        paper_settings(model).0
    } else {
        AdamConfig::default().lr
    };
    let dog = DogConfig::default();
    let variant = |label, config| (label, OptimizerConfig::Dog(config));
    vec![
        (
            "adam (paper)",
            OptimizerConfig::Adam(AdamConfig {
                lr,
                ..AdamConfig::default()
            }),
        ),
        variant("dog (default)", dog),
        variant(
            "dog unsettled",
            DogConfig {
                settle: None,
                ..dog
            },
        ),
        variant(
            "dog settle 1",
            DogConfig {
                settle: Some(1.0),
                ..dog
            },
        ),
        variant(
            "dog last iter",
            DogConfig {
                average: None,
                ..dog
            },
        ),
        variant(
            "dog sum",
            DogConfig {
                forget: None,
                ..dog
            },
        ),
        variant(
            "dog coord sum",
            DogConfig {
                per_coordinate: true,
                forget: None,
                ..dog
            },
        ),
        variant(
            "dog coord .99",
            DogConfig {
                per_coordinate: true,
                forget: Some(0.99),
                ..dog
            },
        ),
    ]
}

fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, (v / n).sqrt())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let seeds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(5);
    let names: Vec<String> = args.collect();
    let models: Vec<(String, dsgd::ir::Model, bool)> = names
        .iter()
        .map(|n| match dsgd::builtin(n) {
            Some(m) => (n.clone(), m.expect("built-in compiles"), true),
            None => (
                n.clone(),
                dsgd::compile_file(n).unwrap_or_else(|e| panic!("{n}: {e}")),
                false,
            ),
        })
        .collect();
    let mut jobs = Vec::new();
    for (mi, (_, model, builtin)) in models.iter().enumerate() {
        for (ci, (_, opt)) in candidates(&model.name, *builtin).into_iter().enumerate() {
            for seed in 0..seeds {
                let decay = builtin.then(|| paper_settings(&model.name).1).flatten();
                jobs.push((
                    mi,
                    ci,
                    RunConfig {
                        optimizer: opt,
                        eta_decay: decay,
                        seed,
                        threads: Some(1),
                        precise: Some(PreciseConfig::default()),
                        ..RunConfig::default()
                    },
                ));
            }
        }
    }
    let results: Vec<_> = jobs
        .par_iter()
        .map(|(mi, ci, cfg)| {
            let r = run(&models[*mi].1, cfg, &mut []).expect("run");
            let first = r
                .params
                .0
                .first()
                .map(|(_, v)| *v)
                .or_else(|| r.latents.first().map(|l| l.mean))
                .unwrap_or(f64::NAN);
            let sd = r.latents.first().map_or(f64::NAN, |l| l.sd);
            let value = r.final_precise.map_or(r.final_value, |p| p.value);
            (*mi, *ci, value, first, sd, r.converged)
        })
        .collect();
    println!(
        "{:<14} {:<16} {:>26} {:>26} {:>20} {:>5}",
        "model", "optimiser", "final value", "first value", "first latent sd", "conv"
    );
    for (mi, (name, model, builtin)) in models.iter().enumerate() {
        for (ci, (label, _)) in candidates(&model.name, *builtin).iter().enumerate() {
            let rows: Vec<_> = results.iter().filter(|r| r.0 == mi && r.1 == ci).collect();
            let v: Vec<f64> = rows.iter().map(|r| r.2).collect();
            let p: Vec<f64> = rows.iter().map(|r| r.3).collect();
            let s: Vec<f64> = rows.iter().map(|r| r.4).collect();
            let conv = rows.iter().filter(|r| r.5).count();
            let (vm, vs) = mean_se(&v);
            let (pm, ps) = mean_se(&p);
            let (sm, ss) = mean_se(&s);
            let short = std::path::Path::new(name)
                .file_stem()
                .map_or(name.clone(), |s| s.to_string_lossy().into_owned());
            println!(
                "{short:<14} {label:<16} {:>26} {:>26} {:>20} {conv:>2}/{}",
                format!("{vm:.5} ± {vs:.2e}"),
                format!("{pm:.5} ± {ps:.2e}"),
                format!("{sm:.4} ± {ss:.1e}"),
                rows.len()
            );
        }
    }
}
