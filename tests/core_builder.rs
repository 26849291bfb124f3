//! Bad input to the builder API becomes an `IrError`, never a panic: out-of-range inputs,
//! foreign node ids, arity mismatches, unknown functions, programs without output and the node
//! limit.
//!
//! Not here: what correct programs compute (`core_examples.rs`).

use dsgd::ir::{Builder, Dist, IrError, Semantics};

#[test]
fn out_of_range_inputs_are_errors() {
    let b = Builder::new();
    let _theta = b.param("theta");
    let _z = b.latent("z");
    assert!(b.param_at(0).is_ok());
    assert_eq!(
        b.param_at(1).err(),
        Some(IrError::ParamOutOfRange { index: 1, count: 1 })
    );
    assert!(b.latent_at(0).is_ok());
    assert_eq!(
        b.latent_at(7).err(),
        Some(IrError::LatentOutOfRange { index: 7, count: 1 })
    );
    let empty = Builder::new();
    assert_eq!(
        empty.param_at(0).err(),
        Some(IrError::ParamOutOfRange { index: 0, count: 0 })
    );
    assert_eq!(
        empty.latent_at(0).err(),
        Some(IrError::LatentOutOfRange { index: 0, count: 0 })
    );
}

#[test]
fn foreign_node_ids_are_errors() {
    let big = Builder::new();
    let x = big.latent("x");
    let far = (x.exp() + x.sin() * x.cos()).id();
    let small = Builder::new();
    let z = small.latent("z");
    assert!(small.var(z.id()).is_ok());
    let err = small.var(far).expect_err("a node id beyond this builder");
    assert!(
        matches!(err, IrError::NodeOutOfRange { count: 1, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(&far.to_string()), "{err}");
    let err = small
        .finish_ids(&[far])
        .expect_err("finishing with a foreign id");
    assert!(matches!(err, IrError::NodeOutOfRange { .. }), "{err:?}");
}

#[test]
fn handles_mixed_across_builders_are_errors_at_finish() {
    // Operators cannot return errors: the builder remembers the foreign handle instead.
    let big = Builder::new();
    let x = big.latent("x");
    let far = x.exp() + x.sin() * x.cos();
    let b = Builder::new();
    let z = b.latent("z");
    let mixed = z * far + 1.0; // `far` is out of range here
    let err = b.finish(&[mixed]).expect_err("a foreign operand");
    // z, the placeholder, z * placeholder, 1, the sum: 5 nodes.
    assert_eq!(
        err,
        IrError::NodeOutOfRange {
            node: far.id().to_string(),
            count: 5
        }
    );
    // In range but from another builder: still caught.
    let b = Builder::new();
    let z = b.latent("z");
    let exp = b.if_neg(z, x, z.exp()); // `x` is node %0 of `big`
    assert!(matches!(
        b.finish(&[exp]),
        Err(IrError::NodeOutOfRange { .. })
    ));
    let b = Builder::new();
    let _z = b.latent("z");
    assert!(matches!(
        b.finish(&[x]),
        Err(IrError::NodeOutOfRange { .. })
    ));
    // A handle kept past `finish` (which empties the builder) is caught too.
    let b = Builder::new();
    let z = b.latent("z");
    let w = b.latent("w");
    let first = (z * w).exp();
    assert!(b.finish(&[first]).is_ok());
    let _fresh = b.latent("z");
    let stale = first.sin();
    assert!(matches!(
        b.finish(&[stale]),
        Err(IrError::NodeOutOfRange { .. })
    ));
}

#[test]
fn arity_mismatches_and_unknown_functions_are_errors() {
    let b = Builder::new();
    let z = b.latent("z");
    let w = b.latent("w");
    for (name, args) in [
        ("exp", vec![]),
        ("log", vec![z, w]),
        ("max", vec![z]),
        ("pow", vec![z, w, z]),
        ("abs", vec![]),
    ] {
        let err = b
            .apply(name, &args)
            .err()
            .unwrap_or_else(|| panic!("{name} with {} args", args.len()));
        match err {
            IrError::Arity { name: n, found, .. } => {
                assert_eq!((n.as_str(), found), (name, args.len()))
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    assert!(matches!(
        b.apply("sum", &[]),
        Err(IrError::Arity { found: 0, .. })
    ));
    assert_eq!(
        b.apply("lgama", &[z]).err(),
        Some(IrError::UnknownFunction("lgama".into()))
    );
    // The right arities work and mean what they say.
    let m = b.apply("mean", &[z, w]).unwrap();
    let mx = b.apply("max", &[z, w]).unwrap();
    for dist in Dist::ALL {
        let wrong = vec![z; dist.arity() + 1];
        let err = b
            .log_density(dist, w, &wrong)
            .expect_err("too many arguments");
        assert!(
            matches!(err, IrError::Arity { found, .. } if found == dist.arity() + 1),
            "{dist}: {err:?}"
        );
        let err = b
            .log_density(dist, w, &wrong[..dist.arity() - 1])
            .expect_err("too few");
        assert!(matches!(err, IrError::Arity { .. }), "{dist}: {err:?}");
    }
    let p = b.finish(&[m + mx]).unwrap();
    // mean(1, 3) + max(1, 3) = 2 + 3
    assert_eq!(p.evaluate(Semantics::Crisp, &[], &[1.0, 3.0]), 5.0);
}

#[test]
fn a_program_without_output_is_an_error() {
    let b = Builder::new();
    let _z = b.latent("z");
    assert_eq!(b.finish(&[]).err(), Some(IrError::NoOutput));
    assert_eq!(
        Builder::new().finish_ids(&[]).err(),
        Some(IrError::NoOutput)
    );
}

#[test]
fn the_node_limit_is_an_error_not_a_panic() {
    for limit in [0, 1, 2, 5, 10] {
        let b = Builder::with_node_limit(limit);
        let z = b.latent("z");
        let theta = b.param("theta");
        let mut x = z;
        for k in 0..20 {
            x = (x * theta + f64::from(k)).sin();
        }
        let f = b.if_neg(x, z.exp(), theta.ln());
        assert!(b.overflowed(), "limit {limit}");
        assert_eq!(
            b.finish(&[f]).err(),
            Some(IrError::TooLarge { limit }),
            "limit {limit}"
        );
    }
    // Within the limit nothing changes: z, theta, mul, exp are 4 nodes.
    let b = Builder::with_node_limit(4);
    let z = b.latent("z");
    let theta = b.param("theta");
    let f = (z * theta).exp();
    assert!(!b.overflowed());
    assert_eq!(b.finish(&[f]).unwrap().node_count(), 4);
}

#[test]
fn log_densities_match_closed_forms() {
    let b = Builder::new();
    let x = b.latent("x");
    let (loc, scale) = (b.constant(0.5), b.constant(2.0));
    let normal = b.log_density(Dist::Normal, x, &[loc, scale]).unwrap();
    let expo = b.log_density(Dist::Exponential, x, &[scale]).unwrap();
    let p = b.finish(&[normal, expo]).unwrap();
    let all = p.evaluate_all(Semantics::Crisp, &[], &[1.5]);
    // log N(1.5 | 0.5, 2) = -(0.5)^2 / 2 - ln 2 - ln(2 pi) / 2
    let expected = -0.125 - 2f64.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln();
    assert!((all[p.outputs()[0].index()] - expected).abs() < 1e-15);
    // log Exp(1.5 | 2) = ln 2 - 3; outside the support it is -inf.
    assert!((all[p.outputs()[1].index()] - (2f64.ln() - 3.0)).abs() < 1e-15);
    let outside = p.evaluate_all(Semantics::Crisp, &[], &[-1.0]);
    assert_eq!(outside[p.outputs()[1].index()], f64::NEG_INFINITY);
}
