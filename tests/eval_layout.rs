//! The tape's memory layout: on a large program whose values are read only close to where
//! they are computed (the randomised-response survey), a workspace holds few value and
//! adjoint places, not one per instruction; and a workspace in the full layout (which
//! LYY18's forced sweeps switch to) gives the bits of a compact one.
//!
//! Not here: that the sweeps are right (`eval_reference.rs`, `eval_options.rs`).

use dsgd::eval::{BatchGradient, CHAIN_SEGMENT, CHUNK, Tape};
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
fn the_full_layout_gives_the_bits_of_the_compact_one() {
    let p = survey(40);
    let tape = Tape::compile(&p, 0);
    assert!(tape.value_places() < tape.len() / 2);
    let batch = CHUNK + 5;
    let z = latents(tape.latent_count(), batch);
    for sem in [Semantics::Crisp, Semantics::Smoothed { eta: 0.3 }] {
        let mut compact = tape.workspace();
        let mut g1 = BatchGradient::new(&tape, batch);
        tape.gradient(&mut compact, sem, &[], &z, &mut g1);
        // A forced sweep switches a workspace to the full layout.
        let mut full = tape.workspace();
        let mut scratch = tape.forced_scratch();
        let one = latents(tape.latent_count(), 1);
        let mut out = [0.0];
        tape.forward_forced(
            &mut full,
            &mut scratch,
            &[],
            &one,
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
