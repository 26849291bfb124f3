//! Compiling stays O(n log n) on programs shaped against the fusion of addition chains: a
//! node read by a million additions, and a chain of two million additions one of whose
//! terms is read by every other link. Both used to cost time quadratic in the number of
//! readers (a million-line `a = sin(a) + 0.5;` never finished compiling); here they must
//! compile, and fuse what they should, within the test's run. At a smaller size the same
//! shapes are evaluated against the reference interpreter and closed forms.
//!
//! Not here: that fused chains keep every bit (`eval_reference.rs`).

use dsgd::eval::{BatchGradient, CHAIN_SEGMENT, Tape};
use dsgd::ir::{Builder, Program, Semantics};

/// `a = sin(a) + 0.5`, `n` times, from a latent: the constant `0.5` is read by `n`
/// additions, none of which extends a chain (each partial result is read by `sin`).
fn one_constant_read_n_times(n: usize) -> Program {
    let b = Builder::new();
    let mut a = b.latent("x");
    for _ in 0..n {
        a = a.sin() + 0.5;
    }
    b.finish(&[a]).unwrap()
}

/// `s = (s + x * c_i) + y`, `n` times: one chain of `2n - 1` additions in which the latent
/// `y` is a term of every other link.
fn one_term_in_every_link(n: usize) -> Program {
    let b = Builder::new();
    let x = b.latent("x");
    let y = b.latent("y");
    let mut s = x * 0.5 + y;
    for i in 1..n {
        s = s + x * (i as f64 + 0.5) + y;
    }
    b.finish(&[s]).unwrap()
}

#[test]
fn a_million_readers_of_one_node_compile() {
    let n = 1_000_000;
    let tape = Tape::compile(&one_constant_read_n_times(n), 0);
    // The latent, the constant, and a `sin` and an addition per line.
    assert_eq!(tape.len(), 2 * n + 2);
    assert_eq!(tape.fused_additions(), 0, "no addition extends another");
}

/// The partial sums fused away in a chain of `links` additions: all but the last of each
/// segment of [`CHAIN_SEGMENT`].
fn fused_in_chain(links: usize) -> usize {
    links - links.div_ceil(CHAIN_SEGMENT)
}

#[test]
fn a_chain_of_two_million_additions_with_a_shared_term_fuses_in_segments() {
    let n = 1_000_000;
    let tape = Tape::compile(&one_term_in_every_link(n), 0);
    // Every partial sum but each segment's last is fused away: `y`'s only readers are the
    // links.
    assert_eq!(tape.fused_additions(), fused_in_chain(2 * n - 1));
}

#[test]
fn the_same_shapes_evaluate_as_the_reference_interpreter() {
    let n = 1000;
    let z = [0.3, -1.25];
    let crisp = Semantics::Crisp;

    let p = one_constant_read_n_times(n);
    let tape = Tape::compile(&p, 0);
    let mut grad = BatchGradient::new(&tape, 1);
    tape.gradient(&mut tape.workspace(), crisp, &[], &z[..1], &mut grad);
    assert_eq!(
        grad.value[0].to_bits(),
        p.evaluate(crisp, &[], &z[..1]).to_bits()
    );
    // d/dx of the iterated map is the product of cos(a_k) along the way.
    let (mut a, mut d) = (z[0], 1.0);
    for _ in 0..n {
        d *= a.cos();
        a = a.sin() + 0.5;
    }
    assert!((grad.latent(0, 0) - d).abs() <= 1e-12 * d.abs(), "{d}");

    let p = one_term_in_every_link(n);
    let tape = Tape::compile(&p, 0);
    assert_eq!(tape.fused_additions(), fused_in_chain(2 * n - 1));
    let mut grad = BatchGradient::new(&tape, 1);
    let latents = [z[0], z[1]];
    tape.gradient(&mut tape.workspace(), crisp, &[], &latents, &mut grad);
    assert_eq!(
        grad.value[0].to_bits(),
        p.evaluate(crisp, &[], &latents).to_bits()
    );
    // d/dy = n exactly (n ones); d/dx = sum of (i + 1/2) = n^2 / 2, exact in binary.
    assert_eq!(grad.latent(1, 0), n as f64);
    assert_eq!(grad.latent(0, 0), (n * n) as f64 / 2.0);
}
