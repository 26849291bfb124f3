//! Batch evaluation equals per-sample evaluation bit for bit: one tape sweep over 77 samples
//! (crossing the `CHUNK` boundary at least twice), the same tape one sample at a time, and the
//! reference interpreter `Program::evaluate`, for values and for gradients.
//!
//! Not here: whether the gradients are right (`core_props.rs`).

use dsgd::eval::{BatchGradient, CHUNK, Tape};
use dsgd::ir::{Branch, Builder, Program, Semantics, Var};

const BATCH: usize = 77;

/// `softplus(x) + 0.1`: positive, for the ops defined on the positive half-line.
fn pos(x: Var<'_>) -> Var<'_> {
    x.softplus() + 0.1
}

/// A program using every primitive, if-statements in branches and in guards, and, when
/// `with_nan`, a branch that is NaN on the lanes that do not take it (`log` of a negative
/// number; smoothing would mix it in, so the smoothed runs leave it out).
fn program(with_nan: bool) -> Program {
    let b = Builder::new();
    let z: Vec<_> = (0..4).map(|i| b.latent(&format!("z{i}"))).collect();
    let th = b.param("theta");
    let phi = b.param("phi");
    let a = (z[0] * th).sin() + z[1].cos() * phi - z[2].tanh();
    let c = pos(z[3]).ln() + pos(a).sqrt() - (z[0] / pos(z[1])).exp_m1();
    let d = pos(c).lgamma() + (0.05 + 0.9 * z[2].sigmoid()).probit() + z[3].normal_cdf();
    let e = pos(z[1]).pow(z[0].tanh()) + pos(d).ln_1p() + (z[2] * 0.3).exp() + z[1].powi(3);
    let inner = b.if_neg(z[0] - z[1], a, c);
    let nested = b.if_neg(inner + 0.2 * d, e, -d);
    let untaken_nan = if with_nan {
        b.if_neg(z[2], (-z[2]).ln(), z[2].ln())
    } else {
        z[2].sin()
    };
    let sugar = b.max(z[0], z[3]) + b.abs(z[1]) + b.relu(z[2] - th) + b.step(z[3]);
    let f = nested + 0.5 * untaken_nan * th + sugar + b.min(e, d);
    b.finish(&[f]).unwrap()
}

/// Deterministic inputs in a wide range, away from 0 (where the NaN branch would be taken).
fn latents(n: usize, batch: usize) -> Vec<f64> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n * batch)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            let x = 6.0 * u - 3.0;
            if x.abs() < 1e-3 { 0.5 } else { x }
        })
        .collect()
}

fn bits(xs: &[f64]) -> Vec<u64> {
    xs.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn batch_equals_per_sample_bit_for_bit_in_every_semantics() {
    const { assert!(BATCH > 2 * CHUNK) };
    let crisp = program(true);
    let smooth = program(false);
    assert!(crisp.if_count() >= 8, "{}", crisp.if_count());
    let mut runs = vec![(&crisp, Semantics::Crisp)];
    for eta in [0.3, 1e-4] {
        runs.push((&smooth, Semantics::Smoothed { eta }));
    }
    for k in 0..crisp.if_count() as u32 {
        runs.push((
            &crisp,
            Semantics::Forced {
                index: k,
                branch: Branch::Then,
            },
        ));
        runs.push((
            &crisp,
            Semantics::Forced {
                index: k,
                branch: Branch::Else,
            },
        ));
    }
    let params = [0.7, -1.3];
    let n = crisp.latent_count();
    let zs = latents(n, BATCH);
    let mut finite_lanes = 0;
    let mut finite_smoothed = 0;
    for (p, sem) in runs {
        let tape = Tape::compile(p, 0);
        let mut ws = tape.workspace();
        let mut whole = BatchGradient::new(&tape, BATCH);
        tape.gradient(&mut ws, sem, &params, &zs, &mut whole);
        let mut forward = vec![0.0; BATCH];
        tape.forward(&mut ws, sem, &params, &zs, &mut forward);
        assert_eq!(
            bits(&forward),
            bits(&whole.value),
            "{sem:?}: forward vs gradient values"
        );
        let mut one = BatchGradient::new(&tape, 1);
        for lane in 0..BATCH {
            let z: Vec<f64> = (0..n).map(|i| zs[i * BATCH + lane]).collect();
            tape.gradient(&mut ws, sem, &params, &z, &mut one);
            let reference = p.evaluate(sem, &params, &z);
            assert_eq!(
                whole.value[lane].to_bits(),
                reference.to_bits(),
                "{sem:?} lane {lane}: value"
            );
            assert_eq!(
                one.value[0].to_bits(),
                reference.to_bits(),
                "{sem:?} lane {lane}: batch of 1"
            );
            for i in 0..n {
                assert_eq!(
                    whole.latent(i, lane).to_bits(),
                    one.latent(i, 0).to_bits(),
                    "{sem:?} lane {lane} z{i}"
                );
            }
            for k in 0..params.len() {
                assert_eq!(
                    whole.param(k, lane).to_bits(),
                    one.param(k, 0).to_bits(),
                    "{sem:?} lane {lane} p{k}"
                );
            }
            let all_finite = whole.value[lane].is_finite()
                && (0..n).all(|i| whole.latent(i, lane).is_finite())
                && (0..params.len()).all(|k| whole.param(k, lane).is_finite());
            match sem {
                Semantics::Crisp if all_finite => finite_lanes += 1,
                Semantics::Smoothed { .. } if all_finite => finite_smoothed += 1,
                _ => {}
            }
        }
    }
    // The untaken NaN branch never reaches a crisp value or gradient.
    assert_eq!(finite_lanes, BATCH);
    assert_eq!(finite_smoothed, 2 * BATCH);
}

#[test]
fn a_workspace_is_reusable_across_batch_sizes_and_semantics() {
    let p = program(false);
    let tape = Tape::compile(&p, 0);
    let params = [0.7, -1.3];
    let zs = latents(p.latent_count(), BATCH);
    let sem = Semantics::Smoothed { eta: 0.3 };
    let mut fresh = BatchGradient::new(&tape, BATCH);
    tape.gradient(&mut tape.workspace(), sem, &params, &zs, &mut fresh);
    // Dirty the workspace with other work first, then repeat: nothing may carry over.
    let mut ws = tape.workspace();
    let mut small = BatchGradient::new(&tape, 5);
    let other = latents(p.latent_count(), 5);
    tape.gradient(&mut ws, Semantics::Crisp, &[10.0, 10.0], &other, &mut small);
    let mut again = BatchGradient::new(&tape, 3);
    again.resize(&tape, BATCH);
    tape.gradient(&mut ws, sem, &params, &zs, &mut again);
    assert_eq!(bits(&fresh.value), bits(&again.value));
    assert_eq!(bits(&fresh.latents), bits(&again.latents));
    assert_eq!(bits(&fresh.params), bits(&again.params));
}
