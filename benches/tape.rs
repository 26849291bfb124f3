//! Speed of the compiled tape: forward + reverse sweep (`Tape::gradient`; smoothed and crisp)
//! and forward only, on a thermostat-like
//! program of about 1,000 nodes with 80 if-statements, for batches of 16 and 1,000 samples,
//! reported as samples per second; and the time to compile programs shaped against the
//! fusion of addition chains (a node read by `n` additions; a chain of `2n` additions with a
//! term in every other link), over sizes, to show it grows as n log n at worst.
//!
//! Not here: estimator-level costs (sampling, guides), which later issues measure.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dsgd::eval::{BatchGradient, Tape};
use dsgd::ir::{Builder, Program, Semantics};

mod support;

fn bench_gradient(c: &mut Criterion) {
    let program = support::thermostat();
    let tape = Tape::compile(&program, 0);
    let params = support::params(&program);
    for (name, sem) in [
        ("smoothed", Semantics::Smoothed { eta: 0.1 }),
        ("crisp", Semantics::Crisp),
    ] {
        let mut group = c.benchmark_group(format!(
            "tape_gradient_{name}/{}_nodes_{}_ifs",
            program.node_count(),
            program.if_count()
        ));
        for batch in [16usize, 1000] {
            let latents = support::latents(&program, batch);
            let mut ws = tape.workspace();
            let mut grad = BatchGradient::new(&tape, batch);
            group.throughput(Throughput::Elements(batch as u64));
            group.bench_with_input(BenchmarkId::from_parameter(batch), &batch, |bench, _| {
                bench.iter(|| {
                    tape.gradient(&mut ws, sem, &params, black_box(&latents), &mut grad);
                    black_box(grad.value[0])
                })
            });
        }
        group.finish();
    }
    let mut group = c.benchmark_group("tape_forward_smoothed");
    for batch in [16usize, 1000] {
        let latents = support::latents(&program, batch);
        let mut ws = tape.workspace();
        let mut out = vec![0.0; batch];
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(BenchmarkId::from_parameter(batch), &batch, |bench, _| {
            bench.iter(|| {
                let sem = Semantics::Smoothed { eta: 0.1 };
                tape.forward(&mut ws, sem, &params, black_box(&latents), &mut out);
                black_box(out[0])
            })
        });
    }
    group.finish();
}

/// `a = sin(a) + 0.5`, `n` times: one constant read by `n` additions.
fn one_constant_read_n_times(n: usize) -> Program {
    let b = Builder::new();
    let mut a = b.latent("x");
    for _ in 0..n {
        a = a.sin() + 0.5;
    }
    b.finish(&[a]).unwrap()
}

/// `s = (s + x * c_i) + y`, `n` times: one chain in which `y` is a term of every other link.
fn one_term_in_every_link(n: usize) -> Program {
    let b = Builder::new();
    let x = b.latent("x");
    let y = b.latent("y");
    let mut s = x * 0.5 + y;
    for i in 1..n {
        s = s + x * (i as f64 + 0.5) + y;
    }
    b.finish(&[s]).unwrap()
}

/// A program of size `n`.
type Shape = fn(usize) -> Program;

fn bench_compile(c: &mut Criterion) {
    let shapes: [(&str, Shape); 2] = [
        ("one_constant_read_n_times", one_constant_read_n_times),
        ("one_term_in_every_link", one_term_in_every_link),
    ];
    for (name, build) in shapes {
        let mut group = c.benchmark_group(format!("tape_compile/{name}"));
        group.sample_size(10);
        for n in [1_000usize, 10_000, 100_000, 1_000_000] {
            let program = build(n);
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::from_parameter(n), &n, |bench, _| {
                bench.iter(|| black_box(Tape::compile(black_box(&program), 0).len()))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_gradient, bench_compile);
criterion_main!(benches);
