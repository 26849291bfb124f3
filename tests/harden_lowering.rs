//! In-suite fuzzing of the lowering: random well-formed programs (so that cases get past the
//! parser, which `lang_fuzz.rs` fuzzes) are lowered, evaluated and traced; nothing may panic
//! or hang, and every error has a location. Run longer with `PROPTEST_CASES=100000 cargo
//! test --release --test harden_lowering`, or for a time budget with the ignored test
//! (`DSGD_FUZZ_SECONDS=600 cargo test --release --test harden_lowering -- --ignored
//! --nocapture`), which prints how many cases ran.

mod fuzz_budget;

use std::path::Path;

use dsgd::experiment::culprit::describe;
use dsgd::ir::blame::find_culprit;
use dsgd::ir::{Arity, Function, Semantics};
use dsgd::lang::{CompileOptions, compile_source};
use fuzz_budget::fuzz_for_a_time_budget;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn opts() -> CompileOptions {
    CompileOptions {
        node_limit: 20_000,
        step_limit: 200_000,
        max_call_depth: 100,
        ..CompileOptions::default()
    }
}

/// Every built-in function of one argument (the IR's table of them).
fn one_argument_functions() -> Vec<&'static str> {
    Function::all()
        .filter(|f| f.arity == Arity::One)
        .map(|f| f.name)
        .collect()
}

/// A random expression over the latents `z`, `w`, the array `xs`, constants and the loop
/// variable `i` (when in a loop), up to `depth` deep.
fn expr(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("z".to_string()),
        Just("w".to_string()),
        Just("i".to_string()),
        Just("xs[0]".to_string()),
        Just("xs[i]".to_string()),
        Just("len(xs)".to_string()),
        (-3i32..10).prop_map(|c| c.to_string()),
        Just("0.5".to_string()),
        Just("1e308".to_string()),
        Just("0".to_string()),
    ];
    leaf.prop_recursive(depth, 64, 3, |inner| {
        prop_oneof![
            (inner.clone(), "[-+*/^]", inner.clone())
                .prop_map(|(a, o, b)| format!("({a} {o} {b})")),
            (
                prop::sample::select(one_argument_functions()),
                inner.clone()
            )
                .prop_map(|(f, a)| format!("{f}({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("max({a}, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("pow({a}, {b})")),
            (
                inner.clone(),
                "[<>]=?",
                inner.clone(),
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(a, c, b, t, e)| format!("(if {a} {c} {b} {{ {t} }} else {{ {e} }})")),
            inner.clone().prop_map(|a| format!("-{a}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("[{a}, {b}][1]")),
            inner
                .clone()
                .prop_map(|a| format!("sum([{a} for j in 0..3])")),
            inner.prop_map(|a| format!("mean([{a}, 1])")),
        ]
    })
    .boxed()
}

/// A random statement (possibly a loop or a branch holding others).
fn stmt() -> BoxedStrategy<String> {
    let simple = prop_oneof![
        expr(4).prop_map(|e| format!("observe {e} ~ Normal(0, 1);")),
        expr(4).prop_map(|e| format!("factor {e};")),
        expr(4).prop_map(|e| format!("a = {e};")),
        (expr(3), expr(3)).prop_map(|(m, s)| format!("observe 1 ~ Normal({m}, {s});")),
        expr(3).prop_map(|e| format!("let q = sample Normal({e}, 1);")),
        expr(3).prop_map(|e| format!("observe 1 ~ Poisson(exp({e}));")),
    ];
    simple
        .prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                (0i64..4, prop::collection::vec(inner.clone(), 1..3))
                    .prop_map(|(n, b)| format!("for i in 0..{n} {{ {} }}", b.concat())),
                (expr(3), prop::collection::vec(inner.clone(), 1..3), inner).prop_map(
                    |(c, t, e)| format!("if {c} < 1 {{ {} }} else {{ {e} }}", t.concat())
                ),
            ]
        })
        .boxed()
}

fn program() -> impl Strategy<Value = String> {
    prop::collection::vec(stmt(), 1..5).prop_map(|body| {
        format!(
            "data xs = [1, 2, 3, 4];\nlet i = 1;\nlet a = 0;\n\
             let z = sample Normal(0, 1);\nlet w = sample Normal(1, 2) init(mean = 0.5, std = 1);\n{}\nobserve a ~ Normal(0, 10);",
            body.join("\n")
        )
    })
}

/// A random well-formed program through the lowering: a model or an error with a location,
/// never a panic. A model's program is also evaluated, and traced for a non-finite value or
/// gradient ([`dsgd::ir::blame`]) at a few points, smoothed and crisp: whatever it finds is
/// described, naming the statement's place in the source.
fn check_lowering_case(src: &str) -> Result<(), TestCaseError> {
    match compile_source("fuzz.dsgd", src, Path::new("."), &opts()) {
        Ok(m) => {
            prop_assert_eq!(m.latents.len(), m.program.latent_count());
            let _ = dsgd::estimate::Problem::new(&m);
            let params: Vec<f64> = m.params.iter().map(|p| p.init).collect();
            for (x, semantics) in [
                (0.0, Semantics::Crisp),
                (-1.5, Semantics::Crisp),
                (0.7, Semantics::Smoothed { eta: 0.1 }),
                (1e6, Semantics::Crisp),
            ] {
                let latents = vec![x; m.program.latent_count()];
                let Some(c) = find_culprit(&m.program, semantics, &params, &latents) else {
                    continue;
                };
                let text = describe(&m.program, &c);
                if c.term.is_some() {
                    prop_assert!(text.contains(" at fuzz.dsgd:"), "{}", text);
                }
                prop_assert!(text.len() < 1_000, "{}", text);
            }
        }
        Err(e) => {
            let text = e.to_string();
            prop_assert!(text.starts_with("error: "), "{}", text);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random well-formed programs reach the lowering: every outcome is a model or an error
    /// with a location, never a panic.
    #[test]
    fn lowering_never_panics(src in program()) {
        check_lowering_case(&src)?;
    }
}

#[test]
#[ignore = "runs for DSGD_FUZZ_SECONDS (default 600)"]
fn lowering_for_a_time_budget() {
    fuzz_for_a_time_budget("lowering", program(), |src| check_lowering_case(&src));
}
