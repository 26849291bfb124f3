//! Would a control variate for LYY18's boundary term pay? A measurement (ignored; it prints a
//! table for the docs) and a check of the decomposition it rests on.
//!
//! LYY18's boundary part of a sample is `B = K Delta(z*) w_kj(z*)` (the chosen if-statement
//! `k`, coordinate `j`, jump `Delta` at the boundary point, and the weight `w`). A control
//! variate `C = K delta_k w_kj(z*)` with a per-guard constant `delta_k` has a closed-form
//! mean, so `B - C + E[C]` stays unbiased; it helps as far as the jump varies less along the
//! boundary than the weight does. The measurement takes `delta_k` at its best: the
//! least-squares fit of `B` on `K w` per guard from one half of the samples, evaluated on the
//! other half, so any practical choice (running means over iterations, leave-one-out over
//! lanes) does no better. Run with
//! `cargo test --release --test infer_lyy18_cv -- --ignored --nocapture`; set
//! `DSGD_CV_THETA_DIR` to a directory of `dsgd run MODEL --estimator lyy18 --json` outputs
//! (`MODEL.json`) to measure at their fitted parameters as well as the initial ones.

mod infer_common;

use dsgd::estimate::{self, Channel, Engine, EstimatorKind, Lyy18, Problem, Purpose, StreamKey};
use infer_common::vi_step;

/// Per-sample gradients of `engine` at `theta`, sample-major, over `batches` batches of 16.
fn samples(engine: &mut Engine, theta: &[f64], seed: u64, batches: u64) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for it in 0..batches {
        let key = StreamKey::new(seed, it, Purpose::Other(7));
        engine.evaluate(theta, key, 16, false).unwrap();
        let d = theta.len();
        let g = engine.sample_gradients();
        out.extend(g.chunks(d).map(<[f64]>::to_vec));
    }
    out
}

/// The guard each sample of [`samples`] chose (the estimator's own draw, repeated).
fn choices(big_k: usize, seed: u64, batches: u64) -> Vec<usize> {
    let mut out = Vec::new();
    for it in 0..batches {
        let key = StreamKey::new(seed, it, Purpose::Other(7));
        let mut rng = key.rng(Channel::Choice);
        for l in 0..16 {
            out.push(rng.lane(l).index(big_k));
        }
    }
    out
}

/// Mean over components of the per-component sample variance (Table 2's Avg(V)).
fn avg_var(rows: &[Vec<f64>]) -> f64 {
    let d = rows[0].len();
    let n = rows.len() as f64;
    let mut total = 0.0;
    for p in 0..d {
        let mean = rows.iter().map(|r| r[p]).sum::<f64>() / n;
        total += rows.iter().map(|r| (r[p] - mean).powi(2)).sum::<f64>() / (n - 1.0);
    }
    total / d as f64
}

fn sub(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn measure(name: &str, label: &str, problem_for: &dyn Fn() -> Problem, theta: &[f64], seed: u64) {
    let batches = 4000;
    let build = |kind| {
        let p = problem_for();
        let e = estimate::build(kind, &p, 0.1, None).unwrap();
        Engine::new(p, e)
    };
    let p = problem_for();
    let big_k = Lyy18::new(&p).unwrap().guard_count();
    let unit = Lyy18::with_jumps(&p, vec![1.0; big_k]).unwrap();
    let pathwise = samples(&mut build(EstimatorKind::Reparam), theta, seed, batches);
    let full = samples(&mut build(EstimatorKind::Lyy18), theta, seed, batches);
    let weights = samples(&mut Engine::new(p, Box::new(unit)), theta, seed, batches);
    let ks = choices(big_k, seed, batches);
    let b: Vec<Vec<f64>> = full.iter().zip(&pathwise).map(|(g, p)| sub(g, p)).collect();
    let w: Vec<Vec<f64>> = weights
        .iter()
        .zip(&pathwise)
        .map(|(h, p)| sub(h, p))
        .collect();
    // Fit delta_k on the even samples, evaluate on the odd ones.
    let (mut num, mut den) = (vec![0.0; big_k], vec![0.0; big_k]);
    let (mut gnum, mut gden) = (0.0, 0.0);
    for i in (0..b.len()).step_by(2) {
        num[ks[i]] += dot(&b[i], &w[i]);
        den[ks[i]] += dot(&w[i], &w[i]);
        gnum += dot(&b[i], &w[i]);
        gden += dot(&w[i], &w[i]);
    }
    let delta: Vec<f64> = (0..big_k)
        .map(|k| if den[k] > 0.0 { num[k] / den[k] } else { 0.0 })
        .collect();
    // In-sample: the same fit evaluated on the samples it was fitted to (optimistic).
    let inside: Vec<Vec<f64>> = (0..b.len())
        .step_by(2)
        .map(|i| {
            let c: Vec<f64> = w[i].iter().map(|x| delta[ks[i]] * x).collect();
            sub(&full[i], &c)
        })
        .collect();
    let even: Vec<Vec<f64>> = full.iter().step_by(2).cloned().collect();
    let in_sample = avg_var(&even) / avg_var(&inside);
    let global = if gden > 0.0 { gnum / gden } else { 0.0 };
    let odd =
        |rows: &[Vec<f64>]| -> Vec<Vec<f64>> { rows.iter().skip(1).step_by(2).cloned().collect() };
    let cv = |per_guard: bool| -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
        let mut bc = Vec::new();
        let mut gc = Vec::new();
        for i in (1..b.len()).step_by(2) {
            let dk = if per_guard { delta[ks[i]] } else { global };
            let c: Vec<f64> = w[i].iter().map(|x| dk * x).collect();
            bc.push(sub(&b[i], &c));
            gc.push(sub(&full[i], &c));
        }
        (bc, gc)
    };
    let (bk, gk) = cv(true);
    let (bg, gg) = cv(false);
    let v_full = avg_var(&odd(&full));
    let v_path = avg_var(&odd(&pathwise));
    let v_b = avg_var(&odd(&b));
    println!(
        "{name:12} {label:8} seed {seed} K={big_k:3}  Avg(V): lyy18 {v_full:.3e} pathwise {v_path:.3e} boundary {v_b:.3e} | \
         boundary-CV per-guard {:.3e} global {:.3e} | lyy18-CV per-guard {:.3e} ({:.2}x) global {:.3e} ({:.2}x) | in-sample per-guard {in_sample:.2}x",
        avg_var(&bk),
        avg_var(&bg),
        avg_var(&gk),
        v_full / avg_var(&gk),
        avg_var(&gg),
        v_full / avg_var(&gg),
    );
}

#[test]
#[ignore = "a measurement for the docs; prints a table"]
fn boundary_control_variate_reduction() {
    let dir = std::env::var("DSGD_CV_THETA_DIR").ok();
    for name in ["walk", "cheating", "temperature", "textmsg", "influenza"] {
        let problem_for = || Problem::new(&dsgd::models::builtin(name).unwrap().unwrap()).unwrap();
        let init = problem_for().family().init();
        for seed in [5, 6] {
            measure(name, "initial", &problem_for, &init, seed);
        }
        if let Some(dir) = &dir {
            let text = std::fs::read_to_string(format!("{dir}/{name}.json")).unwrap();
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            let theta: Vec<f64> = json["theta"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            for seed in [5, 6] {
                measure(name, "fitted", &problem_for, &theta, seed);
            }
        }
    }
}

/// The measurement's decomposition is sound: on a step of height 1 (the jump is 1 everywhere
/// on the boundary) LYY18 with unit jumps is LYY18 itself, sample for sample, and its
/// boundary part (LYY18 minus Reparam on the same noise) is not zero.
#[test]
fn unit_jumps_reproduce_lyy18_on_a_unit_step() {
    let model = vi_step([0.7, -1.2], 0.4);
    let theta = Problem::new(&model).unwrap().family().init();
    let engine = |kind: Option<EstimatorKind>| {
        let p = Problem::new(&model).unwrap();
        let e = match kind {
            Some(kind) => estimate::build(kind, &p, 0.1, None).unwrap(),
            None => Box::new(Lyy18::with_jumps(&p, vec![1.0]).unwrap()),
        };
        Engine::new(p, e)
    };
    let plain = samples(&mut engine(Some(EstimatorKind::Lyy18)), &theta, 1, 20);
    let unit = samples(&mut engine(None), &theta, 1, 20);
    let pathwise = samples(&mut engine(Some(EstimatorKind::Reparam)), &theta, 1, 20);
    assert_eq!(plain, unit);
    let boundary: f64 = plain
        .iter()
        .zip(&pathwise)
        .map(|(g, p)| sub(g, p).iter().map(|x| x.abs()).sum::<f64>())
        .sum();
    assert!(boundary > 0.0, "no boundary contribution");
}
