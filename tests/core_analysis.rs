//! The static analyses: affine-guard detection (exact `a` and `c`, and the reason a guard is
//! not affine), safety of guards (the paper's SGuard) and nesting depth.
//!
//! Not here: the examples of the paper (`core_examples.rs`).

use dsgd::ir::{Builder, Node, NotAffine, Program, Semantics, UnsafeReason, analyse};

/// `2 z0 - 3 z2 + 1 < 5 z1`, `z1 > 0.5 z0`, `z0 / 4 - (-z2) < 1`: affine guards.
fn affine_program() -> Program {
    let b = Builder::new();
    let z0 = b.latent("z0");
    let z1 = b.latent("z1");
    let z2 = b.latent("z2");
    let one = b.constant(1.0);
    let i0 = b.if_lt(2.0 * z0 - 3.0 * z2 + 1.0, 5.0 * z1, z0, z1);
    let i1 = b.if_gt(z1, 0.5 * z0, z2, one);
    let i2 = b.if_lt(z0 / 4.0 - (-z2), one, z1.exp(), z2);
    b.finish(&[i0 + i1 + i2]).unwrap()
}

#[test]
fn affine_guards_have_exact_coefficients() {
    let p = affine_program();
    let a = analyse(&p);
    assert_eq!(a.if_count(), 3);
    assert!(a.all_affine());
    assert!(a.safe());
    assert!(a.first_non_affine().is_none());
    let forms: Vec<_> = a.guards.iter().map(|g| g.affine.clone().unwrap()).collect();
    // guard 0: 2 z0 - 3 z2 + 1 - 5 z1
    assert_eq!(forms[0].coefficients, vec![(0, 2.0), (1, -5.0), (2, -3.0)]);
    assert_eq!(forms[0].constant, 1.0);
    // guard 1 (`z1 > 0.5 z0`): 0.5 z0 - z1
    assert_eq!(forms[1].coefficients, vec![(0, 0.5), (1, -1.0)]);
    assert_eq!(forms[1].constant, 0.0);
    // guard 2: z0 / 4 + z2 - 1
    assert_eq!(forms[2].coefficients, vec![(0, 0.25), (2, 1.0)]);
    assert_eq!(forms[2].constant, -1.0);
    // The affine form reproduces the guard's value.
    let z = [0.3, -1.7, 2.9];
    let all = p.evaluate_all(Semantics::Crisp, &[], &z);
    for (g, form) in a.guards.iter().zip(&forms) {
        let Node::If { guard, .. } = p.node(g.node) else {
            panic!("not an if")
        };
        assert!((form.value(&z) - all[guard.index()]).abs() < 1e-14);
    }
}

#[test]
fn non_affine_guards_are_rejected_with_the_reason() {
    let b = Builder::new();
    let z0 = b.latent("z0");
    let z1 = b.latent("z1");
    let theta = b.param("theta");
    let one = b.constant(1.0);
    let product = b.if_neg(z0 * z1 - 1.0, z0, z1); // 0: product of latents
    let nonlinear = b.if_neg(z0.exp() - 2.0, z1, one); // 1: exp of a latent
    let from_ifs = b.if_neg(b.step(z0) + b.step(z1) - 1.5, z0, one); // 2, 3, 4: built from ifs
    let with_param = b.if_neg(z0 - theta, z1, one); // 5: the boundary moves with theta
    let only_param = b.if_neg(theta - 1.0, z0, z1); // 6: no latent at all
    let nested_safe = b.if_neg(b.if_neg(z0, z1, z0 + 1.0), z0, one); // 7, 8: an if of safe guards
    let f = product + nonlinear + from_ifs + with_param + only_param + nested_safe;
    let p = b.finish(&[f]).unwrap();
    let a = analyse(&p);
    assert_eq!(a.if_count(), 9);
    // Find each if-statement by the program's own numbering: look up the node built from
    // each guard shape through its index order (arena order = creation order here).
    let reason = |k: usize| a.guards[k].affine.clone().err();
    let safety = |k: usize| a.guards[k].unsafe_reason.clone();
    assert_eq!(reason(0), Some(NotAffine::Nonlinear));
    assert_eq!(safety(0), None);
    assert_eq!(reason(1), Some(NotAffine::Nonlinear));
    assert_eq!(safety(1), None);
    // The two steps are affine and safe; the guard summing them is neither.
    assert!(a.guards[2].affine.is_ok() && a.guards[3].affine.is_ok());
    assert_eq!(reason(4), Some(NotAffine::ContainsIf));
    assert_eq!(safety(4), Some(UnsafeReason::BuiltFromIfs));
    assert_eq!(reason(5), Some(NotAffine::DependsOnParam));
    assert_eq!(safety(5), None, "it still depends on a latent");
    assert_eq!(reason(6), Some(NotAffine::DependsOnParam));
    assert_eq!(safety(6), Some(UnsafeReason::NoLatent));
    // An if-statement whose guard is an if of safe guards is safe (SGuard) but not affine.
    assert!(a.guards[7].affine.is_ok());
    assert_eq!(reason(8), Some(NotAffine::ContainsIf));
    assert_eq!(safety(8), None);
    assert!(!a.all_affine());
    assert!(!a.safe());
    assert_eq!(
        a.first_non_affine().map(|(g, r)| (g.index, r)),
        Some((0, NotAffine::Nonlinear))
    );
    // Guards' own depths: plain guards 0, the sum of steps and the nested guard 1.
    let depths: Vec<u32> = a.guards.iter().map(|g| g.guard_depth).collect();
    assert_eq!(depths, vec![0, 0, 0, 0, 1, 0, 0, 0, 1]);
    assert_eq!(a.nesting_depth, 2);
    assert_eq!(a.default_eta_decay(), 0.25);
}

#[test]
fn nesting_depth_follows_the_paper() {
    // depth(if F then G else H) = max(depth(F) + 1, depth(G), depth(H)); functions take the max.
    let b = Builder::new();
    let z = b.latent("z");
    let one = b.constant(1.0);
    let mut f = z;
    for _ in 0..3 {
        // Each level puts the previous expression into the guard: depth grows by one.
        f = b.if_neg(f - 0.5, one, z) + z;
    }
    // An if-statement in a branch does not add depth.
    let in_branch = b.if_neg(z, f, z.exp());
    let p = b.finish(&[in_branch]).unwrap();
    let a = analyse(&p);
    assert_eq!(a.nesting_depth, 3);
    assert_eq!(a.if_count(), 4);
    assert!((a.default_eta_decay() - 1.0 / 6.0).abs() < 1e-16);
    // No if-statement at all: depth 0, and the decay defaults to the depth-1 value.
    let b = Builder::new();
    let z = b.latent("z");
    let p = b.finish(&[z.exp()]).unwrap();
    let a = analyse(&p);
    assert_eq!((a.nesting_depth, a.if_count()), (0, 0));
    assert_eq!(a.default_eta_decay(), 0.5);
}

#[test]
fn deep_guards_do_not_overflow_the_stack() {
    // A guard summing 20,000 terms, analysed on a test thread's small stack.
    let b = Builder::new();
    let z = b.latent("z");
    let w = b.latent("w");
    let mut sum = z;
    let mut expected = 1.0;
    for k in 0..20_000u32 {
        let c = f64::from(k % 7 + 1);
        sum = sum + z * c;
        expected += c;
    }
    let deep_sum = b.if_neg(sum - w, z, w);
    // Guards nested 20,000 deep: each guard is the previous if-statement.
    let mut g = z;
    for _ in 0..20_000 {
        g = b.if_neg(g, z - 1.0, w + 1.0);
    }
    let p = b.finish(&[deep_sum + g]).unwrap();
    let a = analyse(&p);
    assert_eq!(a.if_count(), 20_001);
    assert_eq!(a.nesting_depth, 20_000);
    let first = a.guards[0].affine.clone().unwrap();
    assert_eq!(first.coefficients, vec![(0, expected), (1, -1.0)]);
    assert_eq!(a.guards[20_000].affine, Err(NotAffine::ContainsIf));
    assert!(a.safe(), "ifs of safe guards are safe");
}
