//! From source to the first iteration, over program sizes 10^3 to 10^6 statements: everything
//! before the first step must grow at most like n log n in the program's size. Prints the
//! seconds of each stage (compile; compile + first DSGD iteration), the process's CPU seconds
//! to the first iteration (on Linux; wall time on a shared machine measures its load) and
//! the ratio of those per tenfold size (10 means linear). `cargo bench --bench program_size
//! [-- MAX_EXPONENT]`.

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

/// CPU seconds (user + system, all threads) this process has used so far, from
/// `/proc/self/stat` (at 100 ticks a second); `None` where there is no such file.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
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
    println!(
        "shape  statements  compile (s)  to first iteration (s)  cpu (s)  ratio per 10x (cpu)"
    );
    for shape in ["sin", "if"] {
        let mut last: Option<f64> = None;
        for e in 3..=max_exp {
            let n = 10usize.pow(e);
            let src = program(n, shape);
            let (t0, c0) = (Instant::now(), cpu_seconds());
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
            let cpu = match (c0, cpu_seconds()) {
                (Some(a), Some(b)) => b - a,
                _ => total,
            };
            let ratio = last
                .filter(|&l| l > 0.0)
                .map_or("-".to_string(), |l| format!("{:.1}", cpu / l));
            println!("{shape:<6} {n:>10}  {compile:>11.3}  {total:>22.3}  {cpu:>7.2}  {ratio:>19}");
            last = Some(cpu);
        }
    }
}
