//! The plate the tests of the plate runners share: a model built on the builder, so that the
//! runners' tests read the same plate whether or not they need boundary terms.

use std::sync::Arc;

use crate::ir::{Builder, Dist, LatentKind, LatentSpec, Mode, Model, Plate, RowLatents, Shared};

/// A variational model of two shared latents `a`, `b` and a plate over `rows` rows with a row
/// latent `u` and an if-statement reading it; with `jumps`, also a jump per row reading a
/// shared latent and one outside the loop (what LYY18's boundary terms need).
pub(crate) fn plated(rows: usize, jumps: bool) -> Model {
    let n = rows;
    let outer = Builder::new();
    let (a, b) = (outer.latent("a"), outer.latent("b"));
    for r in 0..n {
        outer.latent(&format!("u[{r}]"));
    }
    let (zero, five) = (outer.constant(0.0), outer.constant(5.0));
    let mut f = outer.log_density(Dist::Normal, a, &[zero, five]).unwrap()
        + outer.log_density(Dist::Normal, b, &[zero, five]).unwrap();
    if jumps {
        f = f + outer.if_neg(a - 0.2, outer.constant(1.0), outer.constant(0.0));
    }
    let body = Builder::new();
    let (ba, bb) = (body.param("a"), body.param("b"));
    let (x, y, u) = (body.latent("x"), body.latent("y"), body.latent("u"));
    let one = body.constant(1.0);
    let p = body.if_neg(u + bb * x, body.constant(0.2), body.constant(0.7));
    let mut g = body.log_density(Dist::Normal, u, &[ba, one]).unwrap()
        + body.log_density(Dist::Bernoulli, y, &[p]).unwrap();
    if jumps {
        g = g + body.if_neg(ba - x, body.constant(0.5), body.constant(-0.5));
    }
    let guided = |name: String| LatentSpec {
        name,
        kind: LatentKind::Guided {
            init_mean: 0.1,
            init_std: 0.6,
        },
        span: None,
    };
    let mut latents = vec![guided("a".into()), guided("b".into())];
    latents.extend((0..n).map(|r| guided(format!("u[{r}]"))));
    Model {
        name: "plated".into(),
        mode: Mode::Variational,
        program: outer.finish(&[f]).unwrap().into(),
        latents,
        params: Vec::new(),
        loops: Vec::new(),
        plates: vec![Plate {
            var: "i".into(),
            span: None,
            rows: n,
            body: Arc::new(body.finish(&[g]).unwrap()),
            shared: vec![Shared::Latent(0), Shared::Latent(1)],
            columns: vec![
                (0..n).map(|r| (r as f64 * 0.37) % 2.0 - 1.0).collect(),
                (0..n).map(|r| (r % 3 == 0) as u8 as f64).collect(),
            ],
            row_latents: vec![RowLatents {
                first: 2,
                stride: 1,
            }],
        }],
    }
}
