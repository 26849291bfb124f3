//! The crisp forward-only plan (selects between constants folded into what reads them,
//! guards fused into their selects, places shared by a forward-only scan) gives the bits of
//! the reference interpreter, in the vector and the portable build, on programs built to
//! exercise every rewrite and on the built-in models; and a workspace that alternates it with
//! the gradient sweeps keeps its constants.

use dsgd::eval::{BatchGradient, CHUNK, Tape};
use dsgd::ir::{Builder, Program, Semantics};

const BATCH: usize = 3 * CHUNK + 7;

/// A program with every case the crisp plan folds or fuses, and the cases next to them it
/// must leave alone: an operation of a select between constants with a constant (on either
/// side), with another select of the same guard or of another guard, a unary operation of a
/// folded select (twice over), a folded value that is NaN, guards read only by selects (a
/// subtraction, a sum, a sum chain, a latent, a subtraction from a latent read nowhere else),
/// a then-branch that is a negation, square terms less a constant and less a parameter, a
/// guard also read as a value, a guard that is itself a select, and a select of a uniform
/// guard.
fn program() -> Program {
    let b = Builder::new();
    let z: Vec<_> = (0..8).map(|i| b.latent(&format!("z{i}"))).collect();
    let th = b.param("theta");
    let c = |x: f64| b.constant(x);
    let g = z[0] - 0.5;
    let s = b.if_neg(g, c(0.2), c(0.22));
    let scale = s + 2.0;
    let log = scale.ln();
    let q = b.if_neg(g, c(0.0), c(1.0));
    let same_guard = q * s;
    let left = 3.0 - q;
    let other_guard = q * b.if_neg(z[1], c(5.0), c(-7.0));
    let nan = b.if_neg(z[1], c(-1.0), c(4.0)).ln();
    let shared = z[2] - z[3];
    let read_twice = b.if_neg(shared, z[1], z[2]) + shared;
    let uniform_operand = b.if_neg(z[3] - th, q, z[0]);
    let select_guard = b.if_neg(left - 2.5, z[4], c(1.5));
    let uniform_guard = b.if_neg(th, z[1], c(0.5)) * z[2];
    let sum_guard = b.if_neg(z[3] + z[0], z[3], c(2.0));
    let chain_guard = b.if_neg(z[1] + z[2] + z[3] + z[4] + z[0], c(-3.0), z[1]);
    let latent_guard = b.if_neg(z[5], z[1], z[2]) + b.if_neg(z[5], c(1.0), c(0.0));
    let latent_less = b.if_neg(z[6] - z[7], c(4.0), z[7]) * b.if_neg(z[7], c(3.0), z[2]);
    let negated = b.if_neg(z[2], -(z[2] * 3.0), z[1]);
    let terms = -0.5 * (z[4] - z[1]).powi(2) - 0.75 + (-0.5 * z[2].powi(2) - th);
    let dens = -0.5 * ((z[4] - z[0]) / scale).powi(2) - log;
    let f = dens
        + same_guard
        + left
        + other_guard
        + b.if_neg(nan - 1.0, z[2], z[3])
        + read_twice
        + uniform_operand
        + select_guard
        + uniform_guard
        + log.sqrt()
        + sum_guard
        + chain_guard
        + latent_guard
        + latent_less
        + negated
        + terms;
    b.finish(&[f]).unwrap()
}

/// `n` latents of `batch` samples, latent-major: mostly in [-4, 4), with zeros of both signs,
/// infinities, NaN and values at the guards' thresholds among them.
fn latents(n: usize, batch: usize, seed: u64) -> Vec<f64> {
    let special = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        0.5,
        2.5,
    ];
    let mut state = seed;
    (0..n * batch)
        .map(|k| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            if k % 5 == 3 {
                special[(state >> 7) as usize % special.len()]
            } else {
                8.0 * u - 4.0
            }
        })
        .collect()
}

/// Asserts that the crisp values of `tape` equal the reference interpreter's, bit for bit
/// (every NaN counted as one), in both builds.
fn check(p: &Program, tape: &Tape, params: &[f64], seed: u64) {
    let n = p.latent_count();
    let zs = latents(n, BATCH, seed);
    for simd in [true, false] {
        let mut ws = tape.workspace();
        ws.set_simd(simd);
        let mut f = vec![0.0; BATCH];
        tape.forward(&mut ws, Semantics::Crisp, params, &zs, &mut f);
        for (lane, got) in f.iter().enumerate() {
            let z: Vec<f64> = (0..n).map(|i| zs[i * BATCH + lane]).collect();
            let want = p.evaluate(Semantics::Crisp, params, &z);
            let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
            assert!(same, "simd {simd} lane {lane}: {got:e} against {want:e}");
        }
    }
}

#[test]
fn crisp_forward_plan_folds_and_keeps_the_bits() {
    let p = program();
    let tape = Tape::compile(&p, 0);
    assert!(
        tape.crisp_forward_len() + 3 <= tape.forward_len(),
        "{} of {}",
        tape.crisp_forward_len(),
        tape.forward_len()
    );
    // Every fused select is exercised (the tape's debug form names its instructions).
    let plan = format!("{:?}", *tape);
    for op in [
        "SelectLess {",
        "SelectSum {",
        "SelectChain {",
        "SelectLatent {",
        "SelectLessLatent {",
        "SelectNeg {",
        "SquareDiffSub {",
        "SquareSub {",
    ] {
        assert!(plan.contains(op), "{op}");
    }
    for (seed, theta) in [0.7, -1.2, 0.0, f64::NAN].into_iter().enumerate() {
        check(&p, &tape, &[theta], seed as u64);
    }
}

#[test]
fn crisp_forward_plan_keeps_the_bits_of_every_builtin_model() {
    for name in dsgd::models::builtin_names() {
        let model = dsgd::models::builtin(name).unwrap().unwrap();
        let p = &model.program;
        let tape = Tape::compile(p, 0);
        assert!(tape.crisp_forward_len() <= tape.forward_len(), "{name}");
        let params = vec![0.3; p.param_count()];
        check(p, &tape, &params, 11);
    }
    // Temperature's noise scale and its logarithm are selects between constants.
    let model = dsgd::models::builtin("temperature").unwrap().unwrap();
    let tape = Tape::compile(&model.program, 0);
    assert!(tape.crisp_forward_len() * 10 < tape.forward_len() * 9);
}

#[test]
fn crisp_forward_plan_and_gradient_sweeps_share_a_workspace() {
    let p = program();
    let tape = Tape::compile(&p, 0);
    let n = p.latent_count();
    let zs = latents(n, BATCH, 5);
    let params = [0.4];
    let mut ws = tape.workspace();
    let mut first = vec![0.0; BATCH];
    tape.forward(&mut ws, Semantics::Crisp, &params, &zs, &mut first);
    let mut g = BatchGradient::new(&tape, BATCH);
    for sem in [Semantics::Smoothed { eta: 0.1 }, Semantics::Crisp] {
        tape.gradient(&mut ws, sem, &params, &zs, &mut g);
        let mut again = vec![0.0; BATCH];
        tape.forward(&mut ws, Semantics::Crisp, &params, &zs, &mut again);
        let bits = |xs: &[f64]| xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&again), bits(&first), "after a {sem:?} gradient");
        if sem == Semantics::Crisp {
            assert_eq!(bits(&g.value), bits(&first), "the crisp gradient's values");
        }
    }
}
