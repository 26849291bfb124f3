//! The tape's memory layout: on a large program whose values are read only close to where
//! they are computed (the randomised-response survey), a workspace holds few value and
//! adjoint places, not one per instruction; a workspace in the forced layout (which LYY18's
//! forced sweeps switch to) holds a few more values only and gives the bits of a compact one;
//! and forced sweeps on programs too large to hold every value (which recompute what a cone
//! reads from outside) give the bits of one forced forward per sample.
//!
//! Not here: that the sweeps are right (`eval_reference.rs`, `eval_options.rs`).

use dsgd::eval::{BatchGradient, CHAIN_SEGMENT, CHUNK, ForcedScratch, Latents, Tape};
use dsgd::ir::{Branch, Builder, Program, Semantics};

/// The survey of `cheating` with `students` students, built directly: per student three
/// latents, three if-statements and a handful of arithmetic steps, all summed into one total.
fn survey(students: usize) -> Program {
    let b = Builder::new();
    let c = b.latent("c");
    let mut total = b.constant(0.0);
    for k in 0..students {
        let u = b.latent(&format!("u{k}"));
        let v = b.latent(&format!("v{k}"));
        let w = b.latent(&format!("w{k}"));
        let cheat = b.if_neg(u - c, b.constant(0.0), b.constant(1.0));
        let toss1 = b.if_neg(v, b.constant(0.0), b.constant(1.0));
        let toss2 = b.if_neg(w, b.constant(0.0), b.constant(1.0));
        total = total + toss1 * cheat + (1.0 - toss1) * toss2;
    }
    let p = total / students as f64;
    let out = p.ln() * 35.0 + (1.0 - p).ln() * 65.0;
    b.finish(&[out]).unwrap()
}

fn latents(n: usize, batch: usize) -> Vec<f64> {
    (0..n * batch)
        .map(|k| ((k as f64) * 0.7311).sin() * 1.3)
        .collect()
}

#[test]
fn a_large_survey_needs_few_places() {
    let students = 2000;
    // As estimation compiles it: the coin tosses are fixed, only `c` needs a gradient.
    let mut active = vec![false; 3 * students + 1];
    active[0] = true;
    let tape = Tape::compile_active(&survey(students), 0, Some(&active));
    let (len, values, adjoints) = (tape.len(), tape.value_places(), tape.adjoint_places());
    println!("instructions {len}, value places {values}, adjoint places {adjoints}");
    // The reverse sweep reads one value per student (the first toss, as the factor of the
    // product with `cheat`); everything else is read only within a few steps of its birth
    // or within one segment of the sum.
    assert!(len > 10 * students, "{len}");
    assert!(values < students + 4 * CHAIN_SEGMENT, "{values} of {len}");
    // An adjoint lives from the segment of the sum that feeds it to its own step.
    assert!(adjoints < 4 * CHAIN_SEGMENT, "{adjoints} of {len}");
    // With every latent active, each student's four products keep both factors.
    let tape = Tape::compile(&survey(students), 0);
    let values = tape.value_places();
    assert!(values < 4 * students + 4 * CHAIN_SEGMENT, "{values}");
    // Every latent's adjoint is read after the sweep.
    let adjoints = tape.adjoint_places();
    assert!(
        adjoints < 3 * students + 1 + 4 * CHAIN_SEGMENT,
        "{adjoints}"
    );
}

#[test]
fn the_forced_layout_gives_the_bits_of_the_compact_one() {
    // Large enough for the forced layout to hold some values only.
    let p = survey(500);
    let tape = Tape::compile(&p, 0);
    assert!(tape.value_places() < tape.len() / 2);
    let batch = CHUNK + 5;
    let z = latents(tape.latent_count(), batch);
    for sem in [Semantics::Crisp, Semantics::Smoothed { eta: 0.3 }] {
        let mut compact = tape.workspace();
        let mut g1 = BatchGradient::new(&tape, batch);
        tape.gradient(&mut compact, sem, &[], &z, &mut g1);
        // A forced sweep switches a workspace to the forced layout.
        let mut full = tape.workspace();
        let mut scratch = tape.forced_scratch();
        let one = latents(tape.latent_count(), 1);
        let mut out = [0.0];
        tape.forward_forced_moved(
            &mut full,
            &mut scratch,
            &[],
            Latents::Values(&one),
            &[(0, 0.5)],
            &[(0, Branch::Then)],
            &mut out,
        );
        let mut g2 = BatchGradient::new(&tape, batch);
        tape.gradient(&mut full, sem, &[], &z, &mut g2);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&g1.value), bits(&g2.value));
        assert_eq!(bits(&g1.latents), bits(&g2.latents));
        for l in 0..batch {
            let point: Vec<f64> = (0..tape.latent_count()).map(|i| z[i * batch + l]).collect();
            assert_eq!(
                g1.value[l].to_bits(),
                p.evaluate(sem, &[], &point).to_bits()
            );
        }
        // And a forward-only sweep in either layout gives the same values.
        let mut v1 = vec![0.0; batch];
        let mut v2 = vec![0.0; batch];
        tape.forward(&mut compact, sem, &[], &z, &mut v1);
        tape.forward(&mut full, sem, &[], &z, &mut v2);
        assert_eq!(bits(&v1), bits(&g1.value));
        assert_eq!(bits(&v2), bits(&g1.value));
    }
}

/// A walk of `n` steps with an if-statement at each: every state reads the one before, so a
/// forced sweep's cone runs to the end and what it reads from outside goes back far.
fn walk(n: usize) -> Program {
    let b = Builder::new();
    let a = b.latent("a");
    let mut x = b.latent("x0");
    let mut total = b.constant(0.0);
    for k in 0..n {
        let z = b.latent(&format!("z{k}"));
        let e = (x * 0.5).sin() - z;
        let y = b.if_neg(x - z * a, x * 0.9 + z, e * e);
        total = total + y * y;
        x = (y * 0.3).tanh() + z * 0.1;
    }
    b.finish(&[(total + 1.0).ln() + x]).unwrap()
}

/// LYY18's pattern on `tape` at `w` samples: a crisp gradient sweep, then forced sweeps with
/// one latent moved per sample (to else, to then, other moves, ...); each sample's output
/// equals one forced forward at its moved point.
fn check_forced_sweeps(tape: &Tape, w: usize, moved: &[u32], scratch: &mut ForcedScratch) {
    let n = tape.latent_count();
    let z = latents(n, w);
    let ifs = tape.if_count() as u32;
    let moves = |shift: usize| -> Vec<(u32, f64)> {
        (0..w)
            .map(|l| (moved[(l + shift) % moved.len()], -0.4 + 0.07 * l as f64))
            .collect()
    };
    let forcing = |b: Branch, shift: u32| -> Vec<(u32, Branch)> {
        (0..w as u32).map(|l| ((l * 37 + shift) % ifs, b)).collect()
    };
    let calls = [
        (moves(0), forcing(Branch::Else, 0)),
        (moves(0), forcing(Branch::Then, 0)),
        (moves(3), forcing(Branch::Then, 5)),
        (moves(3), forcing(Branch::Else, 11)),
    ];
    for simd in [true, false] {
        let mut ws = tape.workspace();
        ws.set_simd(simd);
        let mut reference = tape.workspace();
        let mut grad = BatchGradient::new(tape, w);
        tape.gradient(&mut ws, Semantics::Crisp, &[], &z, &mut grad);
        let mut changed = 0;
        for (moves, forced) in &calls {
            let mut got = vec![0.0; w];
            let latents = Latents::Values(&z);
            tape.forward_forced_moved(&mut ws, scratch, &[], latents, moves, forced, &mut got);
            for (l, &(index, branch)) in forced.iter().enumerate() {
                let mut point: Vec<f64> = (0..n).map(|i| z[i * w + l]).collect();
                point[moves[l].0 as usize] = moves[l].1;
                let mut one = [0.0];
                let sem = Semantics::Forced { index, branch };
                tape.forward(&mut reference, sem, &[], &point, &mut one);
                assert_eq!(got[l].to_bits(), one[0].to_bits(), "w {w} sample {l}");
                changed += usize::from(one[0] != grad.value[l]);
            }
        }
        assert!(
            changed > w,
            "{changed} samples changed: the test checks little"
        );
    }
}

#[test]
fn forced_sweeps_on_a_large_survey_give_the_bits_of_forced_forwards() {
    let tape = Tape::compile(&survey(500), 0);
    assert!(tape.held_values() > 0 && tape.held_values() < tape.len() / 2);
    // `c` (read by every student's first guard) and students' own latents.
    let mut scratch = tape.forced_scratch();
    for w in [CHUNK, 7] {
        check_forced_sweeps(&tape, w, &[0, 1, 0, 302, 2, 3, 0, 1000], &mut scratch);
    }
}

#[test]
fn forced_sweeps_on_a_long_walk_give_the_bits_of_forced_forwards() {
    let tape = Tape::compile(&walk(1200), 0);
    let held = tape.held_values();
    println!("instructions {}, held values {held}", tape.len());
    assert!(
        held > 0 && held < tape.len() / 2,
        "{held} of {}",
        tape.len()
    );
    // The walk's scale `a`, its start and steps early and late.
    let mut scratch = tape.forced_scratch();
    for w in [CHUNK, 3] {
        check_forced_sweeps(&tape, w, &[0, 1, 2, 0, 700, 1201, 40], &mut scratch);
    }
}

#[test]
fn the_forced_layout_of_a_large_survey_holds_few_values() {
    let students = 2000;
    let mut active = vec![false; 3 * students + 1];
    active[0] = true;
    let tape = Tape::compile_active(&survey(students), 0, Some(&active));
    let (len, compact, forced) = (tape.len(), tape.value_places(), tape.forced_value_places());
    println!("instructions {len}, value places {compact}, forced layout {forced}");
    // Each student's two terms of the sum (each would take four steps to compute again, and
    // a segment of the sum reads 32 of them); nothing else.
    assert!(tape.held_values() <= 2 * students + 4 * CHAIN_SEGMENT);
    assert!(forced <= compact + tape.held_values());
    assert!(forced < len / 3, "{forced} of {len}");
}

/// Twelve latents each read by hundreds of steps (more than the forced sweeps keep cones of),
/// beside per-item latents.
fn many_wide(items: usize) -> Program {
    let b = Builder::new();
    let globals: Vec<_> = (0..12).map(|j| b.latent(&format!("g{j}"))).collect();
    let mut total = b.constant(0.0);
    for i in 0..items {
        let u = b.latent(&format!("u{i}"));
        let g = globals[i % 12];
        let y = b.if_neg(u - g, u * g, (u + 1.0).exp());
        total = total + y;
        for g in &globals {
            total = total + (u * *g).sin();
        }
    }
    b.finish(&[total]).unwrap()
}

#[test]
fn forced_sweeps_with_many_wide_latents_and_one_scratch_for_several_tapes() {
    let wide = Tape::compile(&many_wide(400), 0);
    let survey = Tape::compile(&survey(500), 0);
    let walk = Tape::compile(&walk(300), 0);
    // The twelve globals and some items, in every call.
    let moved: Vec<u32> = (0..12).chain([12, 100, 400]).collect();
    let mut scratch = wide.forced_scratch();
    for (tape, moved) in [
        (&wide, &moved[..]),
        (&survey, &[0, 7, 0, 3][..]),
        (&walk, &[0, 1, 0, 150][..]),
        (&wide, &moved[..]),
    ] {
        check_forced_sweeps(tape, CHUNK, moved, &mut scratch);
    }
}
