//! Speed of the compiled tape: forward + reverse sweep (`Tape::gradient`; smoothed, smoothed
//! with the polynomial `exp` switched on, and crisp) and forward only, on a thermostat-like
//! program of about 1,000 nodes with 80 if-statements, for batches of 16 and 1,000 samples,
//! reported as samples per second.
//!
//! Not here: estimator-level costs (sampling, guides), which later issues measure.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dsgd::eval::{BatchGradient, Tape};
use dsgd::ir::Semantics;

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

criterion_group!(benches, bench_gradient);
criterion_main!(benches);
