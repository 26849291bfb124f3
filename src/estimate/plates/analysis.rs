//! A plate's body in the model's terms, for the analyses (guards, continuity, affinity) that
//! read a model's if-statements: the body's shared parameters become the model's parameters
//! and latents, its columns and row latents latents of their own.

use crate::ir::{Builder, Plate, Program, Shared};

use super::tapes::copy_body;

/// The body of `plate` as the analyses must see it: in the model's terms, its shared
/// parameters the model's parameters (`Param(p)`, of `params` in all), everything else it
/// reads a latent (the shared latents, then the columns, then the row latents). A column is
/// data, but read as a latent the analyses stay on the safe side: a guard on a column is
/// taken to move with the latents, a product with one to be non-affine. Each if-statement
/// keeps its span, so that warnings point into the loop.
pub(crate) fn analysis_view(plate: &Plate, param_names: &[String]) -> Program {
    let body = &plate.body;
    let b = Builder::new();
    for name in param_names {
        b.param(name);
    }
    let mut shared_latent = vec![None; plate.shared.len()];
    for (k, s) in plate.shared.iter().enumerate() {
        if let Shared::Latent(i) = s {
            shared_latent[k] = Some(b.latent(&format!("z{i}")).id());
        }
    }
    let first_input = b.latent_count();
    for name in body.latent_names() {
        b.latent(name);
    }
    let out = copy_body(
        &b,
        body,
        |k| match (plate.shared[k as usize], shared_latent[k as usize]) {
            (_, Some(id)) => b.var(id).expect("a node of this builder"),
            (Shared::Param(p), None) => b.param_at(p as usize).expect("declared above"),
            (Shared::Latent(_), None) => unreachable!("declared above"),
            // The analysis reads the model's own plates, whose guards have no factors.
            (Shared::GuardFactor(_), None) => b.constant(1.0),
        },
        |j| {
            b.latent_at(first_input + j as usize)
                .expect("declared above")
        },
        |index| b.set_span(body.if_span(index as usize)),
    );
    b.finish(&[out])
        .expect("a body in the model's terms is as valid as the body")
}
