//! Plates: which `for` loops are kept as a body run over rows, and that a model with plates
//! means what the unrolled model means.
//!
//! For each model, `--plates on` and `--plates off` must give the same latents (names,
//! kinds, transforms) and the same objective (`Model::evaluate` against the unrolled
//! program's `evaluate`) at random points, crisp and smoothed; each detection rule, broken,
//! must leave its loop unrolled with that rule as the reason.

use std::path::Path;

use dsgd::ir::{LatentKind, LoopOutcome, Model, Semantics};
use dsgd::lang::{CompileOptions, DataSet, FsResolver, PLATE_MIN_ROWS, PlatePolicy};

fn compile(src: &str, data: &str, plates: PlatePolicy) -> Model {
    let opts = CompileOptions {
        plates,
        ..CompileOptions::default()
    };
    let data = DataSet::from_json_str(data, "test.json").unwrap();
    let resolver = FsResolver::new(Path::new("."), &opts);
    dsgd::lang::compile_with_data("t.dsgd", src, &resolver, &data, &opts)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A small deterministic generator (xorshift), uniform in (-1, 1).
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

fn close(a: f64, b: f64) -> bool {
    if !a.is_finite() || !b.is_finite() {
        return a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    }
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-300)
}

/// The model with plates and the unrolled one agree: latents, parameters and values.
fn same_meaning(on: &Model, off: &Model) {
    assert!(off.plates.is_empty());
    let names = |m: &Model| -> Vec<(String, Option<dsgd::ir::Span>)> {
        m.latents.iter().map(|l| (l.name.clone(), l.span)).collect()
    };
    assert_eq!(names(on), names(off), "the latent lists differ");
    for (a, b) in on.latents.iter().zip(&off.latents) {
        match (a.kind, b.kind) {
            // The family's location and scale are outputs: compared by value below.
            (LatentKind::Family { .. }, LatentKind::Family { .. }) => {}
            (x, y) => assert_eq!(x, y, "latent {}", a.name),
        }
    }
    assert_eq!(
        on.program.latent_transforms(),
        off.program.latent_transforms()
    );
    assert_eq!(on.params, off.params);
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20 {
        let theta: Vec<f64> = (0..on.params.len()).map(|_| 2.0 * g.next()).collect();
        let z: Vec<f64> = (0..on.latents.len()).map(|_| 2.0 * g.next()).collect();
        for sem in [
            Semantics::Crisp,
            Semantics::Smoothed { eta: 0.3 },
            Semantics::Smoothed { eta: 0.01 },
        ] {
            let a = on.evaluate(sem, &theta, &z);
            let b = off.program.evaluate(sem, &theta, &z);
            assert!(close(a, b), "{sem:?}: with plates {a}, unrolled {b}");
            let (va, vb) = (
                on.program.evaluate_all(sem, &theta, &z),
                off.program.evaluate_all(sem, &theta, &z),
            );
            for (x, y) in on.latents.iter().zip(&off.latents) {
                if let (
                    LatentKind::Family { loc, scale },
                    LatentKind::Family {
                        loc: loc2,
                        scale: scale2,
                    },
                ) = (x.kind, y.kind)
                {
                    assert!(close(va[loc.index()], vb[loc2.index()]));
                    assert!(close(va[scale.index()], vb[scale2.index()]));
                }
            }
        }
    }
}

/// Compiles `src` both ways, checks they agree, and returns the model with plates.
fn plated(src: &str, data: &str, plates: usize) -> Model {
    let on = compile(src, data, PlatePolicy::On);
    let off = compile(src, data, PlatePolicy::Off);
    assert_eq!(
        on.plates.len(),
        plates,
        "plates: {:?}",
        on.loops.iter().map(|l| &l.outcome).collect::<Vec<_>>()
    );
    same_meaning(&on, &off);
    on
}

/// Why the first loop of `src` was not a plate under `--plates on` (and that the model is
/// then the unrolled one).
fn refused(src: &str, data: &str) -> String {
    let on = compile(src, data, PlatePolicy::On);
    let off = compile(src, data, PlatePolicy::Off);
    assert!(on.plates.is_empty());
    same_meaning(&on, &off);
    match &on.loops[0].outcome {
        LoopOutcome::Unrolled { reason, .. } => reason.clone(),
        other => panic!("{other:?}"),
    }
}

fn data(n: usize) -> String {
    let mut g = Gen(12345);
    let x: Vec<String> = (0..n).map(|_| format!("{}", 2.0 * g.next())).collect();
    let y: Vec<String> = (0..n).map(|_| format!("{}", 3.0 * g.next())).collect();
    let b: Vec<String> = (0..n)
        .map(|_| if g.next() > 0.0 { "1" } else { "0" }.to_string())
        .collect();
    let grp: Vec<String> = (0..n).map(|i| format!("{}", i % 3)).collect();
    format!(
        r#"{{"n": {n}, "x": [{}], "y": [{}], "yb": [{}], "g": [{}]}}"#,
        x.join(","),
        y.join(","),
        b.join(","),
        grp.join(",")
    )
}

const DATA_DECLS: &str = "data n; data x; data y; data yb; data g;\n";

#[test]
fn threshold_regression_is_one_plate() {
    let src = format!(
        "{DATA_DECLS}
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n {{
  observe yb[i] ~ Bernoulli(if a + b * x[i] < 0 {{ 0.1 }} else {{ 0.9 }});
}}"
    );
    for n in [3, 12] {
        let m = plated(&src, &data(n), 1);
        let p = &m.plates[0];
        assert_eq!(p.rows, n);
        // `yb` is read only through each lifted branch's log-density, a column of its own.
        assert_eq!(
            p.columns.len(),
            3,
            "x and the log-density of each branch are columns"
        );
        assert!(p.row_latents.is_empty());
        assert_eq!(p.shared.len(), 2);
        // The outer program holds only the priors: the rows' terms are in the body.
        assert_eq!(m.program.if_count(), 0);
        assert_eq!(p.body.if_count(), 1);
    }
}

/// A saturated logistic regression: `p` rounds to exactly 0 or 1 at some points, where the
/// unrolled rows drop the other outcome's infinite logarithm with its zero factor; the plate
/// must give the same finite values (not `0 * -inf`).
#[test]
fn bernoulli_rows_match_where_the_probability_saturates() {
    let src = format!(
        "{DATA_DECLS}
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n {{
  observe yb[i] ~ Bernoulli(sigmoid(60 * (a + b * x[i])));
}}"
    );
    plated(&src, &data(12), 1);
    // Every row's `p` is exactly 1 at `a = 2, b = 0`, and every row observed 1.
    let ones =
        r#"{"n": 4, "x": [1, 2, 3, 4], "y": [0, 0, 0, 0], "yb": [1, 1, 1, 1], "g": [0, 0, 0, 0]}"#;
    let on = compile(&src, ones, PlatePolicy::On);
    let off = compile(&src, ones, PlatePolicy::Off);
    let z = [2.0, 0.0];
    let (a, b) = (
        on.evaluate(Semantics::Crisp, &[], &z),
        off.program.evaluate(Semantics::Crisp, &[], &z),
    );
    assert!(b.is_finite() && a == b, "with plates {a}, unrolled {b}");
}

#[test]
fn row_latents_are_named_and_numbered_as_unrolled() {
    let src = format!(
        "{DATA_DECLS}
let mu = sample Normal(0, 1);
let b = sample Normal(0, 1);
let s = sample HalfNormal(1);
for i in 0..n {{
  let u = sample Normal(mu, 1);
  observe y[i] ~ Normal(u + b * x[i], s);
}}
let after = sample Normal(0, 1);
observe 0.5 ~ Normal(after, 1);"
    );
    let m = plated(&src, &data(7), 1);
    let p = &m.plates[0];
    assert_eq!(p.row_latents.len(), 1);
    assert_eq!(p.row_latents[0].first, 3);
    assert_eq!(p.row_latents[0].stride, 1);
    assert_eq!(m.latents[3].name, "u[0]");
    assert_eq!(m.latents[9].name, "u[6]");
    assert_eq!(m.latents[10].name, "after");
}

#[test]
fn nested_loops_and_repeated_names_follow_unrolling() {
    let src = format!(
        "{DATA_DECLS}
let a = sample Normal(0, 1);
for i in 2..n {{
  for j in 0..2 {{
    let v = sample Normal(a, 1) init(mean = 0.5, std = 0.3);
    observe y[i] ~ Normal(v + j, 1);
  }}
  let v = sample Exponential(1);
  factor -v * x[i - 2];
}}
for i in 0..3 {{
  let v = sample Normal(0, 1);
  observe y[i] ~ Normal(v, 2);
}}"
    );
    let m = plated(&src, &data(6), 2);
    assert_eq!(m.plates[0].row_latents.len(), 3);
    assert_eq!(m.latents[1].name, "v[2][0]");
    assert_eq!(m.latents[2].name, "v[2][1]");
    assert_eq!(m.latents[3].name, "v[2]");
    // The second loop's names are taken: unrolling numbers them.
    assert!(m.latents.iter().any(|l| l.name == "v[2]#2"));
}

#[test]
fn outer_computed_values_and_constrained_latents_are_read() {
    let src = format!(
        "{DATA_DECLS}
let a = sample Normal(0, 1);
let s = sample HalfNormal(1);
let m = 2 * a + exp(a) * s;
let w = [a, s, m];
for i in 0..n {{
  let t = if s < 0.8 {{ m }} else {{ w[1] }};
  observe y[i] ~ Normal(t * x[i] + w[2], s + 0.5);
  factor -abs(a - x[i]);
}}"
    );
    let m = plated(&src, &data(9), 1);
    assert_eq!(
        m.plates[0].shared.len(),
        2,
        "a and s (its unconstrained value)"
    );
}

#[test]
fn the_loop_index_is_a_number_and_an_index() {
    let src = format!(
        "{DATA_DECLS}
let a = sample Normal(0, 1);
let b = sample Normal(0, 1);
for i in 1..n {{
  observe y[i - 1] ~ Normal(a + b * i + x[n - i], 1);
  factor -0.01 * (a - i)^2 + probit((i + 0.5) / n) * b;
  observe x[g[i]] ~ Normal(b, 2);
}}"
    );
    let m = plated(&src, &data(11), 1);
    assert!(m.plates[0].columns.len() >= 3);
}

#[test]
fn ifs_on_data_and_latents() {
    let src = format!(
        "{DATA_DECLS}
let a = sample Normal(0, 1);
let b = sample Normal(0, 1);
for i in 0..n {{
  if a * x[i] > b {{
    observe y[i] ~ Normal(a, 1);
  }} else {{
    observe y[i] ~ Normal(b, 2);
  }}
  // The same branch in every row: folded as in each unrolled row.
  if x[i] > -10 {{
    factor -max(a, x[i]);
  }}
  factor -min(x[i], 0) * a - abs(x[i] - 0.1) * b;
  observe abs(y[i]) + 0.1 ~ Exponential(exp(a));
}}"
    );
    plated(&src, &data(10), 1);
}

#[test]
fn objective_programs_keep_maximize_and_minimize_in_plates() {
    for stmt in ["maximize", "minimize"] {
        let src = format!(
            "{DATA_DECLS}
param theta = 0.5;
let z = sample Normal(theta, 1);
for i in 0..n {{
  {stmt} -(z * x[i] - y[i])^2 + (if z < x[i] {{ 0 }} else {{ 1 }});
}}"
        );
        plated(&src, &data(8), 1);
    }
}

#[test]
fn the_built_in_models_with_plates_on_mean_the_same() {
    let on = CompileOptions {
        plates: PlatePolicy::On,
        ..CompileOptions::default()
    };
    let off = CompileOptions {
        plates: PlatePolicy::Off,
        ..CompileOptions::default()
    };
    for name in dsgd::models::builtin_names() {
        let data = DataSet::default();
        let m_on = dsgd::models::builtin_with_options(name, &data, &on)
            .unwrap()
            .unwrap();
        let m_off = dsgd::models::builtin_with_options(name, &data, &off)
            .unwrap()
            .unwrap();
        same_meaning(&m_on, &m_off);
        let expect = match *name {
            "textmsg" | "xornet" => 1,
            _ => 0,
        };
        assert_eq!(m_on.plates.len(), expect, "{name}: {:?}", m_on.loops);
        // The default policy keeps every built-in unrolled: their loops are short.
        let m_default = dsgd::models::builtin(name).unwrap().unwrap();
        assert!(m_default.plates.is_empty());
        assert_eq!(m_default.program.nodes(), m_off.program.nodes());
    }
}

#[test]
fn each_rule_broken_keeps_the_loop_unrolled_with_its_reason() {
    let head = format!("{DATA_DECLS}let a = sample Normal(0, 1);\n");
    let cases: &[(&str, &str)] = &[
        (
            "let x0 = a; for i in 0..n { x0 = x0 + y[i]; observe y[i] ~ Normal(x0, 1); }",
            "assigns `x0`, declared outside the loop",
        ),
        (
            "let arr = [0, 0, 0]; for i in 0..3 { arr[i] = a * i; } observe 1 ~ Normal(arr[2], 1);",
            "assigns an element of `arr`, declared outside the loop",
        ),
        (
            "let prev = a; for i in 0..n { let u = sample Normal(prev, 1); prev = u; }",
            "assigns `prev`, declared outside the loop",
        ),
        (
            "let w = [a, 2 * a, 3 * a]; for i in 0..n { observe y[i] ~ Normal(w[g[i]], 1); }",
            "picks latents or parameters out of an outer array by row",
        ),
        (
            "for i in 0..n { if x[i] > 0 { observe y[i] ~ Normal(a, 1); } }",
            "a condition that reads only data takes different branches",
        ),
        (
            "for i in 0..n { let u = sample Normal(x[i], 1); observe y[i] ~ Normal(u, 1); }",
            "a latent's distribution reads data",
        ),
        (
            "for i in 0..n { factor -(if x[i] < 0 { a } else { 2 * a }); }",
            "a condition that reads only data takes different branches",
        ),
        (
            "if a > 0 { for i in 0..n { observe y[i] ~ Normal(a, 1); } }",
            "inside an if-statement on a latent or parameter",
        ),
        (
            "fn f(m) { for i in 0..n { observe y[i] ~ Normal(m, 1); } } if a < 1 { f(a); } else { f(2 * a); }",
            "inside an if-statement on a latent or parameter",
        ),
        (
            "for i in 0..n { factor -(a^g[i]); }",
            "an exponent read from data",
        ),
        (
            "for i in 0..n { let u = sample Normal(a, 1) init(mean = x[i]); }",
            "does not compile once for all rows",
        ),
    ];
    for (body, why) in cases {
        let src = format!("{head}{body}");
        let reason = refused(&src, &data(6));
        assert!(reason.contains(why), "{body}: {reason}");
    }
}

/// An error in a loop's body is the same error whether the loop is lowered as a plate or
/// unrolled: the policy does not decide what compiles.
#[test]
fn an_error_in_a_loop_is_the_same_either_way() {
    let cases = [
        // An index read from a latent.
        (
            "observe y[a] ~ Normal(0, 1);",
            4,
            "must be known at compile time",
        ),
        // Data outside a distribution's support.
        (
            "observe y[i] ~ Exponential(exp(a));",
            6,
            "outside the support",
        ),
    ];
    for (body, rows, why) in cases {
        let src = format!("{DATA_DECLS}let a = sample Normal(0, 1); for i in 0..n {{ {body} }}");
        for plates in [PlatePolicy::On, PlatePolicy::Off] {
            let opts = CompileOptions {
                plates,
                ..CompileOptions::default()
            };
            let data = DataSet::from_json_str(&data(rows), "d.json").unwrap();
            let resolver = FsResolver::new(Path::new("."), &opts);
            let e =
                dsgd::lang::compile_with_data("t.dsgd", &src, &resolver, &data, &opts).unwrap_err();
            assert!(e.message.contains(why), "{body} ({plates:?}): {e}");
        }
    }
}

#[test]
fn the_policy_decides_which_qualifying_loops_are_plates() {
    let src = format!(
        "{DATA_DECLS}let a = sample Normal(0, 1);
for i in 0..n {{ observe y[i] ~ Normal(a, 1); }}"
    );
    let small = data(5);
    let m = compile(&src, &small, PlatePolicy::Auto);
    assert!(m.plates.is_empty());
    match &m.loops[0].outcome {
        LoopOutcome::Unrolled { reason, .. } => {
            assert!(
                reason.contains(&format!("fewer than {PLATE_MIN_ROWS}")),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    let m = compile(&src, &small, PlatePolicy::Off);
    assert!(
        matches!(&m.loops[0].outcome, LoopOutcome::Unrolled { reason, .. } if reason.contains("off"))
    );
    let big = data(PLATE_MIN_ROWS);
    let m = compile(&src, &big, PlatePolicy::Auto);
    assert_eq!(m.plates.len(), 1);
    assert_eq!(m.plates[0].rows, PLATE_MIN_ROWS);
}

#[test]
fn a_plate_of_ten_million_rows_is_not_refused_by_the_limits() {
    let src = "let a = sample Normal(0, 1);
for i in 0..10000000 { factor -(a - i / 10000000)^2; }";
    let opts = CompileOptions::default();
    let m = dsgd::lang::compile_source("t.dsgd", src, Path::new("."), &opts)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.plates.len(), 1);
    assert_eq!(m.plates[0].rows, 10_000_000);
    assert!(m.plates[0].body.node_count() < 20);
    let opts = CompileOptions {
        plates: PlatePolicy::Off,
        ..CompileOptions::default()
    };
    let e = dsgd::lang::compile_source("t.dsgd", src, Path::new("."), &opts).unwrap_err();
    assert!(e.message.contains("steps"), "{e}");
}

#[test]
fn a_model_with_plates_is_a_problem_the_estimators_run() {
    let src = format!(
        "{DATA_DECLS}let a = sample Normal(0, 1);
for i in 0..n {{ observe y[i] ~ Normal(a, 1); }}"
    );
    let m = compile(&src, &data(4), PlatePolicy::On);
    let p = dsgd::estimate::Problem::new(&m).expect("a problem");
    assert!(p.has_plates());
}

/// What a body computes row by row at compile time (data-only `abs` folded into columns)
/// counts against the step limit: a body that would fold a hundred columns of a million rows
/// is refused, not compiled for minutes.
#[test]
fn folding_data_row_by_row_counts_against_the_step_limit() {
    let terms: Vec<String> = (0..100)
        .map(|k| format!("abs(i - {})", 500_000 + k))
        .collect();
    let src = format!(
        "let a = sample Normal(0, 1);\nfor i in 0..1000000 {{ factor -a * ({}); }}",
        terms.join(" + ")
    );
    let opts = CompileOptions {
        plates: PlatePolicy::On,
        ..CompileOptions::default()
    };
    let e = dsgd::lang::compile_source("t.dsgd", &src, Path::new("."), &opts).unwrap_err();
    assert!(e.message.contains("steps"), "{e}");
    // With a few such columns it fits.
    let src = "let a = sample Normal(0, 1);\nfor i in 0..1000000 { factor -a * abs(i - 500000); }";
    let m = dsgd::lang::compile_source("t.dsgd", src, Path::new("."), &opts)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.plates.len(), 1);
    assert_eq!(m.plates[0].body.if_count(), 0, "abs of data is a column");
}

/// Relative smoothing in a plate: a guard linear in the shared latents with coefficients from
/// the data gets a factor whose spread is the root-mean-square over rows of its coefficients
/// times the guide's scales, `a + b x[i]` giving mean squares 1 and mean(x^2); the crisp
/// value is unchanged (a positive factor keeps the sign), and a guard reading a row's own
/// latent keeps the absolute eta.
#[test]
fn a_plate_guard_linear_in_shared_latents_is_scaled_by_its_rms_spread() {
    let src = format!(
        "{DATA_DECLS}
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n {{
  observe yb[i] ~ Bernoulli(if a + b * x[i] < 0 {{ 0.1 }} else {{ 0.9 }});
}}"
    );
    let n = 12;
    let m = compile(&src, &data(n), PlatePolicy::On);
    let plate = &m.plates[0];
    let (scaled, factors) = dsgd::ir::scale_plate_guards(plate).expect("one scaled guard");
    assert_eq!(factors.len(), 1);
    let x = &plate.columns[plate
        .columns
        .iter()
        .position(|c| c.iter().any(|&v| v != 0.0 && v != 1.0))
        .expect("the x column")];
    let mean_x2 = x.iter().map(|v| v * v).sum::<f64>() / n as f64;
    let mut f = factors[0].clone();
    f.sort_by_key(|p| p.0);
    assert_eq!(f.len(), 2);
    assert!((f[0].1 - 1.0).abs() < 1e-12, "{f:?}");
    assert!(
        (f[1].1 - mean_x2).abs() < 1e-12 * mean_x2,
        "{f:?} against {mean_x2}"
    );
    let factor = dsgd::ir::plate_guard_factor(&f, |i| [0.5, 2.0][i]);
    assert!((factor - 1.0 / (0.25 + 4.0 * mean_x2).sqrt()).abs() < 1e-12);
    // Crisp values agree at any positive factor.
    let shared = [0.3, -0.7];
    for r in 0..n {
        let inputs: Vec<f64> = plate.columns.iter().map(|c| c[r]).collect();
        let crisp = plate.body.evaluate(Semantics::Crisp, &shared, &inputs);
        let with = scaled
            .body
            .evaluate(Semantics::Crisp, &[shared[0], shared[1], 3.7], &inputs);
        assert_eq!(crisp, with);
    }
    let src = format!(
        "{DATA_DECLS}
let a = sample Normal(0, 5);
for i in 0..n {{
  let u = sample Normal(a, 1);
  observe yb[i] ~ Bernoulli(if u < 0 {{ 0.1 }} else {{ 0.9 }});
}}"
    );
    let m = compile(&src, &data(n), PlatePolicy::On);
    assert!(dsgd::ir::scale_plate_guards(&m.plates[0]).is_none());
}
