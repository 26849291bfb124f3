//! Speed of the compiled tape: forward + reverse sweep (`Tape::gradient`, smoothed semantics)
//! on a thermostat-like program of about 1,000 nodes with 80 if-statements, for batches of 16
//! and 1,000 samples, reported as gradient samples per second.
//!
//! Not here: estimator-level costs (sampling, guides), which later issues measure.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dsgd::eval::{BatchGradient, Tape};
use dsgd::ir::{Builder, Dist, Program, Semantics, Var};

const STEPS: usize = 20;

/// `log N(x | loc, scale)`.
fn normal<'b>(x: Var<'b>, loc: Var<'b>, scale: Var<'b>) -> Var<'b> {
    x.builder()
        .log_density(Dist::Normal, x, &[loc, scale])
        .expect("Normal takes two arguments")
}

/// The shape of the paper's `temperature` model (DESIGN.md section 7) with synthetic
/// observations, plus a mean-field Gaussian guide term `-log N(z | mu, softplus(rho))` per
/// latent so that parameters carry gradients too: 41 latents, 82 parameters, 80 ifs.
fn thermostat() -> Program {
    let b = Builder::new();
    let c = |x: f64| b.constant(x);
    let obs = |i: usize| 20.0 + 2.0 * (i as f64 * 0.7).sin();
    let mut latents = Vec::new();
    let t0 = b.latent("t_0");
    latents.push(t0);
    let mut terms = vec![normal(t0, c(20.0), c(0.001)), normal(c(obs(0)), t0, c(1.0))];
    let (mut t, mut q) = (t0, c(0.0));
    for i in 1..=STEPS {
        let rate = b.if_gt(t, c(22.0), c(1.0), q);
        let rate = b.if_lt(t, c(18.0), c(0.0), rate);
        let qn = b.latent(&format!("qn_{i}"));
        terms.push(normal(qn, rate, c(0.001)));
        let q_i = b.if_gt(qn, c(0.5), c(1.0), c(0.0));
        let drift = (1.0 / 15.0) * (32.0 - (t + q_i * 21.0));
        let s = b.if_gt(qn, c(0.5), c(0.22), c(0.2));
        let t_i = b.latent(&format!("t_{i}"));
        terms.push(normal(t_i, t + drift, s + 2.0));
        terms.push(normal(c(obs(i)), t_i, c(1.0)));
        latents.extend([qn, t_i]);
        (t, q) = (t_i, q_i);
    }
    for (j, &z) in latents.iter().enumerate() {
        let mu = b.param(&format!("mu_{j}"));
        let rho = b.param(&format!("rho_{j}"));
        terms.push(-normal(z, mu, rho.softplus()));
    }
    let elbo = b.sum(&terms);
    b.finish(&[elbo]).expect("the program has an output")
}

fn bench_gradient(c: &mut Criterion) {
    let program = thermostat();
    let tape = Tape::compile(&program, 0);
    let mut group = c.benchmark_group(format!(
        "tape_gradient_smoothed/{}_nodes_{}_ifs",
        program.node_count(),
        program.if_count()
    ));
    let params: Vec<f64> = (0..program.param_count())
        .map(|k| if k % 2 == 0 { 20.0 } else { 0.5 })
        .collect();
    for batch in [16usize, 1000] {
        // Latent-major inputs spread over both sides of every guard.
        let latents: Vec<f64> = (0..program.latent_count() * batch)
            .map(|n| {
                let (i, lane) = (n / batch, n % batch);
                let wiggle = ((lane * 7919 + i * 104_729) % 1000) as f64 / 1000.0 - 0.5;
                if i % 2 == 1 {
                    0.5 + wiggle
                } else {
                    20.0 + 6.0 * wiggle
                }
            })
            .collect();
        let mut ws = tape.workspace();
        let mut grad = BatchGradient::new(&tape, batch);
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(BenchmarkId::from_parameter(batch), &batch, |bench, _| {
            bench.iter(|| {
                tape.gradient(
                    &mut ws,
                    Semantics::Smoothed { eta: 0.1 },
                    &params,
                    black_box(&latents),
                    &mut grad,
                );
                black_box(grad.value[0])
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_gradient);
criterion_main!(benches);
