//! Every construct of the language, compiled from a small program and compared, in value and
//! gradient (crisp and smoothed), with the same program built by hand with the builder API.

use std::path::Path;

use dsgd::eval::{BatchGradient, Tape};
use dsgd::ir::{Builder, Dist, LatentKind, Mode, Model, Program, Semantics, Transform, Var};
use dsgd::lang::{CompileOptions, compile_source};

const LANES: usize = 16;

fn compile(src: &str) -> Model {
    compile_in(src, Path::new("."))
}

fn compile_in(src: &str, dir: &Path) -> Model {
    compile_source("test.dsgd", src, dir, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Deterministic points in `[lo, hi)` (a small LCG: the test needs spread, not quality).
fn points(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn sweep(p: &Program, sem: Semantics, params: &[f64], latents: &[f64]) -> BatchGradient {
    let tape = Tape::compile(p, 0);
    let mut ws = tape.workspace();
    let mut g = BatchGradient::new(&tape, LANES);
    tape.gradient(&mut ws, sem, params, latents, &mut g);
    g
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-12 * (1.0 + a.abs().max(b.abs())) || (a.is_nan() && b.is_nan())
}

fn assert_all_close(what: &str, a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(close(*x, *y), "{what}[{i}]: compiled {x} vs hand-built {y}");
    }
}

/// Compiles `src`, builds `build`'s program, and checks that both have the same counts and
/// the same values and gradients at random points in `[lo, hi)`.
fn same(src: &str, lo: f64, hi: f64, build: impl for<'b> FnOnce(&'b Builder) -> Var<'b>) -> Model {
    let m = compile(src);
    same_model(&m, lo, hi, build);
    m
}

fn same_model(m: &Model, lo: f64, hi: f64, build: impl for<'b> FnOnce(&'b Builder) -> Var<'b>) {
    let b = Builder::new();
    let out = build(&b);
    let hand = b.finish(&[out]).expect("hand-built program");
    let p = &m.program;
    assert_eq!(p.latent_count(), hand.latent_count(), "latents");
    assert_eq!(p.param_count(), hand.param_count(), "params");
    assert_eq!(
        p.if_count(),
        hand.if_count(),
        "if-statements\n{p}\n---\n{hand}"
    );
    let latents = points(p.latent_count() * LANES, lo, hi, 1);
    let params = points(p.param_count(), lo, hi, 2);
    for sem in [Semantics::Crisp, Semantics::Smoothed { eta: 0.3 }] {
        let g1 = sweep(p, sem, &params, &latents);
        let g2 = sweep(&hand, sem, &params, &latents);
        assert_all_close("value", &g1.value, &g2.value);
        assert_all_close("d/dz", &g1.latents, &g2.latents);
        assert_all_close("d/dtheta", &g1.params, &g2.params);
    }
}

fn normal_lp<'b>(b: &'b Builder, x: Var<'b>, loc: Var<'b>, scale: f64) -> Var<'b> {
    b.log_density(Dist::Normal, x, &[loc, b.constant(scale)])
        .unwrap()
}

#[test]
fn comments_literals_and_arithmetic() {
    same(
        "// a comment\n/* a block\n comment */ let z = sample Normal(0, 1);\n\
         factor 2 + 3 * z - z / 4 - -z + 1.5e-1 * 2_0;",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let prior = normal_lp(b, z, b.constant(0.0), 1.0);
            prior + ((2.0 + 3.0 * z - z / 4.0 + z) + 0.15 * 20.0)
        },
    );
}

#[test]
fn precedence_and_associativity() {
    // -z^2 is -(z^2); 2^3^2 = 2^9; a - b - c = (a - b) - c; a / b / c = (a / b) / c.
    same(
        "let z = sample Normal(0, 1);\nfactor -z^2 + 2^3^2 - z - 1 - 2 + z / 2 / 4;",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let prior = normal_lp(b, z, b.constant(0.0), 1.0);
            prior + (-(z.powi(2)) + 512.0 - z - 1.0 - 2.0 + z / 2.0 / 4.0)
        },
    );
}

#[test]
fn power_with_integer_and_real_exponents() {
    same(
        "let z = sample Normal(0, 1);\nfactor z^3 + z^0.5 + 2^z + z^-1;",
        0.2,
        0.9,
        |b| {
            let z = b.latent("z");
            let prior = normal_lp(b, z, b.constant(0.0), 1.0);
            prior + (z.powi(3) + z.pow(b.constant(0.5)) + b.constant(2.0).pow(z) + z.powi(-1))
        },
    );
}

#[test]
fn const_and_inline_data() {
    same(
        "const k = 2 * 3;\ndata xs = [1, 2.5, -1];\nlet z = sample Normal(0, 1);\nfactor k * z + xs[1] * xs[2];",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            normal_lp(b, z, b.constant(0.0), 1.0) + (6.0 * z + (-2.5))
        },
    );
}

#[test]
fn data_from_csv_by_column_name() {
    let dir = std::env::temp_dir().join(format!("dsgd-lang-csv-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("d")).unwrap();
    std::fs::write(dir.join("d/obs.csv"), "t,y\n0,1.5\n1, -2\n").unwrap();
    let m = compile_in(
        "data y = csv(\"d/obs.csv\", \"y\");\nlet z = sample Normal(0, 1);\nfor i in 0..2 { observe y[i] ~ Normal(z, 1); }",
        &dir,
    );
    same_model(&m, -1.0, 1.0, |b| {
        let z = b.latent("z");
        let prior = normal_lp(b, z, b.constant(0.0), 1.0);
        prior + normal_lp(b, b.constant(1.5), z, 1.0) + normal_lp(b, b.constant(-2.0), z, 1.0)
    });
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn let_and_reassignment() {
    same(
        "let z = sample Normal(0, 1);\nlet a = z * 2;\na = a + 1;\nlet a = a * a;\nfactor a;",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let a = z * 2.0 + 1.0;
            normal_lp(b, z, b.constant(0.0), 1.0) + a * a
        },
    );
}

#[test]
fn if_expression_with_each_comparison() {
    // `a < b`, `a > b` guard on `a - b`, `b - a`; `>=`, `<=` are their negations.
    same(
        "let z = sample Normal(0, 1);\nlet w = sample Normal(0, 1);\n\
         factor (if z < w { 1 } else { 2 }) + (if z > w { 3 } else { 4 })\n\
              + (if z >= 0.5 { 5 } else { 6 }) + (if z <= w { 7 } else { 8 });",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let w = b.latent("w");
            let c = |x: f64| b.constant(x);
            let prior = normal_lp(b, z, c(0.0), 1.0) + normal_lp(b, w, c(0.0), 1.0);
            let f = b.if_neg(z - w, c(1.0), c(2.0))
                + b.if_neg(w - z, c(3.0), c(4.0))
                + b.if_neg(z - 0.5, c(6.0), c(5.0))
                + b.if_neg(w - z, c(8.0), c(7.0));
            prior + f
        },
    );
}

#[test]
fn and_or_not_are_nested_ifs() {
    same(
        "let z = sample Normal(0, 1);\nlet w = sample Normal(0, 1);\n\
         factor (if z < 0 && w < 0 { z } else { w }) + (if z < 0 || w < 0 { 1 } else { 2 }) + (if !(z < w) { 3 } else { 4 });",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let w = b.latent("w");
            let c = |x: f64| b.constant(x);
            let prior = normal_lp(b, z, c(0.0), 1.0) + normal_lp(b, w, c(0.0), 1.0);
            let and = b.if_neg(z, b.if_neg(w, z, w), w);
            let or = b.if_neg(z, c(1.0), b.if_neg(w, c(1.0), c(2.0)));
            let not = b.if_neg(z - w, c(4.0), c(3.0));
            prior + (and + or + not)
        },
    );
}

#[test]
fn if_statement_converts_assigned_variables() {
    same(
        "let z = sample Normal(0, 1);\nlet a = 1;\nlet b = 2;\nif z < 0 { a = z * 3; } else { b = z; }\nfactor a + b;",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let a = b.if_neg(z, z * 3.0, b.constant(1.0));
            let bb = b.if_neg(z, b.constant(2.0), z);
            normal_lp(b, z, b.constant(0.0), 1.0) + (a + bb)
        },
    );
}

#[test]
fn observe_and_factor_in_a_branch_count_only_there() {
    same(
        "let z = sample Normal(0, 1);\nif z > 0 { observe 1 ~ Normal(z, 2); } else { factor z; }\nif z < 0.5 { factor 3; }",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let c = |x: f64| b.constant(x);
            let obs = normal_lp(b, c(1.0), z, 2.0);
            normal_lp(b, z, c(0.0), 1.0) + b.if_neg(-z, obs, z) + b.if_neg(z - 0.5, c(3.0), c(0.0))
        },
    );
}

#[test]
fn sample_in_a_branch_keeps_the_latent() {
    let m = same(
        "let z = sample Normal(0, 1);\nif z < 0 { let w = sample Normal(1, 2); factor w; }",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let w = b.latent("w");
            let inside = normal_lp(b, w, b.constant(1.0), 2.0) + w;
            normal_lp(b, z, b.constant(0.0), 1.0) + b.if_neg(z, inside, b.constant(0.0))
        },
    );
    assert_eq!(m.latents.len(), 2);
    assert_eq!(
        m.latents[1].kind,
        LatentKind::Guided {
            init_mean: 1.0,
            init_std: 1.0
        }
    );
}

#[test]
fn else_if_chains() {
    same(
        "let z = sample Normal(0, 1);\nfactor if z < -0.5 { 1 } else if z < 0.5 { 2 } else { 3 };",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let c = |x: f64| b.constant(x);
            normal_lp(b, z, c(0.0), 1.0)
                + b.if_neg(z + 0.5, c(1.0), b.if_neg(z - 0.5, c(2.0), c(3.0)))
        },
    );
}

#[test]
fn for_loops_unroll_with_constant_guards_resolved() {
    let m = same(
        "const n = 4;\nlet z = sample Normal(0, 1);\nlet s = 0;\n\
         for i in 0..n { if i >= 2 { s = s + i * z; } else { s = s - 1; } }\nfactor s;",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            normal_lp(b, z, b.constant(0.0), 1.0) + (-2.0 + 2.0 * z + 3.0 * z)
        },
    );
    assert_eq!(
        m.program.if_count(),
        0,
        "constant guards are not if-statements"
    );
}

#[test]
fn arrays_comprehensions_indexing_and_element_assignment() {
    same(
        "let zs = [sample Normal(0, 1) for i in 0..3];\nlet m = [[1, 2], [3, 4]];\nm[1][0] = zs[2];\n\
         factor sum(zs) + m[1][0] * m[0][1] + len(zs) + mean([zs[0], zs[1]]);",
        -1.0,
        1.0,
        |b| {
            let zs: Vec<Var> = (0..3).map(|i| b.latent(&format!("zs[{i}]"))).collect();
            let prior = b.sum(
                &zs.iter()
                    .map(|&z| normal_lp(b, z, b.constant(0.0), 1.0))
                    .collect::<Vec<_>>(),
            );
            prior + (b.sum(&zs) + zs[2] * 2.0 + 3.0 + (zs[0] + zs[1]) / 2.0)
        },
    );
}

#[test]
fn functions_are_inlined_and_recursion_terminates() {
    same(
        "fn sq(x) { x * x }\nfn pw(x, n) { if n == 0 { 1 } else { x * pw(x, n - 1) } }\n\
         fn obs(v) { observe v ~ Normal(0, 1); }\n\
         let z = sample Normal(0, 1);\nobs(z);\nfactor sq(z + 1) + pw(z, 3);",
        -1.0,
        1.0,
        |b| {
            let z = b.latent("z");
            let c = |x: f64| b.constant(x);
            let prior = normal_lp(b, z, c(0.0), 1.0);
            let o = normal_lp(b, z, c(0.0), 1.0);
            let zp = z + 1.0;
            prior + o + (zp * zp + z * (z * z))
        },
    );
}

#[test]
fn builtins() {
    let src = "let z = sample Normal(0, 1);\n\
        factor exp(z) + log(z) + log1p(z) + expm1(z) + sqrt(z) + softplus(z) + sigmoid(z) + tanh(z)\n\
          + sin(z) + cos(z) + lgamma(z) + probit(z) + normal_cdf(z) + pow(z, 2.5)\n\
          + mean(z, 2) + sum(z, 1, 2) + abs(z - 0.5) + max(z, 0.5) + min(z, 0.5) + relu(z - 0.5) + step(z - 0.5);";
    same(src, 0.1, 0.9, |b| {
        let z = b.latent("z");
        let c = |x: f64| b.constant(x);
        let f = [
            z.exp(),
            z.ln(),
            z.ln_1p(),
            z.exp_m1(),
            z.sqrt(),
            z.softplus(),
            z.sigmoid(),
            z.tanh(),
            z.sin(),
            z.cos(),
            z.lgamma(),
            z.probit(),
            z.normal_cdf(),
            z.pow(c(2.5)),
            (z + 2.0) / 2.0,
            z + 1.0 + 2.0,
            b.abs(z - 0.5),
            b.max(z, c(0.5)),
            b.min(z, c(0.5)),
            b.relu(z - 0.5),
            b.step(z - 0.5),
        ];
        let mut total = f[0];
        for &t in &f[1..] {
            total = total + t;
        }
        normal_lp(b, z, c(0.0), 1.0) + total
    });
}

#[test]
fn every_distribution_in_observe() {
    let src = "let z = sample Normal(0, 1);\n\
        observe 0.3 ~ Normal(z, 2);\n observe 0.3 ~ HalfNormal(z);\n observe 0.3 ~ Exponential(z);\n\
        observe 0.3 ~ Logistic(z, 2);\n observe 3 ~ Poisson(z);\n observe 1 ~ Bernoulli(z);\n\
        observe 2 ~ Binomial(5, z);\n observe z ~ Uniform(0, 1);";
    same(src, 0.1, 0.9, every_distribution);
}

fn every_distribution<'b>(b: &'b Builder) -> Var<'b> {
    {
        let z = b.latent("z");
        let c = |x: f64| b.constant(x);
        let lp = |d, x, args: &[Var<'b>]| b.log_density(d, x, args).unwrap();
        let terms = [
            normal_lp(b, z, c(0.0), 1.0),
            lp(Dist::Normal, c(0.3), &[z, c(2.0)]),
            lp(Dist::HalfNormal, c(0.3), &[z]),
            lp(Dist::Exponential, c(0.3), &[z]),
            lp(Dist::Logistic, c(0.3), &[z, c(2.0)]),
            lp(Dist::Poisson, c(3.0), &[z]),
            lp(Dist::Bernoulli, c(1.0), &[z]),
            lp(Dist::Binomial, c(2.0), &[c(5.0), z]),
            lp(Dist::Uniform, z, &[c(0.0), c(1.0)]),
        ];
        b.sum(&terms)
    }
}

#[test]
fn sample_priors_of_other_distributions() {
    let m = same(
        "let z = sample Exponential(2);\nlet w = sample Logistic(1, 2);",
        0.1,
        0.9,
        |b| {
            // z = exp(u) on its support: log Exponential(e^u | 2) + log |d e^u / du| written
            // out by hand, with no if-statement.
            let u = b.latent("z");
            let w = b.latent("w");
            (2f64.ln() - 2.0 * u.exp() + u)
                + b.log_density(Dist::Logistic, w, &[b.constant(1.0), b.constant(2.0)])
                    .unwrap()
        },
    );
    assert_eq!(m.latent_transform(0), Transform::Exp { lower: 0.0 });
    assert_eq!(m.latent_transform(1), Transform::Identity);
    // The guide of u starts at the prior's mean 1/2.
    assert_eq!(
        m.latents[0].kind,
        LatentKind::Guided {
            init_mean: 0.5f64.ln(),
            init_std: 1.0
        }
    );
    assert_eq!(
        m.latents[1].kind,
        LatentKind::Guided {
            init_mean: 1.0,
            init_std: 1.0
        }
    );
}

#[test]
fn param_and_maximize() {
    let m = same(
        "param theta = 0.5;\nlet z = sample Normal(theta, 2);\nmaximize -(z - 1)^2;",
        -1.0,
        1.0,
        |b| {
            let _theta = b.param("theta");
            let z = b.latent("z");
            -(z - 1.0).powi(2)
        },
    );
    assert_eq!(m.mode, Mode::Objective { minimize: false });
    assert_eq!(m.params[0].init, 0.5);
    let LatentKind::Family { loc, scale } = m.latents[0].kind else {
        panic!("family latent")
    };
    let v = m.program.evaluate_all(Semantics::Crisp, &[0.25], &[0.0]);
    assert_eq!((v[loc.index()], v[scale.index()]), (0.25, 2.0));
}

#[test]
fn minimize_negates_and_terms_add() {
    let m = same(
        "param a = 1;\nparam b = 2;\nminimize (a - 3)^2;\nminimize b^2;",
        -1.0,
        1.0,
        |b| {
            let a = b.param("a");
            let bb = b.param("b");
            -((a - 3.0).powi(2) + bb.powi(2))
        },
    );
    assert_eq!(m.mode, Mode::Objective { minimize: true });
    assert_eq!(m.objective_sign(), -1.0);
}

#[test]
fn fixed_latents_contribute_nothing() {
    let m = same(
        "let c = sample Flat();\nlet u = sample Normal(0, 1) fixed;\nfactor if u >= c { 1 } else { 0 };",
        -1.0,
        1.0,
        |b| {
            let c = b.latent("c");
            let u = b.latent("u");
            b.if_neg(u - c, b.constant(0.0), b.constant(1.0))
        },
    );
    assert_eq!(
        m.latents[1].kind,
        LatentKind::Fixed {
            loc: 0.0,
            scale: 1.0
        }
    );
    assert_eq!(
        m.latents[0].kind,
        LatentKind::Guided {
            init_mean: 0.0,
            init_std: 1.0
        }
    );
}

#[test]
fn objective_program_with_a_fixed_latent() {
    let m = compile(
        "param t = 0;\nlet u = sample Normal(0, 1) fixed;\nlet z = sample Normal(t, 1);\nmaximize z * u;",
    );
    assert_eq!(
        m.latents[0].kind,
        LatentKind::Fixed {
            loc: 0.0,
            scale: 1.0
        }
    );
    assert!(matches!(m.latents[1].kind, LatentKind::Family { .. }));
}

#[test]
fn guide_initialisation() {
    let m = compile(
        "let a = sample Normal(3, 1) init(mean = 2, std = 0.5);\nlet b = sample Normal(a, 1) init(rho = 0);\nlet c = sample Normal(a, 1);",
    );
    let kinds: Vec<LatentKind> = m.latents.iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        vec![
            LatentKind::Guided {
                init_mean: 2.0,
                init_std: 0.5
            },
            LatentKind::Guided {
                init_mean: 0.0,
                init_std: std::f64::consts::LN_2
            },
            LatentKind::Guided {
                init_mean: 0.0,
                init_std: 1.0
            },
        ]
    );
    assert_eq!(m.mode, Mode::Variational);
}

#[test]
fn latents_are_named_after_their_variable_and_loop_indices() {
    let m = compile(
        "let z = sample Normal(0, 1);\nfor i in 0..2 { let w = sample Normal(0, 1); }\nlet v = [sample Normal(0, 1) for j in 0..2];",
    );
    let names: Vec<&str> = m.latents.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, vec!["z", "w[0]", "w[1]", "v[0]", "v[1]"]);
}

#[test]
fn shared_subexpressions_are_stored_once() {
    let m = compile(
        "let z = sample Normal(0, 1);\nlet a = exp(z) * exp(z);\nlet b = exp(z) + exp(z);\nfactor a + b;",
    );
    let exps = m
        .program
        .nodes()
        .iter()
        .filter(|n| matches!(n, dsgd::ir::Node::Unary(dsgd::ir::Unary::Exp, _)))
        .count();
    assert_eq!(exps, 1);
}

#[test]
fn if_statements_record_their_source_span() {
    let src = "let z = sample Normal(0, 1);\nfactor if z < 0 { 1 } else { 2 };\nfactor abs(z - 1);";
    let m = compile(src);
    let spans: Vec<&str> = (0..m.program.if_count())
        .map(|k| m.program.if_span(k).unwrap())
        .map(|s| &src[s.start as usize..s.end as usize])
        .collect();
    assert_eq!(spans, vec!["if z < 0 { 1 } else { 2 }", "abs(z - 1)"]);
}

#[test]
fn compilation_is_deterministic() {
    // Several variables merged by one if: the if-statements must be numbered the same way
    // every time (variable order must not come from a hash map).
    let src = "let z = sample Normal(0, 1);\nlet a = 1; let b = 2; let c = 3; let d = 4; let e = 5;\n\
               if z < 0 { a = z; b = 2 * z; c = 3 * z; d = 4 * z; e = 5 * z; }\nfactor a + 2 * b + 3 * c + 4 * d + 5 * e;";
    let first = compile(src).program.to_string();
    for _ in 0..20 {
        assert_eq!(compile(src).program.to_string(), first);
    }
}
