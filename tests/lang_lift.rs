//! If-statements on data lifted out of an observation's distribution: `observe y ~ D(if c
//! {a} else {b})` compiles to `if c {log D(y; a)} else {log D(y; b)}` when `y`, `a` and `b`
//! are data.
//!
//! The lifted program must be the same crisp program (values, and the gradients of every
//! crisp estimator, LYY18's boundary term included), and its smoothed value must be the
//! mixture of the branches' log-densities, computed here by hand, where the program as
//! written mixes the probabilities. Unrolled and as a plate. Where lifting could mix a
//! branch the crisp program never evaluates into the value (a log-density of minus infinity)
//! or a branch is not data, the observation stays as written.

use std::path::Path;

use dsgd::estimate::{Engine, EstimatorKind, Problem, Purpose, StreamKey, build};
use dsgd::ir::{Model, Node, Semantics, Unary};
use dsgd::lang::{CompileOptions, DataSet, FsResolver, PlatePolicy};

const ROWS: usize = 12;

fn compile(src: &str, data: &str, plates: PlatePolicy, lift: bool) -> Model {
    let opts = CompileOptions {
        plates,
        lift_observations: lift,
        ..CompileOptions::default()
    };
    let data = DataSet::from_json_str(data, "test.json").unwrap();
    let resolver = FsResolver::new(Path::new("."), &opts);
    dsgd::lang::compile_with_data("t.dsgd", src, &resolver, &data, &opts)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A threshold regression with a smooth observation beside it (so that crisp gradients
/// reach the latents through something besides the priors).
const THRESHOLD: &str = "data n; data x; data y; data w;
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n {
  observe y[i] ~ Bernoulli(if a + b * x[i] < 0 { 0.1 } else { 0.9 });
  observe w[i] ~ Normal(a + b * x[i], 2);
}";

fn data() -> (Vec<f64>, Vec<f64>, Vec<f64>, String) {
    let x: Vec<f64> = (0..ROWS).map(|i| (i as f64 - 5.5) / 3.0).collect();
    let y: Vec<f64> = (0..ROWS).map(|i| ((i * 7) % 3 != 0) as u8 as f64).collect();
    let w: Vec<f64> = x.iter().map(|v| 0.3 + 1.2 * v).collect();
    let json = format!("{{\"n\": {ROWS}, \"x\": {x:?}, \"y\": {y:?}, \"w\": {w:?}}}");
    (x, y, w, json)
}

fn sigmoid(t: f64) -> f64 {
    1.0 / (1.0 + (-t).exp())
}

fn bernoulli(y: f64, p: f64) -> f64 {
    if y == 1.0 { p.ln() } else { (1.0 - p).ln() }
}

/// The Normal observations' log-density, by hand.
fn normal_terms(a: f64, b: f64, x: &[f64], w: &[f64]) -> f64 {
    x.iter()
        .zip(w)
        .map(|(&xi, &wi)| {
            let r = (wi - a - b * xi) / 2.0;
            -0.5 * r * r - 2f64.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
        })
        .sum()
}

fn prior(z: f64) -> f64 {
    let r = z / 5.0;
    -0.5 * r * r - 5f64.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
}

fn close(want: f64, got: f64, what: &str) {
    assert!(
        (want - got).abs() <= 1e-12 * want.abs().max(1.0),
        "{what}: want {want}, got {got}"
    );
}

/// Crisp values equal (lifted or not, plate or not) and equal the hand-computed density;
/// smoothed values are the mixture of log-densities when lifted and the log-density of the
/// mixture when not. Catches a lift that swaps the branches (the crisp value moves), one
/// that does not happen (the smoothed value is the unlifted formula), or a guard lost.
#[test]
fn the_lift_keeps_the_crisp_value_and_mixes_log_densities() {
    let (x, y, w, json) = data();
    for plates in [PlatePolicy::On, PlatePolicy::Off] {
        let lifted = compile(THRESHOLD, &json, plates, true);
        let written = compile(THRESHOLD, &json, plates, false);
        assert_eq!(lifted.plates.len(), usize::from(plates == PlatePolicy::On));
        for &(a, b) in &[(0.3, 1.2), (-0.4, 0.7), (1.5, -2.0), (0.0, 0.05)] {
            let z = [a, b];
            let base = prior(a) + prior(b) + normal_terms(a, b, &x, &w);
            let crisp: f64 = base
                + x.iter()
                    .zip(&y)
                    .map(|(&xi, &yi)| bernoulli(yi, if a + b * xi < 0.0 { 0.1 } else { 0.9 }))
                    .sum::<f64>();
            for m in [&lifted, &written] {
                close(crisp, m.evaluate(Semantics::Crisp, &[], &z), "crisp");
            }
            for eta in [0.5, 0.05] {
                let (mut mixed_logs, mut mixed_probs) = (base, base);
                for (&xi, &yi) in x.iter().zip(&y) {
                    // `then` (0.1) is taken when the guard is negative.
                    let wt = sigmoid(-(a + b * xi) / eta);
                    mixed_logs += wt * bernoulli(yi, 0.1) + (1.0 - wt) * bernoulli(yi, 0.9);
                    mixed_probs += bernoulli(yi, wt * 0.1 + (1.0 - wt) * 0.9);
                }
                let sem = Semantics::Smoothed { eta };
                close(
                    mixed_logs,
                    lifted.evaluate(sem, &[], &z),
                    "lifted, smoothed",
                );
                close(
                    mixed_probs,
                    written.evaluate(sem, &[], &z),
                    "written, smoothed",
                );
            }
        }
    }
}

/// In a plate, a lifted branch's log-density reads the row's data only, so the body reads it
/// as a column of its own (each row's value computed once, as the unrolled row folds it)
/// instead of computing a logarithm per branch at every row of every sweep. Catches a body
/// whose branches are left as logarithms of the data.
#[test]
fn a_plate_reads_the_lifted_log_densities_as_columns() {
    let (_, y, _, json) = data();
    let m = compile(THRESHOLD, &json, PlatePolicy::On, true);
    let plate = &m.plates[0];
    let body = &plate.body;
    let branches: Vec<_> = body
        .nodes()
        .iter()
        .filter_map(|n| match *n {
            Node::If { then_, else_, .. } => Some([then_, else_]),
            _ => None,
        })
        .collect();
    assert_eq!(branches.len(), 1, "one if-statement in the body");
    for (p, id) in [0.1, 0.9].into_iter().zip(branches[0]) {
        let Node::Latent(j) = body.node(id) else {
            panic!("the branch of {p} is {:?}, not a column", body.node(id));
        };
        let column = &plate.columns[j as usize];
        for (r, &yr) in y.iter().enumerate() {
            close(bernoulli(yr, p), column[r], &format!("row {r}, branch {p}"));
        }
    }
    let logs = body
        .nodes()
        .iter()
        .filter(|n| matches!(n, Node::Unary(Unary::Log, _)))
        .count();
    assert_eq!(logs, 0, "no logarithm left in the body");
}

fn gradients(model: &Model, kind: EstimatorKind, theta: &[f64]) -> Vec<f64> {
    let problem = Problem::new(model).unwrap();
    let est = build(kind, &problem, 0.1, None).unwrap();
    let mut e = Engine::new(problem, est);
    e.evaluate(theta, StreamKey::new(7, 3, Purpose::Step), 64, true)
        .unwrap();
    let mut out = e.sample_gradients();
    out.extend(e.crisp_values());
    out
}

/// Every crisp estimator gives the same per-sample gradients and crisp values on the lifted
/// and the written program, LYY18's boundary term included (unrolled: LYY18 reads the
/// crisp program's jump at each boundary, the same for both). Catches a lift whose crisp
/// branches or guard differ from the written program's.
#[test]
fn crisp_estimators_see_the_same_program() {
    let (_, _, _, json) = data();
    for plates in [PlatePolicy::On, PlatePolicy::Off] {
        let lifted = compile(THRESHOLD, &json, plates, true);
        let written = compile(THRESHOLD, &json, plates, false);
        let problem = Problem::new(&lifted).unwrap();
        let theta: Vec<f64> = problem
            .family()
            .init()
            .iter()
            .enumerate()
            .map(|(i, t)| t + 0.1 * i as f64)
            .collect();
        for kind in [
            EstimatorKind::Reparam,
            EstimatorKind::Score,
            EstimatorKind::Rloo,
            EstimatorKind::Lyy18,
        ] {
            if kind == EstimatorKind::Lyy18 && build(kind, &problem, 0.1, None).is_err() {
                continue;
            }
            let (l, w) = (
                gradients(&lifted, kind, &theta),
                gradients(&written, kind, &theta),
            );
            assert_eq!(l.len(), w.len());
            for (i, (a, b)) in l.iter().zip(&w).enumerate() {
                close(*b, *a, &format!("{kind:?}, {plates:?}, entry {i}"));
            }
        }
    }
}

/// What is not lifted: a branch whose log-density is minus infinity for some row (the
/// crisp program never evaluates it there, a mixture of logarithms would), and a branch that
/// reads a latent. Their smoothed values stay the log-density of the mixture.
#[test]
fn what_the_crisp_program_never_evaluates_is_not_lifted() {
    let (x, y, _, json) = data();
    let certain = "data n; data x; data y; data w;
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n {
  observe y[i] ~ Bernoulli(if a + b * x[i] < 0 { 0.5 } else { 1 });
}";
    let latent = "data n; data x; data y; data w;
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n {
  observe w[i] ~ Normal(if a + b * x[i] < 0 { a } else { 0 }, 1);
}";
    for plates in [PlatePolicy::On, PlatePolicy::Off] {
        for src in [certain, latent] {
            let lifted = compile(src, &json, plates, true);
            let written = compile(src, &json, plates, false);
            for &(a, b) in &[(0.3, 1.2), (-0.4, 0.7)] {
                for sem in [Semantics::Crisp, Semantics::Smoothed { eta: 0.3 }] {
                    let (l, w) = (
                        lifted.evaluate(sem, &[], &[a, b]),
                        written.evaluate(sem, &[], &[a, b]),
                    );
                    assert_eq!(l.to_bits(), w.to_bits(), "{sem:?}: {l} against {w}");
                }
            }
        }
        // The certain branch: the smoothed value is finite (a mixture of probabilities).
        let m = compile(certain, &json, plates, true);
        let (a, b) = (0.3, 1.2);
        let eta = 0.3;
        let want: f64 = prior(a)
            + prior(b)
            + x.iter()
                .zip(&y)
                .map(|(&xi, &yi)| {
                    let wt = sigmoid(-(a + b * xi) / eta);
                    bernoulli(yi, wt * 0.5 + (1.0 - wt))
                })
                .sum::<f64>();
        close(
            want,
            m.evaluate(Semantics::Smoothed { eta }, &[], &[a, b]),
            "certain",
        );
    }
}
