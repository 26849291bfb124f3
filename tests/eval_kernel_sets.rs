//! Every build of the sweeps gives the same bits: the portable one, AVX2/FMA and AVX-512
//! (those this CPU runs), each set for the whole run, and the default, which times AVX2
//! against AVX-512 on the first sweeps and then keeps the faster. Checked on every built-in
//! model, smoothed and crisp, values and gradients, on a batch long enough for the default
//! to make its choice inside one call.
//!
//! Not here: the lane routines' own builds (`eval_vmath.rs`).

mod eval_common;

use dsgd::eval::vmath::KernelSet;
use dsgd::eval::{BatchGradient, CHUNK, Tape};
use dsgd::ir::Semantics;
use eval_common::{Lcg, bits};

/// Enough chunks for the default's timing (a few dozen sweeps) and some after it.
const BATCH: usize = 70 * CHUNK + 5;

/// Deterministic latents in [-3, 3).
fn latents(n: usize) -> Vec<f64> {
    let mut rng = Lcg(0x2545_f491_4f6c_dd1d);
    (0..n * BATCH).map(|_| 6.0 * rng.next() - 3.0).collect()
}

/// Values, latent gradients and parameter gradients of the whole batch.
fn run(
    tape: &Tape,
    set: Option<KernelSet>,
    sem: Semantics,
    params: &[f64],
    zs: &[f64],
) -> Vec<u64> {
    let mut ws = tape.workspace();
    if let Some(set) = set {
        ws.set_kernels(set);
    }
    let mut g = BatchGradient::new(tape, BATCH);
    tape.gradient(&mut ws, sem, params, zs, &mut g);
    let mut out = bits(&g.value);
    for lane in 0..BATCH {
        let lat: Vec<f64> = (0..tape.latent_count())
            .map(|i| g.latent(i, lane))
            .collect();
        let par: Vec<f64> = (0..params.len()).map(|k| g.param(k, lane)).collect();
        out.extend(bits(&lat));
        out.extend(bits(&par));
    }
    let mut fwd = vec![0.0; BATCH];
    tape.forward(&mut ws, sem, params, zs, &mut fwd);
    out.extend(bits(&fwd));
    if set.is_none() && dsgd::eval::chooses_forward_build() {
        assert!(
            ws.forward_kernels(sem).is_some(),
            "{sem:?}: no build chosen after {BATCH} lanes"
        );
    }
    out
}

#[test]
fn every_build_of_the_sweeps_gives_the_same_bits() {
    let sets = KernelSet::available();
    for name in dsgd::models::builtin_names() {
        let model = dsgd::models::builtin(name).unwrap().unwrap();
        let tape = Tape::compile(&model.program, 0);
        let params = vec![0.4; model.program.param_count()];
        let zs = latents(tape.latent_count());
        for sem in [Semantics::Smoothed { eta: 0.1 }, Semantics::Crisp] {
            let want = run(&tape, Some(KernelSet::Portable), sem, &params, &zs);
            assert!(
                want.iter().any(|&b| b != f64::NAN.to_bits()),
                "{name}: all NaN"
            );
            for &set in &sets {
                let got = run(&tape, Some(set), sem, &params, &zs);
                assert!(got == want, "{name} {sem:?}: {set:?} differs from portable");
            }
            let got = run(&tape, None, sem, &params, &zs);
            assert!(
                got == want,
                "{name} {sem:?}: the default differs from portable"
            );
        }
    }
}

#[test]
fn a_chosen_build_is_one_the_cpu_runs() {
    let model = dsgd::models::builtin("temperature").unwrap().unwrap();
    let tape = Tape::compile(&model.program, 0);
    let params = vec![0.4; model.program.param_count()];
    let zs = latents(tape.latent_count());
    let sem = Semantics::Smoothed { eta: 0.1 };
    let mut ws = tape.workspace();
    let mut g = BatchGradient::new(&tape, BATCH);
    tape.gradient(&mut ws, sem, &params, &zs, &mut g);
    let chosen = ws.forward_kernels(sem).expect("chosen after a long batch");
    assert!(KernelSet::available().contains(&chosen), "{chosen:?}");
    if dsgd::eval::simd_available() {
        assert_ne!(chosen, KernelSet::Portable, "{chosen:?}");
    }
    // Not yet timed under another semantics, where the CPU has a choice to make.
    if dsgd::eval::chooses_forward_build() {
        assert_eq!(ws.forward_kernels(Semantics::Crisp), None);
    }
}
