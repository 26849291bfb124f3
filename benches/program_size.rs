//! From source to the first iteration, over program sizes 10^3 to 10^6 statements: everything
//! before the first step must grow at most like n log n in the program's size. Prints the
//! seconds of each stage (compile; compile + first DSGD iteration) and the ratio per tenfold
//! size (10 means linear). `cargo bench --bench program_size [-- MAX_EXPONENT]`.

use std::path::Path;
use std::time::Instant;

use dsgd::experiment::run::{RunConfig, run};
use dsgd::lang::{CompileOptions, compile_source};

/// `n` statements of two shapes: a chain of `a = sin(a) + 0.5;` and sequential if-statements
/// `a = if z < a { a + 1 } else { a - 1 };`.
fn program(n: usize, shape: &str) -> String {
    let line = match shape {
        "sin" => "a = sin(a) + 0.5;\n",
        _ => "a = if z < a { a + 1 } else { a - 1 };\n",
    };
    format!(
        "let z = sample Normal(0, 1);\nlet a = z;\n{}observe a ~ Normal(0, 1);\n",
        line.repeat(n)
    )
}

fn main() {
    let max_exp: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(6);
    let opts = CompileOptions {
        node_limit: usize::MAX,
        step_limit: usize::MAX,
        ..CompileOptions::default()
    };
    println!("shape  statements  compile (s)  to first iteration (s)  ratio per 10x");
    for shape in ["sin", "if"] {
        let mut last: Option<f64> = None;
        for e in 3..=max_exp {
            let n = 10usize.pow(e);
            let src = program(n, shape);
            let t0 = Instant::now();
            let model = match compile_source("size.dsgd", &src, Path::new("."), &opts) {
                Ok(m) => m,
                Err(err) => {
                    println!("{shape:<6} {n:>10}  {err}");
                    break;
                }
            };
            let compile = t0.elapsed().as_secs_f64();
            let config = RunConfig {
                iterations: 1,
                log_every: 1,
                log_samples: 2,
                threads: Some(1),
                ..RunConfig::default()
            };
            let first = run(&model, &config, &mut []).map(|_| t0.elapsed().as_secs_f64());
            let total = first.unwrap_or(f64::NAN);
            let ratio = last.map_or("-".to_string(), |l| format!("{:.1}", total / l));
            println!("{shape:<6} {n:>10}  {compile:>11.3}  {total:>22.3}  {ratio:>13}");
            last = Some(total);
        }
    }
}
