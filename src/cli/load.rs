//! TEMPORARY model loader, until the language (branch `lang`) lands: it knows only the
//! built-in `example` (Example 1.1), built with the IR builder. The `lang` branch replaces this
//! file with the real loader of the same signature (paths and every built-in model).

use anyhow::{Context, bail};
use dsgd::ir::{Builder, LatentKind, LatentSpec, Mode, Model, ParamSpec};

/// A model by built-in name or path.
pub fn load_model(spec: &str) -> anyhow::Result<Model> {
    if spec == "example" {
        return example().context("building the built-in model `example`");
    }
    if std::path::Path::new(spec).exists() {
        bail!(
            "cannot load `{spec}`: this build reads no model files yet (built-in models: example)"
        );
    }
    bail!(
        "model `{spec}` not found: no such file, and not a built-in model (built-in models: example)"
    )
}

/// Example 1.1: `param theta = 1; z ~ Normal(theta, 1); maximize -z^2/2 + [z >= 0]`.
fn example() -> anyhow::Result<Model> {
    let b = Builder::new();
    let theta = b.param("theta");
    let z = b.latent("z");
    let one = b.constant(1.0);
    let f = -0.5 * z.powi(2) + b.if_lt(z, b.constant(0.0), b.constant(0.0), one);
    let program = b.finish(&[f, theta, one])?;
    let (loc, scale) = (program.outputs()[1], program.outputs()[2]);
    Ok(Model {
        name: "example".into(),
        mode: Mode::Objective { minimize: false },
        program,
        latents: vec![LatentSpec {
            name: "z".into(),
            kind: LatentKind::Family { loc, scale },
            span: None,
        }],
        params: vec![ParamSpec {
            name: "theta".into(),
            init: 1.0,
        }],
    })
}
