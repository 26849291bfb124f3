//! The compiler never panics or hangs: random bytes, random token streams, and random
//! nestings go in, and an `Ok` or a rendered error comes out. Run longer with
//! `PROPTEST_CASES=100000 cargo test --release --test lang_fuzz`.

use dsgd::lang::{CompileOptions, Resolver, compile_with};
use proptest::prelude::*;

struct OneFile;

impl Resolver for OneFile {
    fn read(&self, path: &str) -> Result<String, String> {
        if path == "d.csv" {
            Ok("a,b\n1,2\n3,x\n".to_string())
        } else {
            Err("not found".to_string())
        }
    }
}

/// Small limits keep every case fast; the limits themselves are what is being exercised.
fn opts() -> CompileOptions {
    CompileOptions {
        node_limit: 20_000,
        step_limit: 200_000,
        max_call_depth: 200,
        ..CompileOptions::default()
    }
}

fn compile_anything(src: &str) {
    match compile_with("fuzz.dsgd", src, &OneFile, &opts()) {
        Ok(m) => {
            // A compiled model is internally consistent.
            assert_eq!(m.latents.len(), m.program.latent_count());
            assert_eq!(m.params.len(), m.program.param_count());
        }
        Err(e) => {
            let text = e.to_string();
            assert!(text.starts_with("error: "), "{text}");
        }
    }
}

const VOCAB: &[&str] = &[
    "let",
    "const",
    "data",
    "param",
    "fn",
    "for",
    "in",
    "if",
    "else",
    "sample",
    "observe",
    "factor",
    "maximize",
    "minimize",
    "fixed",
    "init",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    ";",
    "=",
    "~",
    "+",
    "-",
    "*",
    "/",
    "^",
    "<",
    "<=",
    ">",
    ">=",
    "==",
    "!=",
    "&&",
    "||",
    "!",
    "..",
    "0",
    "1",
    "2.5",
    "1e3",
    "z",
    "x",
    "i",
    "f",
    "Normal",
    "Flat",
    "Poisson",
    "exp",
    "abs",
    "sum",
    "len",
    "csv",
    "\"d.csv\"",
    "\"a\"",
    "\"b\"",
    "mean",
    "std",
    "rho",
    "// c\n",
    "/*",
    "*/",
];

/// Fragments that form valid statements, so that random sequences reach the lowering.
const FRAGMENTS: &[&str] = &[
    "let z = sample Normal(0, 1);",
    "let x = 2;",
    "x = x + z;",
    "z = z * x;",
    "observe 1 ~ Normal(z, 1);",
    "factor z;",
    "factor x;",
    "if z < 0 { x = 1; } else { x = z; }",
    "if x > 1 { factor 1; }",
    "for i in 0..3 { x = x + i * z; }",
    "fn f(a) { if a > 3 { a } else { f(a + 1) } }",
    "factor f(x);",
    "fn g(a) { g(a) }",
    "factor g(1);",
    "let a = [z, x, 1];",
    "a[1] = z;",
    "a = [a];",
    "const k = a;",
    "if z < x { a = [a, z]; } else { a = [a, x]; }",
    "for i in 0..70 { a = [a, a]; }",
    "factor a[2] + len(a);",
    "factor sum(a);",
    "data d = csv(\"d.csv\", \"a\");",
    "data e = csv(\"d.csv\", \"b\");",
    "param t = 1;",
    "let w = sample Normal(t, 1);",
    "maximize w;",
    "minimize t;",
    "let u = sample Normal(0, 1) fixed;",
    "let c = sample Flat() init(mean = 0, rho = 1);",
    "for i in 0..100000 { x = x + exp(z * i); }",
    "let b = if z >= x && x < 2 || !(z < 1) { abs(z) } else { max(z, x) };",
];

fn token_stream() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(VOCAB), 0..60).prop_map(|t| t.join(" "))
}

fn fragment_stream() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..12).prop_map(|t| t.join("\n"))
}

proptest! {
    #[test]
    fn random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        compile_anything(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_tokens(src in token_stream()) {
        compile_anything(&src);
    }

    #[test]
    fn random_statements(src in fragment_stream()) {
        compile_anything(&src);
    }

    #[test]
    fn random_statements_with_mutations(src in fragment_stream(), cut in any::<prop::sample::Index>(), junk in prop::sample::select(VOCAB)) {
        // Insert one token at a random place to reach error paths deep inside valid programs.
        let at = cut.index(src.len() + 1);
        let at = (0..=at).rev().find(|&i| src.is_char_boundary(i)).unwrap_or(0);
        let mutated = format!("{} {} {}", &src[..at], junk, &src[at..]);
        compile_anything(&mutated);
    }

    #[test]
    fn deep_nesting(depth in 1usize..3000, kind in 0usize..5) {
        let (open, close) = [("(", ")"), ("[", "]"), ("if 1 < 2 { ", " } else { 0 }"), ("-", ""), ("f(", ")")][kind];
        let src = format!("fn f(a) {{ a }}\nfactor {}1{};", open.repeat(depth), close.repeat(depth));
        compile_anything(&src);
    }
}
