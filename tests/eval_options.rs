//! The tape's opt-in evaluation options give the bits of the plain calls they replace:
//! gradients restricted to some latents (`Tape::compile_active`) equal the full gradients on
//! those latents and the parameters, and so do gradient buffers with rows for some latents
//! only (`BatchGradient::for_latents`); latents formed from noise as the sweep loads them
//! (`Latents::Affine`) equal the same latents written out first; per-sample forcing
//! (`Tape::forward_forced`, and `forward_forced_moved` with one latent moved per sample, right
//! after a crisp sweep or not) equals one `Semantics::Forced` forward per sample.
//!
//! Not here: whether the plain calls are right (`eval_reference.rs`, `core_props.rs`).

use dsgd::eval::{BatchGradient, CHUNK, Latents, Tape, Values};
use dsgd::ir::{Branch, Builder, Program, Semantics};

const BATCH: usize = CHUNK + 7;
const LATENTS: usize = 4;

/// `c` drives some if-statements together with fixed-like latents `u`, `v`, `w`; others
/// depend on those alone (the randomised-response pattern), one on a parameter alone.
fn program() -> Program {
    let b = Builder::new();
    let c = b.latent("c");
    let u = b.latent("u");
    let v = b.latent("v");
    let w = b.latent("w");
    let th = b.param("theta");
    let cheat = b.if_neg(u - c, b.constant(1.0), b.constant(0.0));
    let toss1 = b.if_neg(v, b.constant(1.0), b.constant(0.0));
    let toss2 = b.if_neg(w * v, w.sin(), w.exp());
    let by_param = b.if_neg(th, th * th, th.exp());
    let total = toss1 * cheat + (1.0 - toss1) * toss2 + by_param * c + (c * u).tanh();
    let out = (total + 3.0).ln() * th + (v * w).cos();
    b.finish(&[out]).unwrap()
}

fn inputs() -> (Vec<f64>, Vec<f64>) {
    let latents = (0..LATENTS * BATCH)
        .map(|k| ((k as f64) * 0.7311).sin() * 1.3)
        .collect();
    (vec![0.4], latents)
}

const SEMANTICS: [Semantics; 3] = [
    Semantics::Crisp,
    Semantics::Smoothed { eta: 0.3 },
    Semantics::Forced {
        index: 1,
        branch: Branch::Then,
    },
];

#[test]
fn gradients_restricted_to_some_latents_keep_their_bits() {
    let p = program();
    let full = Tape::compile(&p, 0);
    let active = [true, false, false, false];
    let part = Tape::compile_active(&p, 0, Some(&active));
    let (params, latents) = inputs();
    for simd in [true, false] {
        for sem in SEMANTICS {
            let (mut wf, mut wp) = (full.workspace(), part.workspace());
            wf.set_simd(simd);
            wp.set_simd(simd);
            let mut gf = BatchGradient::new(&full, BATCH);
            let mut gp = BatchGradient::new(&part, BATCH);
            full.gradient(&mut wf, sem, &params, &latents, &mut gf);
            part.gradient(&mut wp, sem, &params, &latents, &mut gp);
            let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&gf.value), bits(&gp.value), "{sem:?}");
            assert_eq!(bits(&gf.params), bits(&gp.params), "{sem:?}");
            for (i, &on) in active.iter().enumerate() {
                let r = i * BATCH..(i + 1) * BATCH;
                if on {
                    assert_eq!(
                        bits(&gf.latents[r.clone()]),
                        bits(&gp.latents[r]),
                        "{sem:?}"
                    );
                } else {
                    assert!(gp.latents[r.clone()].iter().all(|&g| g == 0.0));
                    // The full gradient there is not zero: the option did drop work.
                    assert!(
                        gf.latents[r].iter().any(|&g| g != 0.0),
                        "{sem:?} latent {i}"
                    );
                }
            }
        }
    }
}

#[test]
fn rows_without_a_gradient_stay_zero_when_one_buffer_serves_several_batch_sizes() {
    // The rows of inactive latents are written once per tape and batch size; a buffer
    // resized to another batch size (whose rows then fall elsewhere) must get them again.
    let p = program();
    let active = [true, false, false, false];
    let part = Tape::compile_active(&p, 0, Some(&active));
    let (params, latents) = inputs();
    let mut ws = part.workspace();
    let mut g = BatchGradient::new(&part, BATCH);
    for batch in [BATCH, 5, BATCH, 1, BATCH] {
        g.resize(&part, batch);
        let z: Vec<f64> = (0..LATENTS)
            .flat_map(|i| latents[i * BATCH..i * BATCH + batch].to_vec())
            .collect();
        part.gradient(
            &mut ws,
            Semantics::Smoothed { eta: 0.3 },
            &params,
            &z,
            &mut g,
        );
        assert!(
            g.latents[..batch].iter().any(|&x| x != 0.0),
            "batch {batch}"
        );
        assert!(
            g.latents[batch..].iter().all(|&x| x == 0.0),
            "batch {batch}"
        );
    }
}

#[test]
fn per_sample_forcing_equals_one_forced_forward_per_sample() {
    let p = program();
    let tape = Tape::compile(&p, 0);
    let (params, latents) = inputs();
    // Every if-statement (index 3 is the parameter-only one, which takes the per-sample
    // path), both branches, and none (an index past the last).
    let forced: Vec<(u32, Branch)> = (0..BATCH)
        .map(|l| {
            let k = (l % 4) as u32;
            let k = if l == BATCH - 1 { u32::MAX } else { k };
            let b = if l % 3 == 0 {
                Branch::Then
            } else {
                Branch::Else
            };
            (k, b)
        })
        .collect();
    let without_uniform: Vec<(u32, Branch)> = forced
        .iter()
        .map(|&(k, b)| (if k == 3 { 0 } else { k }, b))
        .collect();
    for simd in [true, false] {
        for f in [&forced, &without_uniform] {
            let mut ws = tape.workspace();
            ws.set_simd(simd);
            let mut fs = tape.forced_scratch();
            let mut got = vec![0.0; BATCH];
            tape.forward_forced(&mut ws, &mut fs, &params, &latents, f, &mut got);
            let mut changed = false;
            for (l, &(index, branch)) in f.iter().enumerate() {
                let point: Vec<f64> = (0..LATENTS).map(|i| latents[i * BATCH + l]).collect();
                let mut one = [0.0];
                let sem = Semantics::Forced { index, branch };
                tape.forward(&mut ws, sem, &params, &point, &mut one);
                assert_eq!(got[l].to_bits(), one[0].to_bits(), "sample {l}");
                let mut crisp = [0.0];
                tape.forward(&mut ws, Semantics::Crisp, &params, &point, &mut crisp);
                changed |= crisp[0] != one[0];
            }
            assert!(
                changed,
                "forcing changed no sample: the test checks nothing"
            );
        }
    }
}

/// LYY18's pattern: a crisp gradient sweep at `z`, then the same samples with one coordinate
/// moved per sample, forced to else and then to then (the tape redoes only what changed),
/// then other moves; with the latents as values and as noise formed on load.
#[test]
fn forcing_right_after_a_crisp_sweep_equals_full_forced_forwards() {
    let p = program();
    let tape = Tape::compile(&p, 0);
    let params = [0.4];
    let (loc, scale) = ([0.3, -0.2, 0.1, 0.05], [1.5, 0.7, 1.1, 2.0]);
    for w in [CHUNK, 5] {
        let s: Vec<f64> = (0..LATENTS * w)
            .map(|k| ((k as f64) * 0.917).cos() * 1.1)
            .collect();
        let z: Vec<f64> = (0..LATENTS * w)
            .map(|k| loc[k / w] + scale[k / w] * s[k])
            .collect();
        // Lane `l` moves coordinate `l % LATENTS` (or, in the second set, `(l + 1) % 5`,
        // where 4 is none) and forces if-statement `l % 3`.
        let moves_a: Vec<(u32, f64)> = (0..w)
            .map(|l| ((l % LATENTS) as u32, -0.37 + l as f64 * 0.05))
            .collect();
        let moves_b: Vec<(u32, f64)> = (0..w)
            .map(|l| (((l + 1) % 5) as u32, 0.21 - l as f64 * 0.03))
            .map(|(j, v)| (if j == 4 { u32::MAX } else { j }, v))
            .collect();
        let forcing =
            |b: Branch| -> Vec<(u32, Branch)> { (0..w).map(|l| ((l % 3) as u32, b)).collect() };
        let (forced_else, forced_then) = (forcing(Branch::Else), forcing(Branch::Then));
        // With the parameter-only if-statement 3 too (the per-sample path).
        let with_uniform: Vec<(u32, Branch)> =
            (0..w).map(|l| ((l % 4) as u32, Branch::Then)).collect();
        let calls = [
            (&moves_a, &forced_else),
            (&moves_a, &forced_then),
            (&moves_b, &forced_then),
            (&moves_b, &forced_else),
            (&moves_a, &forced_else),
            (&moves_a, &with_uniform),
            (&moves_b, &forced_then),
        ];
        for affine in [false, true] {
            let latents = if affine {
                Latents::Affine {
                    noise: &s,
                    loc: &loc,
                    scale: &scale,
                }
            } else {
                Latents::Values(&z)
            };
            for simd in [true, false] {
                let mut ws = tape.workspace();
                ws.set_simd(simd);
                let mut reference = tape.workspace();
                // One scratch serves every workspace: it keeps nothing between calls.
                let mut fs = tape.forced_scratch();
                let mut grad = BatchGradient::new(&tape, w);
                tape.gradient_latents(
                    &mut ws,
                    Semantics::Crisp,
                    &params,
                    latents,
                    &mut grad,
                    Values::Exact,
                );
                let mut changed = false;
                for (moves, f) in calls {
                    let mut got = vec![0.0; w];
                    tape.forward_forced_moved(
                        &mut ws, &mut fs, &params, latents, moves, f, &mut got,
                    );
                    for (l, &(index, branch)) in f.iter().enumerate() {
                        let mut point: Vec<f64> = (0..LATENTS).map(|i| z[i * w + l]).collect();
                        if let Some(p) = point.get_mut(moves[l].0 as usize) {
                            *p = moves[l].1;
                        }
                        let mut one = [0.0];
                        let sem = Semantics::Forced { index, branch };
                        tape.forward(&mut reference, sem, &params, &point, &mut one);
                        assert_eq!(got[l].to_bits(), one[0].to_bits(), "w {w} sample {l}");
                        changed |= one[0] != grad.value[l];
                    }
                }
                assert!(changed, "no sample changed: the test checks nothing");
                // The same calls without the crisp sweep before them (every step redone).
                let mut fresh = tape.workspace();
                let mut got = vec![0.0; w];
                let mut again = vec![0.0; w];
                let (moves, f) = calls[1];
                tape.forward_forced_moved(
                    &mut fresh, &mut fs, &params, latents, moves, f, &mut got,
                );
                tape.forward_forced_moved(&mut ws, &mut fs, &params, latents, moves, f, &mut again);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&again), "w {w}");
            }
        }
    }
}

/// A latent that reaches the output only through guards: the crisp reverse sweep has nothing
/// to do (its gradient is exactly zero, as Reparam's on a randomised-response survey), the
/// smoothed one differentiates through the guards.
#[test]
fn the_crisp_reverse_sweep_skips_what_only_feeds_guards() {
    let b = Builder::new();
    let c = b.latent("c");
    let u = b.latent("u");
    let mut total = b.constant(0.0);
    for k in 0..5 {
        let cheat = b.if_neg(u * (k as f64) - c, b.constant(1.0), b.constant(0.0));
        total = total + cheat;
    }
    let p = b.finish(&[(total + 1.0).ln()]).unwrap();
    let tape = Tape::compile(&p, 0);
    let smooth = Semantics::Smoothed { eta: 0.5 };
    assert_eq!(tape.reverse_len(Semantics::Crisp), 0);
    assert!(
        tape.reverse_len(smooth) > 10,
        "{}",
        tape.reverse_len(smooth)
    );
    let (params, latents) = (vec![], vec![0.3, -0.2]);
    let mut ws = tape.workspace();
    let mut g = BatchGradient::new(&tape, 1);
    tape.gradient(&mut ws, Semantics::Crisp, &params, &latents, &mut g);
    assert_eq!(g.latents[..], [0.0, 0.0]);
    assert!(g.value[0] > 0.0);
    tape.gradient(&mut ws, smooth, &params, &latents, &mut g);
    assert!(
        g.latents.iter().all(|x| x.is_finite() && *x != 0.0),
        "{:?}",
        g.latents
    );
}

/// A location and scale per latent, with `-0.0` and a huge and a tiny scale among them.
fn affine() -> (Vec<f64>, Vec<f64>) {
    (vec![0.25, -0.0, -3.5, 1e-300], vec![1.7, 1.0, 1e-8, 3e5])
}

#[test]
fn latents_formed_on_load_equal_latents_written_out() {
    let p = program();
    let full = Tape::compile(&p, 0);
    let part = Tape::compile_active(&p, 0, Some(&[true, false, false, true]));
    let (params, noise) = inputs();
    let (loc, scale) = affine();
    for tape in [&full, &part] {
        for batch in [BATCH, 5, CHUNK, 1] {
            let s: Vec<f64> = (0..LATENTS)
                .flat_map(|i| noise[i * BATCH..i * BATCH + batch].to_vec())
                .collect();
            let z: Vec<f64> = (0..LATENTS * batch)
                .map(|k| loc[k / batch] + scale[k / batch] * s[k])
                .collect();
            let on_load = Latents::Affine {
                noise: &s,
                loc: &loc,
                scale: &scale,
            };
            for simd in [true, false] {
                for sem in SEMANTICS {
                    let (mut w1, mut w2) = (tape.workspace(), tape.workspace());
                    w1.set_simd(simd);
                    w2.set_simd(simd);
                    let mut g1 = BatchGradient::new(tape, batch);
                    let mut g2 = BatchGradient::new(tape, batch);
                    tape.gradient(&mut w1, sem, &params, &z, &mut g1);
                    tape.gradient_latents(&mut w2, sem, &params, on_load, &mut g2, Values::Exact);
                    let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&g1.value), bits(&g2.value), "{sem:?} {batch}");
                    assert_eq!(bits(&g1.latents), bits(&g2.latents), "{sem:?} {batch}");
                    assert_eq!(bits(&g1.params), bits(&g2.params), "{sem:?} {batch}");
                    let (mut o1, mut o2) = (vec![0.0; batch], vec![0.0; batch]);
                    tape.forward(&mut w1, sem, &params, &z, &mut o1);
                    tape.forward_latents(&mut w2, sem, &params, on_load, &mut o2);
                    assert_eq!(bits(&o1), bits(&o2), "{sem:?} {batch}");
                    assert_eq!(bits(&o1), bits(&g1.value), "{sem:?} {batch}");
                }
            }
        }
    }
}

#[test]
fn gradient_rows_for_some_latents_equal_those_rows_of_the_full_buffer() {
    let p = program();
    let active = [true, false, false, true];
    let part = Tape::compile_active(&p, 0, Some(&active));
    let (params, latents) = inputs();
    let rows = vec![0, 2, 3];
    let mut full = BatchGradient::new(&part, BATCH);
    let mut some = BatchGradient::for_latents(&part, BATCH, rows.clone());
    for batch in [BATCH, 5, BATCH, 1] {
        full.resize(&part, batch);
        some.resize(&part, batch);
        assert_eq!(some.latents.len(), rows.len() * batch);
        let z: Vec<f64> = (0..LATENTS)
            .flat_map(|i| latents[i * BATCH..i * BATCH + batch].to_vec())
            .collect();
        for sem in SEMANTICS {
            let (mut w1, mut w2) = (part.workspace(), part.workspace());
            part.gradient(&mut w1, sem, &params, &z, &mut full);
            part.gradient(&mut w2, sem, &params, &z, &mut some);
            let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&full.value), bits(&some.value));
            assert_eq!(bits(&full.params), bits(&some.params));
            for (r, &i) in rows.iter().enumerate() {
                let i = i as usize;
                assert_eq!(
                    bits(&full.latents[i * batch..(i + 1) * batch]),
                    bits(&some.latents[r * batch..(r + 1) * batch]),
                    "{sem:?} batch {batch} latent {i}"
                );
            }
            // Latent 2 is inactive: its row exists and holds zeros; latent 1 has none.
            assert!(some.latents[batch..2 * batch].iter().all(|&g| g == 0.0));
            for l in 0..batch {
                assert_eq!(some.latent(1, l), 0.0);
                assert_eq!(some.latent(3, l).to_bits(), full.latent(3, l).to_bits());
            }
            assert!((0..batch).any(|l| some.latent(3, l) != 0.0), "{sem:?}");
        }
    }
}
