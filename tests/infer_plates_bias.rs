//! The bias warnings of a model with plates are those of its unrolled twin: a plate body's
//! if-statement is judged with its data columns read as data, as each unrolled row reads its
//! numbers. For Reparam, Score, RLOO and LYY18, `dsgd run`'s warning (the static analysis of
//! the estimator's problem), `dsgd advise`'s verdict and whether LYY18 applies agree between
//! the two, on guards that read only data, data and a parameter, data and latents (affine at
//! every row, or not), and on continuous if-statements; and so do the analysis's verdicts on
//! each if-statement (whether it reads a latent, a parameter, is affine, is continuous).

use dsgd::EstimatorKind;
use dsgd::estimate::Problem;
use dsgd::experiment::advise::{AdviseConfig, advise};
use dsgd::experiment::bias::estimator_bias;
use dsgd::experiment::run::RunConfig;
use dsgd::ir::Model;
use dsgd::lang::{CompileOptions, PlatePolicy};

const KINDS: [EstimatorKind; 4] = [
    EstimatorKind::Reparam,
    EstimatorKind::Score,
    EstimatorKind::Rloo,
    EstimatorKind::Lyy18,
];

/// An objective over five rows of data `x`, with latents `a`, `b` (`a`'s mean a parameter
/// `t`), maximising the loop body's `term` summed over the rows.
fn source(term: &str) -> String {
    format!(
        "const x = [0.3, -1.2, 0.8, 2.1, -0.4];\nparam t = 0.2;\n\
         let a = sample Normal(t, 1);\nlet b = sample Normal(0, 1);\n\
         maximize -t * t;\n\
         for i in 0..5 {{\n  maximize {term};\n}}\n"
    )
}

fn compile(src: &str, plates: PlatePolicy) -> Model {
    dsgd::lang::compile_source(
        "twin.dsgd",
        src,
        std::path::Path::new("."),
        &CompileOptions {
            plates,
            ..CompileOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A warning with its count of if-statements taken out: a plate's body counts its
/// if-statement once, the unrolled loop once per row; the rest (which estimator, why, where
/// the first is) must agree.
fn without_count(warning: Option<String>) -> Option<String> {
    warning.map(|w| {
        let (before, after) = w
            .split_once(" if-statement(s)")
            .expect("a warning counts its if-statements");
        let head = before.trim_end_matches(|c: char| c.is_ascii_digit());
        format!("{head}N if-statement(s){after}")
    })
}

/// The verdicts of the analysis on each if-statement, without repeats (the unrolled loop
/// has one if-statement per row, the plate one per body): whether it depends on a latent,
/// on a parameter directly, is affine in the latents, is continuous.
fn guard_verdicts(problem: &Problem) -> Vec<String> {
    let mut v: Vec<String> = problem
        .analysis()
        .guards
        .iter()
        .map(|g| {
            format!(
                "unsafe {:?} param {} affine {:?} continuous {}",
                g.unsafe_reason,
                g.depends_on_param,
                g.affine.as_ref().map(|_| ()),
                g.continuous
            )
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// What each of the four estimators is told about `model`: the run's static warning,
/// whether it can be built (LYY18 refuses a jump that is not affine), and advise's verdict.
fn verdicts(model: &Model) -> Vec<(Option<String>, bool, Option<bool>)> {
    let problem = Problem::new(model).expect("a problem");
    let advice = advise(
        model,
        &AdviseConfig {
            batches: 2,
            ..AdviseConfig::default()
        },
        &|_| "twin.dsgd".to_string(),
    )
    .expect("advises");
    KINDS
        .iter()
        .map(|&kind| {
            let warning = estimator_bias(kind, problem.analysis(), problem.program());
            let builds = dsgd::estimate::build(kind, &problem, 0.1, None).is_ok();
            let row = advice
                .estimators
                .iter()
                .find(|e| e.estimator == kind.name())
                .expect("a row per estimator");
            (without_count(warning), builds, row.biased)
        })
        .collect()
}

/// The plated model and its unrolled twin give the same verdicts; returns them.
fn same_as_unrolled(body: &str) -> Vec<(Option<String>, bool, Option<bool>)> {
    let src = source(body);
    let plated = compile(&src, PlatePolicy::On);
    let unrolled = compile(&src, PlatePolicy::Off);
    assert_eq!(plated.plates.len(), 1, "{body}: the loop is a plate");
    assert!(unrolled.plates.is_empty());
    let guards = |m: &Model| guard_verdicts(&Problem::new(m).expect("a problem"));
    assert_eq!(guards(&plated), guards(&unrolled), "{body}: the analyses");
    let (p, u) = (verdicts(&plated), verdicts(&unrolled));
    assert_eq!(p, u, "{body}: plated against unrolled");
    p
}

#[test]
fn a_condition_on_data_alone_is_unrolled() {
    // Not a plate (its rows take different branches): nothing to judge in a body.
    let src = source("if x[i] > 0 { -a * a } else { 0 }");
    assert!(compile(&src, PlatePolicy::On).plates.is_empty());
}

#[test]
fn a_guard_on_data_and_a_parameter_biases_the_crisp_estimators() {
    let v = same_as_unrolled("if x[i] > t { -a * a } else { 0 }");
    for (kind, (warning, _, biased)) in KINDS.iter().zip(&v) {
        if *kind == EstimatorKind::Lyy18 {
            // LYY18 is refused: the guard depends on a parameter directly.
            assert!(!v[3].1);
        } else {
            let w = warning
                .as_deref()
                .unwrap_or_else(|| panic!("{kind:?} warns"));
            assert!(w.contains("depend on a parameter directly"), "{w}");
            assert_eq!(*biased, Some(true), "{kind:?}");
        }
    }
}

#[test]
fn an_affine_guard_on_data_and_latents_biases_reparam_alone() {
    let v = same_as_unrolled("if a + b * x[i] < 0 { -1 } else { 0 }");
    let w = v[0].0.as_deref().expect("reparam warns");
    assert!(w.contains("depend on a latent"), "{w}");
    for (kind, (warning, builds, _)) in KINDS.iter().zip(&v).skip(1) {
        assert_eq!(*warning, None, "{kind:?}");
        // LYY18 applies: affine in the latents at every row.
        assert!(builds, "{kind:?}");
    }
}

#[test]
fn a_non_affine_guard_refuses_lyy18_in_both() {
    let v = same_as_unrolled("if a * b * x[i] < 0.5 { -1 } else { 0 }");
    assert!(v[0].0.is_some());
    assert!(!v[3].1, "LYY18 refuses a guard that is not affine");
}

#[test]
fn continuous_if_statements_bias_nothing() {
    for body in [
        "-abs(a - x[i])",
        "-max(a * x[i], b)",
        "if a < x[i] { a - x[i] } else { 0 }",
    ] {
        for (kind, (warning, builds, biased)) in KINDS.iter().zip(same_as_unrolled(body)) {
            assert_eq!(warning, None, "{body} {kind:?}");
            assert!(builds, "{body} {kind:?}");
            assert_eq!(biased, Some(false), "{body} {kind:?}");
        }
    }
}

#[test]
fn a_run_prints_the_analysis_warning() {
    // `dsgd run`'s report carries the same warning as the static analysis above.
    let model = compile(
        &source("if x[i] > 0 { if a < 0.1 { -1 } else { 0 } } else { 0 }"),
        PlatePolicy::On,
    );
    for (kind, want) in [
        (EstimatorKind::Reparam, true),
        (EstimatorKind::Score, false),
    ] {
        let r = dsgd::fit(
            &model,
            &RunConfig {
                estimator: kind,
                iterations: 20,
                log_every: 10,
                threads: Some(1),
                ..RunConfig::default()
            },
        )
        .expect("runs");
        assert_eq!(
            r.bias_warning.is_some(),
            want,
            "{kind:?}: {:?}",
            r.bias_warning
        );
    }
}
