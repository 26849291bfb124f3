//! Smoke test of the core: Example 1.1 through the builder and the tape.

use dsgd::eval::{BatchGradient, Tape};
use dsgd::ir::{Builder, Semantics};

#[test]
fn example_1_1_value_and_gradient() {
    let b = Builder::new();
    let z = b.latent("z");
    let zero = b.constant(0.0);
    let one = b.constant(1.0);
    let f = -0.5 * z.powi(2) + b.if_lt(z, zero, zero, one);
    let p = b.finish(&[f]).unwrap();
    assert_eq!(p.if_count(), 1);
    let tape = Tape::compile(&p, 0);
    let mut ws = tape.workspace();
    let zs = [-1.0, 0.5, 2.0];
    let mut g = BatchGradient::new(&tape, 3);
    tape.gradient(&mut ws, Semantics::Crisp, &[], &zs, &mut g);
    // f(z) = -z^2/2 + [z >= 0]; df/dz = -z.
    assert_eq!(g.value, vec![-0.5, -0.125 + 1.0, -2.0 + 1.0]);
    assert_eq!(g.latents, vec![1.0, -0.5, -2.0]);
    let eta = 0.5;
    tape.gradient(&mut ws, Semantics::Smoothed { eta }, &[], &zs, &mut g);
    for (l, &z) in zs.iter().enumerate() {
        let s = dsgd::special::sigmoid(z / eta);
        assert!((g.value[l] - (-0.5 * z * z + s)).abs() < 1e-15);
        assert!((g.latents[l] - (-z + s * (1.0 - s) / eta)).abs() < 1e-14);
    }
}
