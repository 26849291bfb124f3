//! Malformed programs: each error names file, line and column, shows the source line with a
//! caret, and says what was expected. The rendered diagnostics are insta snapshots.

use dsgd::lang::{CompileOptions, Resolver, compile_with};

/// Data files for the tests, in memory so that messages do not depend on the machine.
struct Files;

impl Resolver for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        match path {
            "obs.csv" => Ok("day,count\n0,3\n1,5\n".to_string()),
            "bad.csv" => Ok("day,count\n0,3\n1,five\n".to_string()),
            _ => Err("No such file or directory (os error 2)".to_string()),
        }
    }
}

fn error(src: &str) -> String {
    error_with(src, &CompileOptions::default())
}

fn error_with(src: &str, opts: &CompileOptions) -> String {
    match compile_with("model.dsgd", src, &Files, opts) {
        Ok(_) => panic!("expected an error for:\n{src}"),
        Err(e) => {
            let text = e.to_string();
            // Every diagnostic has a position and a caret line.
            assert!(text.contains("--> model.dsgd:"), "{text}");
            assert!(text.contains('^'), "{text}");
            assert!(text.contains("expected"), "{text}");
            text
        }
    }
}

macro_rules! cases {
    ($($name:ident: $src:expr;)*) => {
        $(
            #[test]
            fn $name() {
                insta::assert_snapshot!(stringify!($name), error($src), $src);
            }
        )*
    };
}

cases! {
    unknown_name: "let z = sample Normal(0, 1);\nfactor z + zz;";
    unknown_function: "let z = sample Normal(0, 1);\nfactor foo(z);";
    unknown_distribution: "let z = sample Gaussian(0, 1);";
    wrong_builtin_arity: "let z = sample Normal(0, 1);\nfactor exp(z, 2);";
    wrong_function_arity: "fn f(a, b) { a + b }\nlet z = sample Normal(0, 1);\nfactor f(z);";
    wrong_distribution_arity: "let z = sample Normal(0);";
    bad_character: "let z = sample Normal(0, 1);\nfactor z @ 2;";
    malformed_number: "let x = 12abc;";
    unclosed_brace: "let z = sample Normal(0, 1);\nif z < 0 {\n  factor 1;\n";
    unclosed_paren: "let z = sample Normal(0, 1);\nfactor (z + 1;";
    missing_semicolon: "let z = sample Normal(0, 1)\nfactor z;";
    missing_expression: "let z = ;";
    unterminated_string: "data y = csv(\"obs.csv, \"count\");";
    unterminated_comment: "let z = 1; /* never closed";
    non_constant_loop_bound: "let z = sample Normal(0, 1);\nfor i in 0..z { factor i; }";
    fractional_loop_bound: "for i in 0..2.5 { factor i; }";
    index_out_of_range: "data xs = [1, 2, 3];\nfactor xs[3];";
    negative_index: "data xs = [1, 2, 3];\nfactor xs[0 - 1];";
    non_constant_index: "data xs = [1, 2, 3];\nlet z = sample Normal(0, 1);\nfactor xs[z];";
    recursion_does_not_terminate: "fn f(x) { f(x + 1) }\nfactor f(0);";
    recursion_on_a_latent: "fn f(x) { if x < 0 { 0 } else { f(x - 1) } }\nlet z = sample Normal(0, 1);\nfactor f(z);";
    missing_csv_file: "data y = csv(\"missing.csv\", \"count\");";
    missing_csv_column: "data y = csv(\"obs.csv\", \"counts\");";
    csv_not_a_number: "data y = csv(\"bad.csv\", \"count\");";
    array_used_as_number: "data xs = [1, 2];\nlet z = sample Normal(0, 1);\nfactor z + xs;";
    number_indexed: "let z = sample Normal(0, 1);\nfactor z[0];";
    array_as_distribution_argument: "data xs = [1, 2];\nlet z = sample Normal(xs, 1);";
    shape_differs_between_branches: "let z = sample Normal(0, 1);\nlet a = [1, 2];\nif z < 0 { a = 3; }\nfactor 1;";
    condition_used_as_number: "let z = sample Normal(0, 1);\nfactor z < 0;";
    number_used_as_condition: "let z = sample Normal(0, 1);\nfactor if z { 1 } else { 0 };";
    chained_comparison: "let z = sample Normal(0, 1);\nfactor if 0 < z < 1 { 1 } else { 0 };";
    if_expression_without_else: "let z = sample Normal(0, 1);\nfactor if z < 0 { 1 };";
    equality_on_latents: "let z = sample Normal(0, 1);\nfactor if z == 0 { 1 } else { 0 };";
    assign_to_const: "const k = 1;\nk = 2;";
    assign_to_unknown: "let z = sample Normal(0, 1);\nw = z;";
    const_not_constant: "let z = sample Normal(0, 1);\nconst k = z * 2;";
    param_not_constant: "let z = sample Normal(0, 1);\nparam t = z;";
    declaration_in_block: "for i in 0..2 { param t = 1; }";
    observe_in_objective_program: "param t = 0;\nlet z = sample Normal(t, 1);\nobserve 1 ~ Normal(z, 1);\nmaximize z;";
    objective_latent_not_normal: "param t = 1;\nlet z = sample Exponential(t);\nmaximize z;";
    family_depends_on_latent: "param t = 1;\nlet a = sample Normal(t, 1);\nlet b = sample Normal(a, 1);\nmaximize b;";
    params_without_objective: "param t = 1;\nlet z = sample Normal(t, 1);";
    maximize_and_minimize: "param t = 1;\nmaximize t;\nminimize t;";
    fixed_with_latent_argument: "let c = sample Normal(0, 1);\nlet u = sample Normal(c, 1) fixed;";
    guide_std_not_positive: "let z = sample Normal(0, 1) init(std = 0);";
    unknown_guide_setting: "let z = sample Normal(0, 1) init(median = 0);";
    distribution_called_as_function: "let z = sample Normal(0, 1);\nfactor Normal(z, 1);";
    function_used_as_value: "fn f(x) { x }\nfactor f;";
    function_without_value: "fn f(x) { observe x ~ Normal(0, 1); }\nlet z = sample Normal(0, 1);\nfactor f(z);";
    redefined_builtin: "fn exp(x) { x }";
    duplicate_const: "const a = 1;\ndata a = [1];";
    string_as_value: "factor \"five\";";
    arrays_nest_too_deep: "let a = 1;\nfor i in 0..1000 { a = [a]; }";
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let src = format!("factor {}1{};", "(".repeat(100_000), ")".repeat(100_000));
    let text = error(&src);
    assert!(text.contains("nests deeper than"), "{text}");
    let blocks = format!(
        "{}factor 1;{}",
        "if 1 < 2 { ".repeat(5000),
        "}".repeat(5000)
    );
    assert!(error(&blocks).contains("nests deeper than"));
    let unary = format!("factor {}1;", "-".repeat(100_000));
    assert!(error(&unary).contains("nests deeper than"));
}

#[test]
fn too_large_program_is_refused() {
    let opts = CompileOptions {
        node_limit: 1000,
        ..CompileOptions::default()
    };
    let src = "let z = sample Normal(0, 1);\nlet s = 0;\nfor i in 0..100000 { s = s + exp(z * i); }\nfactor s;";
    let text = error_with(src, &opts);
    insta::assert_snapshot!("too_large_program", text, src);
}

#[test]
fn too_much_work_is_refused() {
    let opts = CompileOptions {
        step_limit: 100_000,
        ..CompileOptions::default()
    };
    let src = "let s = 0;\nfor i in 0..1000000000000 { s = s + 1; }\nfactor s;";
    let text = error_with(src, &opts);
    assert!(text.contains("more than 100000 steps"), "{text}");
    // An array comprehension is bounded the same way.
    let text = error_with("data xs = [i for i in 0..1000000000000];", &opts);
    assert!(text.contains("steps"), "{text}");
}
