//! Refused models and bad run-time data: each refused construct of a model users write (a
//! discrete latent, impossible constants, values outside a support, overflowing literals,
//! non-finite data, data without a value or out of shape) has a snapshot of its message, and
//! each bad data file gives one `error:` naming the problem.

use dsgd::lang::{CompileOptions, DataSet, Resolver, compile_with_data};

/// Data files for the tests, in memory so that messages do not depend on the machine.
struct Files;

impl Resolver for Files {
    fn read(&self, path: &str) -> Result<String, String> {
        match path {
            "nan.csv" => Ok("day,count\n0,3\n1,NaN\n".to_string()),
            "inf.csv" => Ok("day,count\n0,inf\n".to_string()),
            _ => Err("No such file or directory (os error 2)".to_string()),
        }
    }
}

fn error_with_data(src: &str, data: &DataSet) -> String {
    match compile_with_data("model.dsgd", src, &Files, data, &CompileOptions::default()) {
        Ok(_) => panic!("expected an error for:\n{src}"),
        Err(e) => {
            let text = e.to_string();
            assert_eq!(text.matches("error:").count(), 1, "{text}");
            text
        }
    }
}

fn error(src: &str) -> String {
    let text = error_with_data(src, &DataSet::default());
    assert!(text.contains("--> model.dsgd:"), "{text}");
    assert!(text.contains('^'), "{text}");
    text
}

macro_rules! cases {
    ($($name:ident: $src:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let src = $src;
                insta::assert_snapshot!(stringify!($name), error(src), src);
            }
        )*
    };
}

cases! {
    discrete_latent: "let k = sample Poisson(3);";
    discrete_latent_bernoulli: "let b = sample Bernoulli(0.5);";
    negative_scale: "let z = sample Normal(0, 1);\nobserve 1 ~ Normal(z, -1);";
    zero_scale: "let z = sample Normal(0, 1);\nobserve 1 ~ Normal(z, 0);";
    empty_uniform: "let z = sample Uniform(1, 0);";
    bernoulli_outside_support: "let z = sample Normal(0, 1);\nobserve 2 ~ Bernoulli(0.5);";
    poisson_negative_count: "let z = sample Normal(0, 1);\nobserve -1 ~ Poisson(3);";
    poisson_fractional_count: "let z = sample Normal(0, 1);\nobserve 0.5 ~ Poisson(3);";
    probability_above_one: "let z = sample Normal(0, 1);\nobserve 1 ~ Bernoulli(1.5);";
    beta_value_at_the_edge: "let z = sample Normal(0, 1);\nobserve 1 ~ Beta(2, z);";
    gamma_zero_shape: "let r = sample Gamma(0, 1);";
    student_t_zero_nu: "let t = sample StudentT(0, 0, 1);";
    overflowing_literal: "let z = sample Normal(0, 1e999999);";
    uniform_latent_bounds_not_constant: "let a = sample Normal(0, 1);\nlet b = sample Uniform(a, 2);";
    init_mean_outside_support: "let s = sample HalfNormal(1) init(mean = -1);";
    csv_nan: "data c = csv(\"nan.csv\", \"count\");\nlet z = sample Normal(0, 1);";
    csv_inf: "data c = csv(\"inf.csv\", \"count\");\nlet z = sample Normal(0, 1);";
    data_without_value: "data y;\nlet z = sample Normal(0, 1);\nobserve y ~ Normal(z, 1);";
}

fn data(json: &str) -> DataSet {
    DataSet::from_json_str(json, "data.json").unwrap()
}

#[test]
fn data_index_out_of_range_names_the_data_and_the_index() {
    let src = "data y;\nlet z = sample Normal(0, 1);\nobserve y[3] ~ Normal(z, 1);";
    let text = error_with_data(src, &data(r#"{"y": [1, 2]}"#));
    insta::assert_snapshot!("data_index_out_of_range", text, src);
}

#[test]
fn data_of_the_wrong_shape_is_refused_where_it_is_used() {
    let src = "data y;\nlet z = sample Normal(0, 1);\nobserve y[0] ~ Normal(z, 1);";
    let text = error_with_data(src, &data(r#"{"y": 2}"#));
    insta::assert_snapshot!("data_not_an_array", text, src);
}

#[test]
fn data_for_an_undeclared_name_is_refused() {
    let src = "data y;\nlet z = sample Normal(0, 1);\nobserve y ~ Normal(z, 1);";
    let text = error_with_data(src, &data(r#"{"yy": 2}"#));
    insta::assert_snapshot!("data_unknown_name", text, src);
}

#[test]
fn bad_data_files_give_one_error_naming_the_problem() {
    let cases = [
        (r#"{"y": [1, "two"]}"#, "`y[1]` is a string"),
        (r#"{"y": [1, NaN]}"#, "data.json:1:11: NaN"),
        (
            r#"{"y": [1, -Infinity]}"#,
            "NaN and infinities are not data",
        ),
        (r#"{"y": [[1, 2], [3, null]]}"#, "`y[1][1]` is null"),
        (r#"{"y": 1e400}"#, "data.json:1:"),
        (r#"[1, 2]"#, "must be a JSON object"),
        (r#"{"y": [1, 2"#, "data.json:1:"),
    ];
    for (json, want) in cases {
        let e = DataSet::from_json_str(json, "data.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{json}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn a_data_file_binds_what_the_model_would_otherwise_write() {
    let with_file = compile_with_data(
        "model.dsgd",
        "data y;\nlet z = sample Normal(0, 1);\nfor i in 0..len(y) { observe y[i] ~ Normal(z, 1); }",
        &Files,
        &data(r#"{"y": [0.5, 1.5, 2]}"#),
        &CompileOptions::default(),
    )
    .unwrap();
    // A value written in the model is a default that the data file replaces.
    let replaced = compile_with_data(
        "model.dsgd",
        "data y = [9, 9];\nlet z = sample Normal(0, 1);\nfor i in 0..len(y) { observe y[i] ~ Normal(z, 1); }",
        &Files,
        &data(r#"{"y": [0.5, 1.5, 2]}"#),
        &CompileOptions::default(),
    )
    .unwrap();
    let inline = compile_with_data(
        "model.dsgd",
        "data y = [0.5, 1.5, 2];\nlet z = sample Normal(0, 1);\nfor i in 0..len(y) { observe y[i] ~ Normal(z, 1); }",
        &Files,
        &DataSet::default(),
        &CompileOptions::default(),
    )
    .unwrap();
    for z in [-1.0, 0.3, 2.0] {
        let v = |m: &dsgd::ir::Model| m.program.evaluate(dsgd::ir::Semantics::Crisp, &[], &[z]);
        assert_eq!(v(&with_file), v(&inline));
        assert_eq!(v(&replaced), v(&inline));
    }
    // The numpy route: a flat row-major buffer with a shape.
    let mut set = DataSet::new("dict");
    set.insert_array("y", &[3], &[0.5, 1.5, 2.0]).unwrap();
    let from_array = compile_with_data(
        "model.dsgd",
        "data y;\nlet z = sample Normal(0, 1);\nfor i in 0..len(y) { observe y[i] ~ Normal(z, 1); }",
        &Files,
        &set,
        &CompileOptions::default(),
    )
    .unwrap();
    assert_eq!(
        from_array
            .program
            .evaluate(dsgd::ir::Semantics::Crisp, &[], &[0.3]),
        inline
            .program
            .evaluate(dsgd::ir::Semantics::Crisp, &[], &[0.3])
    );
}
