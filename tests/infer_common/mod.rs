//! Models built with the IR builder for the inference tests (independent of the language),
//! closed forms they are checked against, and a sampling helper.

#![allow(dead_code)]

use dsgd::estimate::{Engine, Purpose, StreamKey};
use dsgd::ir::{Builder, Dist, LatentKind, LatentSpec, Mode, Model, ParamSpec};

/// Example 1.1 in objective mode: `param theta = 1; z ~ Normal(theta, 1);
/// maximize -z^2/2 + (if z < 0 then 0 else 1)`.
pub fn example() -> Model {
    let b = Builder::new();
    let theta = b.param("theta");
    let z = b.latent("z");
    let one = b.constant(1.0);
    let f = -0.5 * z.powi(2) + b.if_lt(z, b.constant(0.0), b.constant(0.0), one);
    let program = b.finish(&[f, theta, one]).unwrap();
    let (loc, scale) = (program.outputs()[1], program.outputs()[2]);
    Model {
        name: "example".into(),
        mode: Mode::Objective { minimize: false },
        program: program.into(),
        latents: vec![LatentSpec {
            name: "z".into(),
            kind: LatentKind::Family { loc, scale },
            span: None,
        }],
        params: vec![ParamSpec {
            name: "theta".into(),
            init: 1.0,
        }],
        plates: Vec::new(),
        loops: Vec::new(),
    }
}

/// A variational model with two guided latents, standard normal priors and a step on an
/// affine guard: `log p = log N(z1|0,1) + log N(z2|0,1) + (if a1 z1 + a2 z2 + c < 0 then 0 else 1)`.
pub fn vi_step(a: [f64; 2], c: f64) -> Model {
    let b = Builder::new();
    let z1 = b.latent("z1");
    let z2 = b.latent("z2");
    let (zero, one) = (b.constant(0.0), b.constant(1.0));
    let prior = b.log_density(Dist::Normal, z1, &[zero, one]).unwrap()
        + b.log_density(Dist::Normal, z2, &[zero, one]).unwrap();
    let guard = a[0] * z1 + a[1] * z2 + c;
    let f = prior + b.if_neg(guard, zero, one);
    let program = b.finish(&[f]).unwrap();
    Model {
        name: "vi_step".into(),
        mode: Mode::Variational,
        program: program.into(),
        latents: vec![
            LatentSpec {
                name: "z1".into(),
                kind: LatentKind::Guided {
                    init_mean: 0.3,
                    init_std: 0.8,
                },
                span: None,
            },
            LatentSpec {
                name: "z2".into(),
                kind: LatentKind::Guided {
                    init_mean: -0.2,
                    init_std: 1.3,
                },
                span: None,
            },
        ],
        params: vec![],
        plates: Vec::new(),
        loops: Vec::new(),
    }
}

/// The exact ELBO gradient of [`vi_step`] at `theta = (mu1, rho1, mu2, rho2)`.
pub fn vi_step_gradient(a: [f64; 2], c: f64, theta: &[f64]) -> Vec<f64> {
    let mu = [theta[0], theta[2]];
    let rho = [theta[1], theta[3]];
    let sd = rho.map(dsgd::special::softplus);
    let s2 = a[0] * a[0] * sd[0] * sd[0] + a[1] * a[1] * sd[1] * sd[1];
    let big_s = s2.sqrt();
    let u = (a[0] * mu[0] + a[1] * mu[1] + c) / big_s;
    let phi = dsgd::special::normal_pdf(u);
    let mut g = Vec::new();
    for i in 0..2 {
        // ELBO = sum_i (-(mu_i^2 + sd_i^2)/2 + ln sd_i) + Phi(u) + const.
        g.push(-mu[i] + a[i] * phi / big_s);
        let dsd = -sd[i] + 1.0 / sd[i] - phi * u * a[i] * a[i] * sd[i] / s2;
        g.push(dsd * dsgd::special::sigmoid(rho[i]));
    }
    g
}

/// A variational model whose only guard `z1 * z2` is not affine.
pub fn vi_nonaffine() -> Model {
    let b = Builder::new();
    let z1 = b.latent("z1");
    let z2 = b.latent("z2");
    let (zero, one) = (b.constant(0.0), b.constant(1.0));
    let prior = b.log_density(Dist::Normal, z1, &[zero, one]).unwrap()
        + b.log_density(Dist::Normal, z2, &[zero, one]).unwrap();
    let f = prior + b.if_neg(z1 * z2, zero, one);
    let program = b.finish(&[f]).unwrap();
    let guided = LatentKind::Guided {
        init_mean: 0.0,
        init_std: 1.0,
    };
    Model {
        name: "nonaffine".into(),
        mode: Mode::Variational,
        program: program.into(),
        latents: vec![
            LatentSpec {
                name: "z1".into(),
                kind: guided,
                span: None,
            },
            LatentSpec {
                name: "z2".into(),
                kind: guided,
                span: None,
            },
        ],
        params: vec![],
        plates: Vec::new(),
        loops: Vec::new(),
    }
}

/// Mean and standard error of each gradient component over `batches` batches of `batch`.
pub fn gradient_mean(
    engine: &mut Engine,
    theta: &[f64],
    batches: u64,
    batch: usize,
) -> (Vec<f64>, Vec<f64>) {
    let d = theta.len();
    let (mut sum, mut sq) = (vec![0.0; d], vec![0.0; d]);
    for it in 0..batches {
        engine
            .evaluate(
                theta,
                StreamKey::new(7, it, Purpose::Other(0)),
                batch,
                false,
            )
            .unwrap();
        let g = engine.sample_gradients();
        for l in 0..batch {
            for p in 0..d {
                let x = g[l * d + p];
                sum[p] += x;
                sq[p] += x * x;
            }
        }
    }
    let n = (batches as usize * batch) as f64;
    let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
    let se = (0..d)
        .map(|p| ((sq[p] / n - mean[p] * mean[p]) * n / (n - 1.0) / n).sqrt())
        .collect();
    (mean, se)
}
