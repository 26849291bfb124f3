//! Finding a model from the command line: a path to a `.dsgd` file or a built-in name.

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;
use dsgd::Model;
use dsgd::lang::{
    CompileOptions, DEFAULT_MAX_DATA_BYTES, DEFAULT_NODE_LIMIT, DEFAULT_STEP_LIMIT, DataSet,
    FsResolver, PlatePolicy, compile_with_data, read_source,
};
use dsgd::models;

/// How a model file is compiled: its limits and which data files it may read. Shared by
/// every subcommand that takes a model.
#[derive(Args, Debug, Clone)]
pub struct SourceArgs {
    /// Most nodes the unrolled program may have.
    #[arg(long, default_value_t = DEFAULT_NODE_LIMIT, value_parser = crate::args::count::<1>)]
    pub max_nodes: usize,
    /// Most compilation steps (statements, expressions, loop iterations, data values).
    #[arg(long, default_value_t = DEFAULT_STEP_LIMIT, value_parser = crate::args::count::<1>)]
    pub max_steps: usize,
    /// Largest data file read (`--data` JSON or a `csv(..)` file), in bytes. The default,
    /// 64 MiB, holds 10^6 rows of two full-precision columns as JSON.
    #[arg(long, default_value_t = DEFAULT_MAX_DATA_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_data_bytes: u64,
    /// Let `csv(..)` read files outside the model's directory (a model may come from
    /// someone else: by default it reads only data beside it).
    #[arg(long)]
    pub allow_data_outside: bool,
    /// A directory besides the model's own that `csv(..)` may read from (repeatable).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Vec<PathBuf>,
    /// Which `for` loops whose iterations are independent are kept as plates (compiled once
    /// and run over the rows) instead of unrolled: `auto` (those of at least 1000 rows),
    /// `on` (all) or `off` (none: every loop unrolled).
    #[arg(long, value_name = "auto|on|off", default_value = "auto", value_parser = parse_plates)]
    pub plates: PlatePolicy,
}

/// `--plates auto|on|off`.
fn parse_plates(s: &str) -> Result<PlatePolicy, String> {
    PlatePolicy::from_name(s).ok_or_else(|| format!("`{s}` is not `auto`, `on` or `off`"))
}

impl Default for SourceArgs {
    fn default() -> Self {
        SourceArgs {
            max_nodes: DEFAULT_NODE_LIMIT,
            max_steps: DEFAULT_STEP_LIMIT,
            max_data_bytes: DEFAULT_MAX_DATA_BYTES,
            allow_data_outside: false,
            data_dir: Vec::new(),
            plates: PlatePolicy::Auto,
        }
    }
}

impl SourceArgs {
    /// The compiler's options for these flags.
    pub fn compile_options(&self) -> CompileOptions {
        CompileOptions {
            node_limit: self.max_nodes,
            step_limit: self.max_steps,
            max_data_bytes: self.max_data_bytes,
            allow_data_outside: self.allow_data_outside,
            data_dirs: self.data_dir.clone(),
            plates: self.plates,
            ..CompileOptions::default()
        }
    }
}

/// The prefix that names a built-in model even where a file of that name exists.
const BUILTIN_PREFIX: &str = "builtin:";

/// A model and the text it was compiled from (for locating spans in reports).
pub struct Loaded {
    pub model: Model,
    /// The file name used in messages (`temperature.dsgd` for a built-in).
    pub file: String,
    pub source: String,
    /// Whether `spec` named a built-in model (which brings its recommended settings).
    pub builtin: bool,
}

/// Loads `spec`: an existing path is compiled; otherwise a built-in of that name. A file wins
/// over a built-in of the same name (with a warning saying so); `builtin:NAME` always names the
/// built-in. The model's `data` declarations are bound from the JSON file `data` if given.
pub fn load_with_data(
    spec: &str,
    args: &SourceArgs,
    data: Option<&Path>,
) -> anyhow::Result<Loaded> {
    let data = match data {
        Some(path) => read_data(path, args.max_data_bytes)?,
        None => DataSet::default(),
    };
    if let Some(name) = spec.strip_prefix(BUILTIN_PREFIX) {
        return load_builtin(name, &data, args.plates);
    }
    let path = Path::new(spec);
    if path.is_file() {
        if models::builtin_source(spec).is_some() {
            eprintln!(
                "warning: `{spec}` is a file here and also a built-in model; using the file \
                 (write `{BUILTIN_PREFIX}{spec}` for the built-in)"
            );
        }
        let source =
            read_source(path).map_err(|e| anyhow::anyhow!("cannot compile `{spec}`\n{e}"))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let opts = args.compile_options();
        let resolver = FsResolver::new(base, &opts);
        let model = compile_with_data(spec, &source, &resolver, &data, &opts)
            .map_err(|e| anyhow::anyhow!("cannot compile `{spec}`\n{e}"))?;
        return Ok(Loaded {
            model,
            file: spec.to_string(),
            source,
            builtin: false,
        });
    }
    if models::builtin_source(spec).is_some() {
        return load_builtin(spec, &data, args.plates);
    }
    if path.exists() {
        bail!("`{spec}` is not a file");
    }
    bail!(
        "no model `{spec}`: not a file, and not a built-in model (built-ins: {})",
        models::builtin_names().join(", ")
    )
}

/// The built-in model `spec`.
fn load_builtin(spec: &str, data: &DataSet, plates: PlatePolicy) -> anyhow::Result<Loaded> {
    let opts = CompileOptions {
        plates,
        ..CompileOptions::default()
    };
    if let Some(result) = models::builtin_with_options(spec, data, &opts) {
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
    bail!(
        "no built-in model `{spec}` (built-ins: {})",
        models::builtin_names().join(", ")
    )
}

/// The JSON data file given with `--data`: a regular file of at most `max_bytes` (which
/// bounds its values too: the numbers are held packed, not as IR nodes).
fn read_data(path: &Path, max_bytes: u64) -> anyhow::Result<DataSet> {
    let max_values = dsgd::lang::max_data_values_in(max_bytes);
    Ok(DataSet::from_json_file(path, max_bytes, max_values)?)
}
