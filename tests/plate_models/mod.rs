//! The model the plate tests share, built on the builder twice: with its loop unrolled and
//! with the loop kept as a plate (as lowering builds it). Shared latents `a`, `b`, `c`, a
//! model parameter `theta`, data columns `x`, `y`, and optionally a latent `u` per row; each
//! test file gives its own outer and row terms (the estimators' tests a smooth model with one
//! jump per row, LYY18's one with more jumps) and `c`'s initial spread.
#![allow(dead_code)]

use std::sync::Arc;

use dsgd::estimate::{Engine, Purpose, StreamKey};
use dsgd::ir::{
    Builder, LatentKind, LatentSpec, Mode, Model, ParamSpec, Plate, Program, RowLatents, Shared,
    Var,
};

/// The outer part of the program, over `a`, `b` and `theta`.
pub type OuterTerm = for<'b> fn(&'b Builder, Var<'b>, Var<'b>, Var<'b>) -> Var<'b>;

/// One row's term over `a, b, c, theta`, the row's `x, y` and its latent `u`, if any.
pub type RowTerm = for<'b> fn(
    &'b Builder,
    Var<'b>,
    Var<'b>,
    Var<'b>,
    Var<'b>,
    Var<'b>,
    Var<'b>,
    Option<Var<'b>>,
) -> Var<'b>;

/// What a test file's model is made of.
pub struct Terms {
    /// The outer part.
    pub outer: OuterTerm,
    /// A row's term.
    pub row: RowTerm,
    /// The initial standard deviation of `c`'s guide.
    pub c_std: f64,
}

/// The data: `x` spread over [-2, 2], `y` a deterministic 0/1 pattern.
pub fn data(n: usize) -> (Vec<f64>, Vec<f64>) {
    let x = (0..n)
        .map(|r| -2.0 + 4.0 * ((r * 37) % n) as f64 / n as f64)
        .collect();
    let y = (0..n).map(|r| ((r * 7 + 3) % 5 < 2) as u8 as f64).collect();
    (x, y)
}

/// A guided latent with its initial guide.
pub fn guided(name: String, mean: f64, std: f64) -> LatentSpec {
    LatentSpec {
        name,
        kind: LatentKind::Guided {
            init_mean: mean,
            init_std: std,
        },
        span: None,
    }
}

fn latents(n: usize, row_latents: bool, c_std: f64) -> Vec<LatentSpec> {
    let mut l = vec![
        guided("a".into(), 0.2, 0.7),
        guided("b".into(), -0.4, 0.5),
        guided("c".into(), 0.1, c_std),
    ];
    if row_latents {
        l.extend((0..n).map(|r| guided(format!("u[{r}]"), 0.01 * (r % 7) as f64, 0.4)));
    }
    l
}

fn model(
    name: &str,
    program: Program,
    n: usize,
    rl: bool,
    c_std: f64,
    plates: Vec<Plate>,
) -> Model {
    Model {
        name: name.into(),
        mode: Mode::Variational,
        program: program.into(),
        latents: latents(n, rl, c_std),
        params: vec![ParamSpec {
            name: "theta".into(),
            init: 0.6,
        }],
        plates,
        loops: Vec::new(),
    }
}

/// The model with its loop unrolled (after the outer part, as the plate numbers its
/// if-statements).
pub fn unrolled(n: usize, rl: bool, terms: &Terms) -> Model {
    let (x, y) = data(n);
    let bld = Builder::new();
    let theta = bld.param("theta");
    let (a, b, c) = (bld.latent("a"), bld.latent("b"), bld.latent("c"));
    let us: Vec<Var> = if rl {
        (0..n).map(|r| bld.latent(&format!("u[{r}]"))).collect()
    } else {
        Vec::new()
    };
    let mut f = (terms.outer)(&bld, a, b, theta);
    for r in 0..n {
        let (xr, yr) = (bld.constant(x[r]), bld.constant(y[r]));
        f = f + (terms.row)(&bld, a, b, c, theta, xr, yr, us.get(r).copied());
    }
    model(
        "unrolled",
        bld.finish(&[f]).unwrap(),
        n,
        rl,
        terms.c_std,
        Vec::new(),
    )
}

/// A body `term` over the shared `a, b, c, theta` and the columns `x, y`.
fn body(
    rl: bool,
    term: impl for<'b> Fn(&'b Builder, [Var<'b>; 6], Option<Var<'b>>) -> Var<'b>,
) -> Program {
    let body = Builder::new();
    let shared = [
        body.param("a"),
        body.param("b"),
        body.param("c"),
        body.param("theta"),
    ];
    let (bx, by) = (body.latent("x"), body.latent("y"));
    let bu = rl.then(|| body.latent("u"));
    let g = term(
        &body,
        [shared[0], shared[1], shared[2], shared[3], bx, by],
        bu,
    );
    body.finish(&[g]).unwrap()
}

/// The model with its loop kept as a plate whose body is `term` (not the row term of
/// `terms`: a test may give another body).
pub fn plated_with(
    n: usize,
    rl: bool,
    terms: &Terms,
    term: impl for<'b> Fn(&'b Builder, [Var<'b>; 6], Option<Var<'b>>) -> Var<'b>,
) -> Model {
    let (x, y) = data(n);
    let bld = Builder::new();
    let theta = bld.param("theta");
    let (a, b, _c) = (bld.latent("a"), bld.latent("b"), bld.latent("c"));
    if rl {
        for r in 0..n {
            bld.latent(&format!("u[{r}]"));
        }
    }
    let f = (terms.outer)(&bld, a, b, theta);
    let outer = bld.finish(&[f]).unwrap();
    let plate = Plate {
        var: "i".into(),
        span: None,
        rows: n,
        body: Arc::new(body(rl, term)),
        shared: vec![
            Shared::Latent(0),
            Shared::Latent(1),
            Shared::Latent(2),
            Shared::Param(0),
        ],
        columns: vec![x.into(), y.into()],
        row_latents: if rl {
            vec![RowLatents {
                first: 3,
                stride: 1,
            }]
        } else {
            Vec::new()
        },
    };
    model("plated", outer, n, rl, terms.c_std, vec![plate])
}

/// The model with its loop kept as a plate, its body the row term.
pub fn plated(n: usize, rl: bool, terms: &Terms) -> Model {
    let row = terms.row;
    plated_with(n, rl, terms, move |b, [a, bb, c, t, x, y], u| {
        row(b, a, bb, c, t, x, y, u)
    })
}

/// Asserts that `sub`'s gradients (a subsampled engine) are unbiased for `full`'s at `theta`:
/// over 1,500 batches of 16 on the same keys, each component's mean difference within 4
/// standard errors of zero, and some component moved by the subsample. `what` names the case.
pub fn assert_subsample_unbiased(full: &mut Engine, sub: &mut Engine, theta: &[f64], what: &str) {
    let d = theta.len();
    let batches = 1500;
    let (mut sum, mut sq) = (vec![0.0; d], vec![0.0; d]);
    for it in 0..batches {
        let key = StreamKey::new(5, it, Purpose::Step);
        full.evaluate(theta, key, 16, false).unwrap();
        sub.evaluate(theta, key, 16, false).unwrap();
        assert!(sub.subsample().is_some());
        for p in 0..d {
            let diff = sub.mean_gradient()[p] - full.mean_gradient()[p];
            sum[p] += diff;
            sq[p] += diff * diff;
        }
    }
    let k = batches as f64;
    let mut moved = 0;
    for p in 0..d {
        let mean = sum[p] / k;
        let var = (sq[p] / k - mean * mean) * k / (k - 1.0);
        let se = (var / k).sqrt();
        if se > 0.0 {
            moved += 1;
        }
        assert!(
            mean.abs() <= 4.0 * se + 1e-12,
            "{what}: component {p}: mean difference {mean}, se {se}"
        );
    }
    assert!(moved > 0, "{what}: the subsample changed nothing");
}
