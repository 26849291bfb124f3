//! Finding a model from the command line: a path to a `.dsgd` file or a built-in name.

use std::path::Path;

use anyhow::{Context, bail};
use dsgd::ir::Model;
use dsgd::lang::{CompileOptions, DataSet, FsResolver, compile_with_data};
use dsgd::models;

/// A model and the text it was compiled from (for locating spans in reports).
pub struct Loaded {
    pub model: Model,
    /// The file name used in messages (`temperature.dsgd` for a built-in).
    pub file: String,
    pub source: String,
    /// Whether `spec` named a built-in model (which brings its recommended settings).
    pub builtin: bool,
}

/// Loads `spec`: an existing path is compiled; otherwise a built-in of that name. The model's
/// `data` declarations are bound from the JSON file `data` if given.
pub fn load_with_data(spec: &str, data: Option<&Path>) -> anyhow::Result<Loaded> {
    let data = match data {
        Some(path) => DataSet::from_json_file(path)?,
        None => DataSet::default(),
    };
    let path = Path::new(spec);
    if path.is_file() {
        let source = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read model file `{spec}`"))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolver = FsResolver {
            base_dir: base.to_path_buf(),
        };
        let model = compile_with_data(spec, &source, &resolver, &data, &CompileOptions::default())
            .map_err(|e| anyhow::anyhow!("cannot compile `{spec}`\n{e}"))?;
        return Ok(Loaded {
            model,
            file: spec.to_string(),
            source,
            builtin: false,
        });
    }
    if let Some(result) = models::builtin_with_data(spec, &data) {
        let model =
            result.map_err(|e| anyhow::anyhow!("cannot compile built-in model `{spec}`\n{e}"))?;
        let source = models::builtin_source(spec).unwrap_or_default().to_string();
        return Ok(Loaded {
            model,
            file: format!("{spec}.dsgd"),
            source,
            builtin: true,
        });
    }
    if path.exists() {
        bail!("`{spec}` is not a file");
    }
    bail!(
        "no model `{spec}`: not a file, and not a built-in model (built-ins: {})",
        models::builtin_names().join(", ")
    )
}
