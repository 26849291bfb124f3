//! Gradient sweeps whose values are only checked (`Values::Checked`, what an optimisation
//! step asks for): the logarithms only the output reads become a stand-in, finite exactly
//! where they are. The gradients keep their bits and the values their finiteness, in every
//! build of the sweeps (the compiled code's `vgetexppd` included); logarithms whose value a
//! gradient or a guard reads stay exact.

mod eval_common;

use std::f64::consts::LN_2;
use std::path::Path;

use dsgd::elementary::{ln, ln_stand_in, log1p, log1p_stand_in, softplus, softplus_stand_in};
use dsgd::estimate::{self, Engine, EstimatorKind, NonFinite, Problem, Purpose, StreamKey};
use dsgd::eval::vmath::KernelSet;
use dsgd::eval::{BatchGradient, CHUNK, Latents, Tape, Values};
use dsgd::experiment::run::{OnNonFinite, RunConfig, run};
use dsgd::ir::{Builder, Model, Program, Semantics, Var};
use dsgd::lang::{CompileOptions, compile_source};
use eval_common::{Lcg, bits};

/// Every class of input at its edges: zeros, subnormals, normals around 1, the largest,
/// infinities, NaN and negatives.
const EDGES: [f64; 21] = [
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    1e-310,
    f64::MIN_POSITIVE,
    1e-300,
    0.5,
    1.0 - f64::EPSILON / 2.0,
    1.0,
    1.0 + f64::EPSILON,
    2.0,
    3.0,
    1e300,
    f64::MAX,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    -1.0,
    -1e-300,
    -f64::MAX,
];

/// How a value is finite: a number, `+inf`, `-inf` or NaN.
fn class(x: f64) -> i8 {
    match x {
        x if x.is_nan() => 2,
        f64::INFINITY => 1,
        f64::NEG_INFINITY => -1,
        _ => 0,
    }
}

/// Each stand-in beside its function.
type Function = fn(f64) -> f64;
const STAND_INS: [(&str, Function, Function); 3] = [
    ("ln", ln_stand_in, ln),
    ("log1p", log1p_stand_in, log1p),
    ("softplus", softplus_stand_in, softplus),
];

#[test]
fn each_stand_in_is_finite_exactly_where_its_function_is_and_within_ln2_of_it() {
    let mut rng = Lcg(11);
    let mut xs = EDGES.to_vec();
    // Random bit patterns (every exponent, both signs, subnormals, infinities and NaNs), and
    // numbers next to -1, where `log1p` ends.
    xs.extend((0..2_000_000).map(|_| {
        rng.next();
        f64::from_bits(rng.0)
    }));
    xs.extend((0..100_000).map(|i| -1.0 + (i as f64 - 50_000.0) * f64::EPSILON));
    for (name, stand_in, f) in STAND_INS {
        for &x in &xs {
            let (s, y) = (stand_in(x), f(x));
            assert_eq!(
                class(s),
                class(y),
                "{name} at {x:e}: stand-in {s}, exact {y}"
            );
            if class(s) == 0 {
                // `ln`, `log1p`: `e ln 2` for the exponent `e` of `x` (of `1 + x` rounded),
                // rounded once; `softplus`: `max(x, 0)`. The functions are within 2 ulp.
                let slack = 4.0 * f64::EPSILON * y.abs().max(1.0);
                assert!(
                    s <= y + slack && s >= y - LN_2 - slack,
                    "{name} at {x:e}: {s} against {y}"
                );
            }
        }
    }
}

/// Logarithms of every kind over 3 latents and a parameter: two only the output reads (one
/// scaled by a constant), a fused Poisson term `4 ln(r) - r`, one a gradient reads (times a
/// latent) and two in guards (one of an indicator). Three stand-ins.
fn logarithms() -> Program {
    let b = Builder::new();
    let z: Vec<_> = (0..3).map(|i| b.latent(&format!("z{i}"))).collect();
    let p = b.param("p");
    let r = z[1] * z[1];
    let terms = [
        z[0].ln(),
        (z[1] + p).ln() * 3.0,
        b.constant(4.0) * r.ln() - r,
        z[2] * (z[1] * z[1] + 1.0).ln(),
        b.if_neg((z[2] * z[2] + 2.0).ln() - 1.5, z[0] * p, z[1]),
        // An indicator: no reverse sweep reads its guard's value, only its weights.
        b.if_neg(
            (z[2] * z[2] + 3.0).ln() - 1.2,
            b.constant(1.0),
            b.constant(0.0),
        ),
    ];
    let total = b.sum(&terms);
    b.finish(&[total]).unwrap()
}

/// The values and the gradient's bits of a batch of `latents` (latent-major) in build `set`.
fn sweep(
    tape: &Tape,
    set: KernelSet,
    sem: Semantics,
    latents: &[f64],
    values: Values,
) -> (Vec<f64>, Vec<u64>) {
    let batch = latents.len() / tape.latent_count();
    let mut ws = tape.workspace();
    ws.set_kernels(set);
    let mut g = BatchGradient::new(tape, batch);
    let params = [0.7];
    // As noise reparameterised on load (what the engine passes, and the compiled code
    // reads), with location 0 and scale 1: the same values (but `-0.0`, which becomes 0).
    let n = tape.latent_count();
    let (loc, scale) = (vec![0.0; n], vec![1.0; n]);
    let latents = Latents::Affine {
        noise: latents,
        loc: &loc,
        scale: &scale,
    };
    tape.gradient_latents(&mut ws, sem, &params, latents, &mut g, values);
    let mut grads = Vec::new();
    for lane in 0..batch {
        for i in 0..tape.latent_count() {
            grads.push(g.latent(i, lane).to_bits());
        }
        grads.push(g.param(0, lane).to_bits());
    }
    (g.value.to_vec(), grads)
}

/// `f(z0) + f(z1 + p) + z2^2` for the function `name`: the output is finite where the two
/// `f` are, so its finiteness is the stand-ins'.
fn one_function(name: &str) -> Program {
    let b = Builder::new();
    let z: Vec<_> = (0..3).map(|i| b.latent(&format!("z{i}"))).collect();
    let p = b.param("p");
    fn apply<'b>(name: &str, x: Var<'b>) -> Var<'b> {
        match name {
            "ln" => x.ln(),
            "log1p" => x.ln_1p(),
            _ => x.softplus(),
        }
    }
    let f = |x| apply(name, x);
    let total = b.sum(&[f(z[0]), f(z[1] + p), z[2] * z[2]]);
    b.finish(&[total]).unwrap()
}

#[test]
fn checked_sweeps_keep_the_gradients_bits_and_the_values_finiteness_in_every_build() {
    let tape = Tape::compile(&logarithms(), 0);
    assert_eq!(tape.fused_poisson_terms(), 1);
    assert_eq!(tape.ln_stand_ins(), 3);
    checked_against_exact(&tape, "logarithms");
    for (name, _, _) in STAND_INS {
        let tape = Tape::compile(&one_function(name), 0);
        assert_eq!(tape.ln_stand_ins(), 2, "{name}");
        checked_against_exact(&tape, name);
    }
}

/// In every build, smoothed and crisp, at every edge: the checked sweep's gradients have the
/// exact one's bits, its values their finiteness, and every build the same values.
fn checked_against_exact(tape: &Tape, name: &str) {
    // Every edge for `z0` and `z1`.
    let batch = 3 * CHUNK + 5;
    let mut rng = Lcg(5);
    let mut latents = Vec::new();
    latents.extend((0..batch).map(|l| EDGES[l % EDGES.len()]));
    latents.extend((0..batch).map(|l| EDGES[(7 * l + 3) % EDGES.len()]));
    latents.extend((0..batch).map(|_| 4.0 * rng.next() - 2.0));
    for sem in [Semantics::Smoothed { eta: 0.1 }, Semantics::Crisp] {
        let mut first: Option<Vec<u64>> = None;
        for set in KernelSet::available() {
            let (exact, exact_grads) = sweep(tape, set, sem, &latents, Values::Exact);
            let (checked, grads) = sweep(tape, set, sem, &latents, Values::Checked);
            let at = format!("{name}, {set:?}, {sem:?}");
            assert!(grads == exact_grads, "{at}: the gradients differ");
            for (l, (c, e)) in checked.iter().zip(&exact).enumerate() {
                assert_eq!(class(*c), class(*e), "{at}, lane {l}: {c} against {e}");
            }
            // Finite lanes and others: the check has something to find.
            assert!(exact.iter().any(|v| v.is_finite()), "{at}: all non-finite");
            assert!(exact.iter().any(|v| !v.is_finite()), "{at}: all finite");
            if set == KernelSet::Jit {
                let c = tape.checked_jit_coverage(sem).expect("compiled");
                assert_eq!(c.called, 0, "{at}: {c:?}");
            }
            let b = bits(&checked);
            match &first {
                None => first = Some(b),
                Some(f) => assert!(*f == b, "{at}: checked values differ by build"),
            }
        }
    }
}

fn compile(src: &str) -> Model {
    compile_source("t.dsgd", src, Path::new("."), &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `step` against `evaluate` on the same draws: the gradient samples and their mean bit for
/// bit, each value finite where the exact one is.
fn same_step(model: &Model, kind: EstimatorKind) {
    let engine = |m: &Model| {
        let problem = Problem::new(m).unwrap();
        let estimator = estimate::build(kind, &problem, 0.1, None).unwrap();
        Engine::new(problem, estimator)
    };
    let (mut exact, mut checked) = (engine(model), engine(model));
    let theta = exact.problem().family().init();
    for (k, batch) in [(0, 16), (1, 37), (2, 16)] {
        let key = StreamKey::new(3, k, Purpose::Step);
        exact.evaluate(&theta, key, batch, false).unwrap();
        checked.step(&theta, key, batch).unwrap();
        let b = |e: &Engine| {
            e.sample_gradients()
                .iter()
                .map(|g| g.to_bits())
                .collect::<Vec<_>>()
        };
        assert!(
            b(&exact) == b(&checked),
            "{kind} iteration {k}: gradients differ"
        );
        for (c, e) in checked.values().iter().zip(exact.values()) {
            assert_eq!(
                class(*c),
                class(*e),
                "{kind} iteration {k}: {c} against {e}"
            );
        }
        // The first non-finite value, where the run says a step went wrong: the same lane.
        let first = |e: &Engine| match e.first_non_finite() {
            Some(NonFinite::Value { lane, value }) => Some((lane, class(value))),
            _ => None,
        };
        assert_eq!(first(&checked), first(&exact), "{kind} iteration {k}");
    }
}

#[test]
fn an_optimisation_step_has_the_gradients_of_an_exact_evaluation() {
    // One stand-in per Poisson term but the one of a count of 0 (which has no logarithm).
    let textmsg = dsgd::models::builtin("textmsg").unwrap().unwrap();
    assert_eq!(Tape::compile(&textmsg.program, 0).ln_stand_ins(), 36);
    let scale = compile(
        "let s = sample Normal(0, 1);\nlet z = sample Normal(0, exp(s));\nobserve 1.5 ~ Normal(z, exp(s));\n",
    );
    // Half the draws of z are negative: the Exponential's log-density is then NaN while its
    // gradient is finite.
    let nan = compile("let z = sample Normal(0, 1);\nobserve 1 ~ Exponential(z);\n");
    // A latent in (0, 1) (the log-Jacobian of its logit transform: softplus terms) as the
    // scale of a Cauchy (a `log1p` term), and a Logistic (another).
    let bounded = compile(
        "let q = sample Beta(2, 2);\nlet m = sample Normal(0, 1);\nobserve 0.3 ~ Cauchy(m, q);\nobserve 1.2 ~ Logistic(m, 1);\n",
    );
    assert!(Tape::compile(&bounded.program, 0).ln_stand_ins() >= 4);
    for model in [&textmsg, &scale, &nan, &bounded] {
        for kind in [
            EstimatorKind::Dsgd,
            EstimatorKind::Fixed,
            EstimatorKind::Reparam,
        ] {
            same_step(model, kind);
        }
    }
}

#[test]
fn a_step_whose_log_density_is_nan_is_still_skipped() {
    // The logarithm of the Exponential's rate is a stand-in in the steps; it is NaN where
    // the rate is negative as the logarithm is, and the step is skipped.
    let model = compile("let z = sample Normal(0, 1);\nobserve 1 ~ Exponential(z);\n");
    assert_eq!(Tape::compile(&model.program, 0).ln_stand_ins(), 1);
    let config = RunConfig {
        iterations: 20,
        log_every: 20,
        log_samples: 50,
        threads: Some(1),
        on_nonfinite: OnNonFinite::Continue,
        ..RunConfig::default()
    };
    let report = run(&model, &config, &mut []).unwrap();
    // A batch of 16 draws without a negative z has probability 2^-16 per step.
    // Every step is skipped (had the stand-in been finite there, the gradient would have
    // been, and none would be).
    assert_eq!(report.skipped_steps, 20, "{:?}", report.stop_message);
}
