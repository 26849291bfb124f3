//! Hand-computed examples of the core: the paper's `F1` and `F2` (Example 2.1), the crisp and
//! smoothed NaN cases of docs/design.md section 1, and common-subexpression elimination.
//!
//! Not here: random programs against finite differences (`core_props.rs`), batch consistency
//! (`core_batch.rs`), analyses of guards (`core_analysis.rs`), builder errors
//! (`core_builder.rs`).

use dsgd::eval::{BatchGradient, Tape};
use dsgd::ir::{Branch, Builder, Program, Semantics, analyse};
use dsgd::special::sigmoid;

/// Value and gradient (latents, then params) of output 0 at one point, via the tape; also
/// checks that the reference interpreter gives the same value bit for bit.
fn grad_at(p: &Program, sem: Semantics, params: &[f64], z: &[f64]) -> (f64, Vec<f64>) {
    let tape = Tape::compile(p, 0);
    let mut ws = tape.workspace();
    let mut g = BatchGradient::new(&tape, 1);
    tape.gradient(&mut ws, sem, params, z, &mut g);
    let reference = p.evaluate(sem, params, z);
    assert_eq!(
        g.value[0].to_bits(),
        reference.to_bits(),
        "tape {} vs reference {}",
        g.value[0],
        reference
    );
    (
        g.value[0],
        g.latents.iter().chain(&g.params).copied().collect(),
    )
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

/// `F1 = -0.5 z^2 + (if z < 0 then 0 else 1)`.
fn f1() -> Program {
    let b = Builder::new();
    let z = b.latent("z");
    let f = -0.5 * z.powi(2) + b.if_neg(z, b.constant(0.0), b.constant(1.0));
    b.finish(&[f]).unwrap()
}

/// `F2 = if (a step(b z1 + c) + d step(e z2 + f) + g) < 0 then 0 else 1` with
/// `a = 1, b = 2, c = -1, d = 2, e = -1, f = 0.5, g = -2.5`: 1 exactly when `z1 >= 0.5` and
/// `z2 <= 0.5`.
fn f2() -> Program {
    let bld = Builder::new();
    let z1 = bld.latent("z1");
    let z2 = bld.latent("z2");
    let (zero, one) = (bld.constant(0.0), bld.constant(1.0));
    let s1 = bld.if_neg(2.0 * z1 - 1.0, zero, one);
    let s2 = bld.if_neg(-1.0 * z2 + 0.5, zero, one);
    let guard = 1.0 * s1 + 2.0 * s2 - 2.5;
    let f = bld.if_neg(guard, zero, one);
    bld.finish(&[f]).unwrap()
}

#[test]
fn f1_crisp_values_and_gradients() {
    let p = f1();
    assert_eq!(p.if_count(), 1);
    assert_eq!(analyse(&p).nesting_depth, 1);
    // F1(z) = -z^2/2 + [z >= 0], F1'(z) = -z away from 0.
    for (z, value, slope) in [
        (-1.0, -0.5, 1.0),
        (0.5, 0.875, -0.5),
        (0.0, 1.0, 0.0),
        (2.0, -1.0, -2.0),
    ] {
        let (v, g) = grad_at(&p, Semantics::Crisp, &[], &[z]);
        assert_eq!(v, value, "F1({z})");
        assert_eq!(g, vec![slope], "F1'({z})");
    }
}

#[test]
fn f1_smoothed_values_and_gradients() {
    let p = f1();
    // F1_eta(z) = -z^2/2 + sigma(z / eta); at z = 1, eta = 0.5: -0.5 + sigma(2).
    let (v, g) = grad_at(&p, Semantics::Smoothed { eta: 0.5 }, &[], &[1.0]);
    assert!(close(v, 0.380_797_077_977_882_3, 1e-15), "{v}");
    // d/dz = -z + sigma(2) sigma(-2) / 0.5.
    let s = 0.880_797_077_977_882_3;
    assert!(close(g[0], -1.0 + s * (1.0 - s) / 0.5, 1e-14), "{}", g[0]);
    // At the boundary both branches weigh one half, whatever eta.
    for eta in [1.0, 1e-3, 1e-300] {
        let (v, _) = grad_at(&p, Semantics::Smoothed { eta }, &[], &[0.0]);
        assert_eq!(v, 0.5);
    }
}

#[test]
fn f1_smoothed_tends_to_crisp_as_eta_shrinks() {
    let p = f1();
    let etas = [2.0, 1.0, 0.5, 0.1, 0.05, 0.01, 1e-3, 1e-4];
    for z in [-1.3, -0.2, 0.05, 0.7, 2.0] {
        let crisp = p.evaluate(Semantics::Crisp, &[], &[z]);
        let mut last = f64::INFINITY;
        for eta in etas {
            let smooth = p.evaluate(Semantics::Smoothed { eta }, &[], &[z]);
            let err = (smooth - crisp).abs();
            // |F1_eta(z) - F1(z)| = sigma(-|z| / eta) <= exp(-|z| / eta).
            assert!(
                err <= (-z.abs() / eta).exp() + 1e-15,
                "z {z} eta {eta}: error {err}"
            );
            assert!(
                close(err, sigmoid(-z.abs() / eta), 1e-12) || err < 1e-15,
                "z {z} eta {eta}"
            );
            assert!(
                err <= last,
                "not monotone at z {z}, eta {eta}: {err} > {last}"
            );
            last = err;
        }
        assert!(last < 1e-15, "z {z}: final error {last}");
    }
}

#[test]
fn f2_crisp_and_smoothed_values_and_depth() {
    let p = f2();
    assert_eq!(p.if_count(), 3);
    let a = analyse(&p);
    assert_eq!(a.nesting_depth, 2);
    assert_eq!(a.default_eta_decay(), 0.25);
    for (z, value) in [
        ([1.0, 0.0], 1.0),
        ([0.0, 0.0], 0.0),
        ([1.0, 1.0], 0.0),
        ([0.5, 0.5], 1.0),
    ] {
        let (v, g) = grad_at(&p, Semantics::Crisp, &[], &z);
        assert_eq!(v, value, "F2({z:?})");
        assert_eq!(g, vec![0.0, 0.0], "crisp F2 is flat almost everywhere");
    }
    // eta = 1 at (1, 0): inner values sigma(1) and sigma(0.5), outer guard
    // sigma(1) + 2 sigma(0.5) - 2.5 = -0.5240227589662858, F2 = sigma(guard).
    let (v, _) = grad_at(&p, Semantics::Smoothed { eta: 1.0 }, &[], &[1.0, 0.0]);
    assert!(close(v, 0.371_912_060_249_523_2, 1e-15), "{v}");
    // Forcing the outer if-statement (index 2, last in arena order) overrides its guard.
    let then = Semantics::Forced {
        index: 2,
        branch: Branch::Then,
    };
    assert_eq!(grad_at(&p, then, &[], &[1.0, 0.0]).0, 0.0);
    let inner = Semantics::Forced {
        index: 1,
        branch: Branch::Then,
    };
    assert_eq!(
        grad_at(&p, inner, &[], &[1.0, 0.0]).0,
        0.0,
        "forcing s2 = 0 makes the sum too small"
    );
}

#[test]
fn crisp_if_does_not_leak_log_of_nonpositive_from_the_untaken_branch() {
    let b = Builder::new();
    let z = b.latent("z");
    let theta = b.param("theta");
    // if z < 0 then log(z) * theta else z * theta
    let f = b.if_neg(z, z.ln() * theta, z * theta);
    let p = b.finish(&[f]).unwrap();
    for z in [1.0, 0.0, 2.5, 1e-300] {
        let (v, g) = grad_at(&p, Semantics::Crisp, &[3.0], &[z]);
        assert_eq!(v, 3.0 * z);
        assert_eq!(g, vec![3.0, z], "z = {z}");
    }
    // 1/z untaken at z = 0: the branch is inf and its derivative -inf, neither leaks.
    let b = Builder::new();
    let z = b.latent("z");
    let f = b.if_neg(z, 1.0 / z, z.powi(2));
    let p = b.finish(&[f]).unwrap();
    assert_eq!(grad_at(&p, Semantics::Crisp, &[], &[0.0]), (0.0, vec![0.0]));
    // The mirror: log in the else branch, taken only for z >= 0.
    let b = Builder::new();
    let z = b.latent("z");
    let f = b.if_neg(z, z.powi(2), z.ln());
    let p = b.finish(&[f]).unwrap();
    for z in [-1.0, -1e-300, -4.0] {
        let (v, g) = grad_at(&p, Semantics::Crisp, &[], &[z]);
        assert_eq!((v, g[0]), (z * z, 2.0 * z));
    }
    // Forcing the finite branch against the guard is just as clean.
    let forced = Semantics::Forced {
        index: 0,
        branch: Branch::Then,
    };
    let (v, g) = grad_at(&p, forced, &[], &[0.0]);
    assert_eq!((v, g[0]), (0.0, 0.0));
}

#[test]
fn crisp_if_does_not_leak_division_by_zero_or_sqrt_of_negative() {
    let b = Builder::new();
    let z = b.latent("z");
    // Each lane takes one branch; the other is NaN there (sqrt or log1p of a negative).
    let f = b.if_neg(z, 1.0 / z, z.powi(2));
    let g2 = b.if_neg(z, (-z).sqrt(), z.sqrt() + (z - 1.0).ln_1p());
    let out = f + g2;
    let p = b.finish(&[out]).unwrap();
    let (v, g) = grad_at(&p, Semantics::Crisp, &[], &[0.5]);
    // d/dz [z^2 + sqrt z + log1p(z - 1)] = 2z + 1/(2 sqrt z) + 1/z.
    assert!(close(v, 0.25 + 0.5f64.sqrt() + (-0.5f64).ln_1p(), 1e-15));
    assert!(
        close(g[0], 1.0 + 0.5 / 0.5f64.sqrt() + 2.0, 1e-15),
        "{}",
        g[0]
    );
    let (v, g) = grad_at(&p, Semantics::Crisp, &[], &[-0.25]);
    assert!(close(v, -4.0 + 0.5, 1e-15));
    // d/dz [1/z + sqrt(-z)] = -1/z^2 - 1/(2 sqrt(-z)).
    assert!(close(g[0], -16.0 - 1.0, 1e-15), "{}", g[0]);
}

/// `if z < 0 then blowup(z) * theta else z * theta`, where at z = 1 the blow-up is +inf
/// (`exp(1000 z)`), NaN (`log(z - 2)`) or -inf (`log(z - 1)`, whose derivative is +inf).
fn smoothed_blowup(which: usize) -> Program {
    let b = Builder::new();
    let z = b.latent("z");
    let theta = b.param("theta");
    let t = match which {
        0 => (1000.0 * z).exp(),
        1 => (z - 2.0).ln(),
        _ => (z - 1.0).ln(),
    };
    let f = b.if_neg(z, t * theta, z * theta);
    b.finish(&[f]).unwrap()
}

#[test]
fn smoothed_if_drops_branch_whose_weight_underflows() {
    for which in 0..3 {
        let p = smoothed_blowup(which);
        // eta = 1e-3 makes sigma(-z / eta) = sigma(-1000) underflow to exactly 0 at z = 1.
        for eta in [1e-3, 1e-6] {
            let sem = Semantics::Smoothed { eta };
            let (v, g) = grad_at(&p, sem, &[2.0], &[1.0]);
            assert_eq!(v, 2.0, "blow-up {which}, eta {eta}");
            assert_eq!(g, vec![2.0, 1.0], "blow-up {which}, eta {eta}");
        }
    }
    // The else branch blowing up while the then-branch dominates: guard z at z = -1.
    let b = Builder::new();
    let z = b.latent("z");
    let f = b.if_neg(z, z.powi(2), (-1000.0 * z).exp() + (z + 1.0).ln());
    let p = b.finish(&[f]).unwrap();
    let (v, g) = grad_at(&p, Semantics::Smoothed { eta: 1e-3 }, &[], &[-1.0]);
    assert_eq!((v, g[0]), (1.0, -2.0));
}

#[test]
fn repeated_subexpressions_are_stored_once() {
    let b = Builder::new();
    let z0 = b.latent("z0");
    let z1 = b.latent("z1");
    let u = (z0 * z1).exp();
    let again = (z1 * z0).exp(); // commuted operands: the same node
    let w = b.if_neg(z0 - z1, u, z1.sin());
    let w_again = b.if_neg(z0 - z1, (z0 * z1).exp(), z1.sin());
    let f = u + again + w + w_again + (z0 * z1).sin();
    // z0, z1, mul, exp, add(exp, exp), sub, sin(z1), if, add(add, if), add(add, if),
    // sin(mul), add: 12 nodes, one if-statement.
    assert_eq!(b.node_count(), 12);
    let p = b.finish(&[f]).unwrap();
    assert_eq!(p.node_count(), 12, "{p}");
    assert_eq!(p.if_count(), 1);
    // Dead nodes go: a subexpression not reaching the output is not kept.
    let b = Builder::new();
    let z = b.latent("z");
    let _dead = (z * 3.0).tanh() + z.cos();
    let f = z.exp() + z.exp();
    assert_eq!(b.node_count(), 8);
    let p = b.finish(&[f]).unwrap();
    // z, exp, add(exp, exp)
    assert_eq!(p.node_count(), 3, "{p}");
}

#[test]
fn constants_fold_and_constant_guards_are_not_if_statements() {
    let b = Builder::new();
    let z = b.latent("z");
    let two = b.constant(1.0) + b.constant(1.0);
    assert_eq!(two.as_const(), Some(2.0));
    let f = b.if_neg(two - 3.0, z.exp(), z.ln()) * 1.0 + 0.0;
    let p = b.finish(&[f]).unwrap();
    assert_eq!(p.if_count(), 0);
    // z, exp
    assert_eq!(p.node_count(), 2, "{p}");
}

/// Two normal observations of a latent (constant scales, so `- ln s - ln(2 pi) / 2` is
/// constant) and a constant factor, built with `sum` (`hoist = false`) or
/// `sum_hoisting_constants`, each log-density recorded as a term.
fn normals(hoist: bool) -> Program {
    use dsgd::ir::{Dist, Span, TermKind};
    let b = Builder::new();
    let z = b.latent("z");
    let at = Span { start: 0, end: 1 };
    let mut terms = Vec::new();
    for (x, s) in [(0.3, 2.0), (-1.7, 0.5)] {
        let (x, s) = (b.constant(x), b.constant(s));
        let lp = b.log_density(Dist::Normal, x, &[z, s]).unwrap();
        b.record_term(TermKind::Observe(Dist::Normal), at, lp, &[x, z, s]);
        terms.push(lp);
    }
    let c = b.constant(-0.25);
    b.record_term(TermKind::Factor, at, c, &[]);
    terms.push(c);
    let f = if hoist {
        b.sum_hoisting_constants(&terms)
    } else {
        b.sum(&terms)
    };
    b.finish(&[f]).unwrap()
}

#[test]
fn hoisting_constants_keeps_gradients_and_term_values_and_saves_nodes() {
    let (plain, hoisted) = (normals(false), normals(true));
    // Four constant subtractions (two per normal) and the factor's addition become one
    // addition, and the four constants they read one constant.
    assert_eq!(plain.node_count() - hoisted.node_count(), 7, "{hoisted}");
    for z in [-2.0, 0.1, 3.5] {
        let (vp, gp) = grad_at(&plain, Semantics::Crisp, &[], &[z]);
        let (vh, gh) = grad_at(&hoisted, Semantics::Crisp, &[], &[z]);
        assert_eq!(gp[0].to_bits(), gh[0].to_bits(), "z = {z}");
        // Only the order of the additions differs: a few ulp of the value.
        assert!(close(vp, vh, 4.0 * f64::EPSILON * vp.abs()), "{vp} vs {vh}");
        // Each recorded term still has the statement's own value, bit for bit.
        let (ap, ah) = (
            plain.evaluate_all(Semantics::Crisp, &[], &[z]),
            hoisted.evaluate_all(Semantics::Crisp, &[], &[z]),
        );
        for (tp, th) in plain.terms().iter().zip(hoisted.terms()) {
            assert_eq!(
                plain.term_value(tp, &ap).to_bits(),
                hoisted.term_value(th, &ah).to_bits()
            );
        }
    }
}
