//! The benchmark programs shared by the bench targets: a thermostat-like program shaped like
//! the paper's `temperature` model, and deterministic inputs for it.
//!
//! Not a bench target itself (cargo only discovers `benches/*.rs` and `benches/*/main.rs`).

use dsgd::ir::{Builder, Dist, Program, Var};

const STEPS: usize = 20;

/// `log N(x | loc, scale)`.
fn normal<'b>(x: Var<'b>, loc: Var<'b>, scale: Var<'b>) -> Var<'b> {
    x.builder()
        .log_density(Dist::Normal, x, &[loc, scale])
        .expect("Normal takes two arguments")
}

/// The shape of the paper's `temperature` model (docs/design.md section 7, models/temperature.dsgd) with synthetic
/// observations, plus a mean-field Gaussian guide term `-log N(z | mu, softplus(rho))` per
/// latent so that parameters carry gradients too: 41 latents, 82 parameters, 80 ifs.
pub fn thermostat() -> Program {
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

/// Parameters: means 20, raw scales 0.5.
pub fn params(program: &Program) -> Vec<f64> {
    (0..program.param_count())
        .map(|k| if k % 2 == 0 { 20.0 } else { 0.5 })
        .collect()
}

/// Latent-major inputs spread over both sides of every guard.
pub fn latents(program: &Program, batch: usize) -> Vec<f64> {
    (0..program.latent_count() * batch)
        .map(|n| {
            let (i, lane) = (n / batch, n % batch);
            let wiggle = ((lane * 7919 + i * 104_729) % 1000) as f64 / 1000.0 - 0.5;
            if i % 2 == 1 {
                0.5 + wiggle
            } else {
                20.0 + 6.0 * wiggle
            }
        })
        .collect()
}
