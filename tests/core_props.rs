//! Property test of the tape's derivatives: random programs built through the `Builder`
//! (every unary and binary primitive, if-statements, if-statements nested in guards), checked
//! against Richardson-extrapolated central finite differences in all three semantics.
//!
//! Not here: hand-computed examples (`core_examples.rs`) and batch consistency
//! (`core_batch.rs`).
//!
//! Step-size scheme. With `D(h) = (f(x + h) - f(x - h)) / 2h`, the extrapolation
//! `R(h) = (4 D(h/2) - D(h)) / 3` has truncation error `O(h^4)` and rounding error about
//! `eps |f| / h`. With `h = 1e-3` and values of order 1e3 at most, the rounding part is about
//! 1e-10 and the truncation part is of order 1e-12 times the fifth derivative. The difference
//! `|R(h) - R(h/2)|` estimates the error of `R(h/2)`; a case whose estimate exceeds 1e-8 (relative
//! to `max(|fd|, 1)`) is ill-conditioned (a jump within `h` in crisp semantics, a huge higher
//! derivative) and is counted and skipped, not compared. The remaining cases must agree to
//! relative error 1e-6 against `max(|g|, 1)`, and the test asserts that most cases were checked
//! and that every primitive occurred in checked programs.

use std::cell::RefCell;
use std::collections::HashMap;

use dsgd::eval::{BatchGradient, Tape};
use dsgd::ir::{Binary, Branch, Builder, Node, Program, Semantics, Unary, Var};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

const LATENTS: usize = 3;
const PARAMS: usize = 2;
/// Every unary primitive, a second power, every binary primitive, two kinds of if-statement
/// and the non-smooth sugar.
const KINDS: u8 = (Unary::ALL.len() + 1 + Binary::ALL.len() + 3) as u8;
const CASES: u32 = 2000;
const SEED: u64 = 20_240_101;

/// One construction step: a kind of node and which earlier pool entries it reads.
#[derive(Clone, Debug)]
struct Step {
    kind: u8,
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    konst: f64,
}

/// A recipe for one random program and the point where it is differentiated.
#[derive(Clone, Debug)]
struct Case {
    steps: Vec<Step>,
    latents: Vec<f64>,
    params: Vec<f64>,
    eta: f64,
    forced_index: usize,
    forced_then: bool,
}

fn step() -> impl Strategy<Value = Step> {
    (
        0..KINDS,
        0..64usize,
        0..64usize,
        0..64usize,
        0..64usize,
        -1.5..1.5f64,
    )
        .prop_map(|(kind, a, b, c, d, konst)| Step {
            kind,
            a,
            b,
            c,
            d,
            konst,
        })
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(step(), 4..14),
        prop::collection::vec(-2.5..2.5f64, LATENTS),
        prop::collection::vec(-2.0..2.0f64, PARAMS),
        0.2..2.0f64,
        0..64usize,
        any::<bool>(),
    )
        .prop_map(
            |(steps, latents, params, eta, forced_index, forced_then)| Case {
                steps,
                latents,
                params,
                eta,
                forced_index,
                forced_then,
            },
        )
}

/// `softplus(x) + 0.1`: positive, for the ops defined on the positive half-line.
fn pos<'b>(x: Var<'b>) -> Var<'b> {
    x.softplus() + 0.1
}

/// `2 tanh(x / 2)`: bounded, so that `exp` and `pow` stay far from overflow.
fn bnd<'b>(x: Var<'b>) -> Var<'b> {
    2.0 * (x * 0.5).tanh()
}

/// `x` mapped where `op` is well conditioned: onto its domain, and for the fast-growing ones
/// onto a bounded interval (a new primitive needs an arm here).
fn into_domain(op: Unary, x: Var<'_>) -> Var<'_> {
    match op {
        Unary::Exp | Unary::Expm1 | Unary::Powi(_) => bnd(x),
        Unary::Log | Unary::Sqrt | Unary::Lgamma => pos(x),
        Unary::Log1p => pos(x) - 0.9,
        Unary::Probit => 0.05 + 0.9 * x.sigmoid(),
        Unary::Neg
        | Unary::Softplus
        | Unary::Sigmoid
        | Unary::Tanh
        | Unary::Sin
        | Unary::Cos
        | Unary::NormalCdf => x,
        // Far into the lower tail too, where `ln(normal_cdf)` underflows.
        Unary::LogNormalCdf => 20.0 * x,
    }
}

/// [`into_domain`] of a binary primitive's operands.
fn into_domains<'b>(op: Binary, x: Var<'b>, y: Var<'b>) -> (Var<'b>, Var<'b>) {
    match op {
        Binary::Add | Binary::Sub => (x, y),
        Binary::Mul => (bnd(x), y),
        Binary::Div => (x, pos(y)),
        Binary::Pow => (pos(x), bnd(y)),
    }
}

/// Builds the program of `steps`: each step adds a node over earlier nodes, with operands
/// mapped into the op's domain; the output is the sum of every node the steps added, so
/// none of them is dead.
fn build(steps: &[Step]) -> Program {
    let b = Builder::new();
    let mut pool: Vec<Var<'_>> = (0..LATENTS).map(|i| b.latent(&format!("z{i}"))).collect();
    pool.extend((0..PARAMS).map(|k| b.param(&format!("p{k}"))));
    let mut made = Vec::new();
    for s in steps {
        let n = pool.len();
        let (x, y, w, v) = (pool[s.a % n], pool[s.b % n], pool[s.c % n], pool[s.d % n]);
        let k = b.constant(s.konst);
        let (unary, binary) = (Unary::ALL.len(), Binary::ALL.len());
        let kind = usize::from(s.kind);
        let node = match kind {
            _ if kind < unary => {
                let op = Unary::ALL[kind];
                b.unary(op, into_domain(op, x))
            }
            _ if kind == unary => pos(x).powi(-2),
            _ if kind <= unary + binary => {
                let op = Binary::ALL[kind - unary - 1];
                let (x, y) = into_domains(op, x, y);
                b.binary(op, x, y)
            }
            _ if kind == unary + binary + 1 => b.if_neg(x - k, y, w),
            // A guard built from an if-statement (nesting depth 2 at least).
            _ if kind == unary + binary + 2 => b.if_neg(b.if_neg(x, y, w) - k, v, y * k),
            // Non-smooth sugar: each is an if-statement.
            _ => match s.a % 4 {
                0 => b.abs(x - k),
                1 => b.max(x, y),
                2 => b.min(x, y),
                _ => b.relu(x - k),
            },
        };
        pool.push(node);
        made.push(node);
    }
    let out = b.sum(&made);
    b.finish(&[out])
        .expect("a generated program is well formed")
}

/// Counts of what the property test did, asserted on at the end.
#[derive(Default, Debug)]
struct Tally {
    checked: HashMap<&'static str, usize>,
    near_boundary: HashMap<&'static str, usize>,
    ill_conditioned: HashMap<&'static str, usize>,
    non_finite: HashMap<&'static str, usize>,
    ops_checked: HashMap<String, usize>,
    ifs_checked: usize,
    nested_guards_checked: usize,
    max_rel_error: f64,
}

fn semantics_of(c: &Case, p: &Program) -> [(&'static str, Semantics); 3] {
    let index = if p.if_count() == 0 {
        0
    } else {
        (c.forced_index % p.if_count()) as u32
    };
    let branch = if c.forced_then {
        Branch::Then
    } else {
        Branch::Else
    };
    [
        ("crisp", Semantics::Crisp),
        ("smoothed", Semantics::Smoothed { eta: c.eta }),
        ("forced", Semantics::Forced { index, branch }),
    ]
}

/// `R(h/2)` and the error estimate `|R(h) - R(h/2)|` for `f` at `x0`.
fn richardson(f: &dyn Fn(f64) -> f64, x0: f64, h: f64) -> (f64, f64) {
    let d = |h: f64| (f(x0 + h) - f(x0 - h)) / (2.0 * h);
    let (d1, d2, d3) = (d(h), d(h / 2.0), d(h / 4.0));
    let r1 = (4.0 * d2 - d1) / 3.0;
    let r2 = (4.0 * d3 - d2) / 3.0;
    (r2, (r1 - r2).abs())
}

/// Checks one case in one semantics; `Err` is a real failure, `Ok((outcome, error))` says
/// whether it was compared (and the worst relative error) or why it was skipped.
fn check(c: &Case, p: &Program, sem: Semantics) -> Result<(&'static str, f64), String> {
    let tape = Tape::compile(p, 0);
    let mut ws = tape.workspace();
    let mut g = BatchGradient::new(&tape, 1);
    tape.gradient(&mut ws, sem, &c.params, &c.latents, &mut g);
    let reference = p.evaluate(sem, &c.params, &c.latents);
    if !reference.is_finite() || !g.value[0].is_finite() {
        return Ok(("non_finite", 0.0));
    }
    if g.value[0].to_bits() != reference.to_bits() {
        return Err(format!(
            "tape value {} != reference {}",
            g.value[0], reference
        ));
    }
    if !matches!(sem, Semantics::Smoothed { .. }) {
        // Keep crisp points off the guards' boundaries: a jump within the stencil is no
        // derivative to compare with.
        let all = p.evaluate_all(sem, &c.params, &c.latents);
        let near = p.nodes().iter().any(|n| match *n {
            Node::If { guard, .. } => all[guard.index()].abs() < 1e-2,
            _ => false,
        });
        if near {
            return Ok(("near_boundary", 0.0));
        }
    }
    let h = 1e-3;
    let mut fds = Vec::new();
    for i in 0..LATENTS {
        let f = |x: f64| {
            let mut z = c.latents.clone();
            z[i] = x;
            p.evaluate(sem, &c.params, &z)
        };
        fds.push((g.latent(i, 0), richardson(&f, c.latents[i], h)));
    }
    for k in 0..PARAMS {
        let f = |x: f64| {
            let mut th = c.params.clone();
            th[k] = x;
            p.evaluate(sem, &th, &c.latents)
        };
        fds.push((g.param(k, 0), richardson(&f, c.params[k], h)));
    }
    if fds
        .iter()
        .any(|&(ad, (fd, est))| !ad.is_finite() || !fd.is_finite() || !est.is_finite())
    {
        return Ok(("non_finite", 0.0));
    }
    if fds
        .iter()
        .any(|&(_, (fd, est))| est > 1e-8 * fd.abs().max(1.0))
    {
        return Ok(("ill_conditioned", 0.0));
    }
    let mut worst: f64 = 0.0;
    for (j, &(ad, (fd, _))) in fds.iter().enumerate() {
        let rel = (ad - fd).abs() / ad.abs().max(1.0);
        if rel > 1e-6 {
            return Err(format!(
                "input {j}: AD {ad} vs FD {fd} (relative error {rel:e})\n{p}"
            ));
        }
        worst = worst.max(rel);
    }
    Ok(("checked", worst))
}

#[test]
fn tape_gradients_match_finite_differences_in_every_semantics() {
    let tally = RefCell::new(Tally::default());
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        // A fixed seed: the same programs every run (other seeds were tried while writing).
        rng_seed: RngSeed::Fixed(SEED),
        ..Config::default()
    });
    let result = runner.run(&case(), |c| {
        let p = build(&c.steps);
        for (name, sem) in semantics_of(&c, &p) {
            let (outcome, error) = check(&c, &p, sem).map_err(TestCaseError::fail)?;
            let mut t = tally.borrow_mut();
            let bucket = match outcome {
                "checked" => &mut t.checked,
                "near_boundary" => &mut t.near_boundary,
                "ill_conditioned" => &mut t.ill_conditioned,
                _ => &mut t.non_finite,
            };
            *bucket.entry(name).or_insert(0) += 1;
            if outcome == "checked" {
                t.max_rel_error = t.max_rel_error.max(error);
                for node in p.nodes() {
                    let key = match *node {
                        Node::Unary(op, _) => op.info().name.to_string(),
                        Node::Binary(op, _, _) => op.to_string(),
                        _ => continue,
                    };
                    *t.ops_checked.entry(key).or_insert(0) += 1;
                }
                if p.if_count() > 0 {
                    t.ifs_checked += 1;
                }
                if dsgd::ir::analyse(&p).nesting_depth >= 2 {
                    t.nested_guards_checked += 1;
                }
            }
        }
        Ok(())
    });
    let t = tally.into_inner();
    if let Err(e) = result {
        panic!("{e}\n{t:?}");
    }
    let total = CASES as usize;
    for name in ["crisp", "smoothed", "forced"] {
        let checked = t.checked.get(name).copied().unwrap_or(0);
        assert!(
            checked >= total * 7 / 10,
            "only {checked} of {total} {name} cases compared: {t:?}"
        );
        let non_finite = t.non_finite.get(name).copied().unwrap_or(0);
        assert!(
            non_finite <= total / 100,
            "{non_finite} non-finite {name} cases: {t:?}"
        );
    }
    // Smoothing makes every program smooth: almost nothing may be skipped there.
    let smooth_skipped = total - t.checked.get("smoothed").copied().unwrap_or(0);
    assert!(
        smooth_skipped <= total / 20,
        "{smooth_skipped} smoothed cases skipped: {t:?}"
    );
    let names = (Unary::ALL.iter().map(|u| u.info().name.to_string()))
        .chain(Binary::ALL.iter().map(|o| o.to_string()));
    for op in names {
        let n = t.ops_checked.get(&op).copied().unwrap_or(0);
        assert!(
            n >= 50,
            "op {op} occurred in only {n} checked programs: {t:?}"
        );
    }
    assert!(
        t.ifs_checked >= total,
        "if-statements in {} checked cases",
        t.ifs_checked
    );
    assert!(
        t.nested_guards_checked >= total / 2,
        "nested guards in {} checked cases",
        t.nested_guards_checked
    );
    assert!(t.max_rel_error < 1e-6);
}
