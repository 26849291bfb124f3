//! Size and work limits of the compiler, and linear growth of the unrolled program.

use std::path::Path;

use dsgd::lang::{CompileOptions, compile_source};

fn nodes(src: &str) -> usize {
    compile_source("t.dsgd", src, Path::new("."), &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .program
        .node_count()
}

fn chain(n: usize) -> String {
    format!(
        "let x = sample Normal(0, 1);\nfor i in 0..{n} {{\n  let z = sample Normal(x, 1);\n  \
         if z > x {{ observe 1 ~ Normal(z, 2); }}\n  x = x + abs(z) * 0.5;\n}}"
    )
}

#[test]
fn unrolled_size_is_linear_in_the_loop_bound() {
    // Each iteration adds the same nodes (the first one also adds shared constants), so
    // doubling the bound doubles the growth.
    let (n1, n2, n4) = (nodes(&chain(100)), nodes(&chain(200)), nodes(&chain(400)));
    assert!(n2 - n1 >= 100 * 10, "{n1} {n2}");
    assert_eq!(n4 - n2, 2 * (n2 - n1), "{n1} {n2} {n4}");
}

#[test]
fn huge_unrolling_is_refused_early() {
    // 10^6 iterations of non-trivial work (within the step limit): stopped by the node limit
    // after a few thousand.
    let opts = CompileOptions {
        node_limit: 5_000,
        ..CompileOptions::default()
    };
    let src = "let z = sample Normal(0, 1);\nlet s = 0;\nfor i in 0..1000 { for j in 0..1000 { s = s + sin(z * i + j); } }\nfactor s;";
    let err = compile_source("t.dsgd", src, Path::new("."), &opts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than 5000 nodes"), "{err}");
    assert!(err.contains("t.dsgd:3:"), "{err}");
}

#[test]
fn exponential_recursion_is_refused_by_the_step_limit() {
    // A doubly recursive function on constants does no IR work but 2^40 calls.
    let opts = CompileOptions {
        step_limit: 200_000,
        ..CompileOptions::default()
    };
    let src = "fn f(n) { if n < 1 { 1 } else { f(n - 1) + f(n - 1) } }\nfactor f(40);";
    let err = compile_source("t.dsgd", src, Path::new("."), &opts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than 200000 steps"), "{err}");
}

#[test]
fn default_limits_accept_large_models() {
    let n = nodes(&chain(5000));
    assert!(n > 50_000, "{n}");
}

#[test]
fn arrays_that_share_elements_cannot_grow_exponentially() {
    // `[a, a]` shares `a`, so 60 doublings take little memory but stand for 2^60 numbers;
    // comparing or merging such a value would never end, so it is refused when made.
    let src = "let a = [1];\nfor i in 0..60 { a = [a, a]; }\nconst b = a;";
    let err = compile_source("t.dsgd", src, Path::new("."), &CompileOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than the step limit"), "{err}");
    // Deep nesting is refused too (it would overflow the stack when dropped or compared).
    let src = "let a = 1;\nfor i in 0..100000 { a = [a]; }";
    let err = compile_source("t.dsgd", src, Path::new("."), &CompileOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("arrays nest deeper than 64 levels"), "{err}");
}

/// Catches a check that walks an array element by element where the array is shared many
/// times over: `[e, e]` nested 59 deep holds 2^59 arrays, declared `const` at once.
#[test]
fn a_constant_of_shared_nested_arrays_is_checked_at_once() {
    let mut src = String::from("let e0 = [];\n");
    for i in 1..60 {
        src.push_str(&format!("let e{i} = [e{}, e{}];\n", i - 1, i - 1));
    }
    src.push_str("const c = e59;\nlet z = sample Normal(len(c), 1);\nlet w = if z < 0 { e59 } else { e59 };\nconst d = w;");
    assert!(nodes(&src) > 0);
}
