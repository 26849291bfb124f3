//! The built-in models: the paper's models and Example 1.1, as `.dsgd` sources and their
//! data files embedded in the binary, so that `dsgd check temperature` works from any
//! directory. The sources are the files in `models/`; nothing here is Rust-built.

use std::collections::HashMap;

use crate::ir::Model;
use crate::lang::{CompileError, CompileOptions, DataSet, Resolver, compile_with_data};

/// One built-in model: its name, a one-line description and its source.
pub struct Builtin {
    pub name: &'static str,
    pub description: &'static str,
    pub source: &'static str,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "example",
        description: "Example 1.1: maximise E[-z^2/2 + [z >= 0]], z ~ N(theta, 1) (1 latent, 1 if)",
        source: include_str!("../models/example.dsgd"),
    },
    Builtin {
        name: "temperature",
        description: "thermostat with hybrid dynamics, 21 observed temperatures (41 latents, 80 ifs)",
        source: include_str!("../models/temperature.dsgd"),
    },
    Builtin {
        name: "xornet",
        description: "2-4-2-1 network with step activations learning XOR (25 latents, 28 ifs, depth 3)",
        source: include_str!("../models/xornet.dsgd"),
    },
    Builtin {
        name: "walk",
        description: "random walk of bounded length, inferring its start (16 latents, 31 ifs)",
        source: include_str!("../models/walk.dsgd"),
    },
    Builtin {
        name: "cheating",
        description: "randomised-response survey of cheating students (301 latents, 300 ifs)",
        source: include_str!("../models/cheating.dsgd"),
    },
    Builtin {
        name: "textmsg",
        description: "change point in daily text-message counts (3 latents, 37 ifs)",
        source: include_str!("../models/textmsg.dsgd"),
    },
    Builtin {
        name: "influenza",
        description: "US influenza mortality 1969, switching state-space model (37 latents, 24 ifs)",
        source: include_str!("../models/influenza.dsgd"),
    },
];

/// The data files the built-in models read, by the path written in their sources.
const DATA: &[(&str, &str)] = &[
    (
        "data/temperature_tcl.csv",
        include_str!("../models/data/temperature_tcl.csv"),
    ),
    (
        "data/textmsg_counts.csv",
        include_str!("../models/data/textmsg_counts.csv"),
    ),
    (
        "data/influenza_mortality.csv",
        include_str!("../models/data/influenza_mortality.csv"),
    ),
];

const NAMES: &[&str] = &[
    "example",
    "temperature",
    "xornet",
    "walk",
    "cheating",
    "textmsg",
    "influenza",
];

/// Reads the embedded data files.
struct Embedded;

impl Resolver for Embedded {
    fn read(&self, path: &str) -> Result<String, String> {
        let files: HashMap<&str, &str> = DATA.iter().copied().collect();
        let key = path.trim_start_matches("./");
        files
            .get(key)
            .map(|s| s.to_string())
            .ok_or_else(|| "no such embedded data file".to_string())
    }
}

/// Names of the built-in models, in the order `dsgd models` lists them.
pub fn builtin_names() -> &'static [&'static str] {
    NAMES
}

/// Every built-in model with its description and source.
pub fn builtins() -> &'static [Builtin] {
    BUILTINS
}

/// The source of a built-in model.
pub fn builtin_source(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|b| b.name == name).map(|b| b.source)
}

/// Compiles the built-in model `name` (`None` if there is no such model).
pub fn builtin(name: &str) -> Option<Result<Model, CompileError>> {
    builtin_with_data(name, &DataSet::default())
}

/// [`builtin`] with its `data` declarations bound from `data` (replacing the embedded data).
pub fn builtin_with_data(name: &str, data: &DataSet) -> Option<Result<Model, CompileError>> {
    let source = builtin_source(name)?;
    let file = format!("{name}.dsgd");
    let mut r = compile_with_data(&file, source, &Embedded, data, &CompileOptions::default());
    if let Ok(m) = &mut r {
        m.name = name.to_string();
    }
    Some(r)
}
