//! The modelling language: `.dsgd` source text to an [`ir::Model`](crate::ir::Model).
//!
//! Stages: [`lexer`] (tokens with spans), [`parser`] (syntax tree, [`ast`]), lowering
//! (unrolling, inlining, if-conversion onto the IR builder). Errors carry a source span and
//! are rendered by [`diagnostic`]. The whole compilation runs on a thread with a large stack
//! and under explicit limits on nesting, call depth, steps and nodes, so that no input can
//! overflow the stack or run unbounded.

pub mod ast;
mod bind;
mod data;
pub mod diagnostic;
pub mod lexer;
mod lower;
pub mod parser;

use std::path::Path;

pub use bind::{DataError, DataSet, DataValue};
pub use data::{FsResolver, Resolver};
pub use diagnostic::{CompileError, Location, locate};

use crate::ir::{DEFAULT_NODE_LIMIT, Model};

/// Limits and settings of a compilation.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Most nodes the unrolled program may have (before dead-code elimination).
    pub node_limit: usize,
    /// Most lowering steps (statements, expressions, loop iterations, array elements).
    pub step_limit: usize,
    /// Deepest nesting of inlined function calls.
    pub max_call_depth: usize,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            node_limit: DEFAULT_NODE_LIMIT,
            step_limit: 50_000_000,
            max_call_depth: 1000,
        }
    }
}

/// Stack of the compiler thread: enough for `max_call_depth` inlined calls of the default
/// and the parser's nesting limit. Only touched pages cost memory.
const STACK_BYTES: usize = 512 << 20;

/// Compiles the model in file `path`; data files are read relative to its directory.
pub fn compile_file(path: &Path, opts: &CompileOptions) -> Result<Model, CompileError> {
    compile_file_with_data(path, &DataSet::default(), opts)
}

/// [`compile_file`] with values for the model's `data` declarations supplied at run time.
pub fn compile_file_with_data(
    path: &Path,
    data: &DataSet,
    opts: &CompileOptions,
) -> Result<Model, CompileError> {
    let name = path.display().to_string();
    let source = std::fs::read_to_string(path)
        .map_err(|e| CompileError::without_location(&name, format!("cannot read `{name}`: {e}")))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let resolver = FsResolver {
        base_dir: base.to_path_buf(),
    };
    compile_with_data(&name, &source, &resolver, data, opts)
}

/// Compiles `source` (named `name` in messages); data files are read relative to `base_dir`.
pub fn compile_source(
    name: &str,
    source: &str,
    base_dir: &Path,
    opts: &CompileOptions,
) -> Result<Model, CompileError> {
    let resolver = FsResolver {
        base_dir: base_dir.to_path_buf(),
    };
    compile_with(name, source, &resolver, opts)
}

/// Compiles `source`, reading data files through `resolver`.
pub fn compile_with(
    name: &str,
    source: &str,
    resolver: &(dyn Resolver + Sync),
    opts: &CompileOptions,
) -> Result<Model, CompileError> {
    compile_with_data(name, source, resolver, &DataSet::default(), opts)
}

/// Compiles `source`, reading data files through `resolver`, with `data` binding the model's
/// `data` declarations by name (a bound value replaces the one written in the model). A name
/// in `data` that the model does not declare as `data` is an error.
pub fn compile_with_data(
    name: &str,
    source: &str,
    resolver: &(dyn Resolver + Sync),
    data: &DataSet,
    opts: &CompileOptions,
) -> Result<Model, CompileError> {
    let model_name = Path::new(name)
        .file_stem()
        .map_or(name.to_string(), |s| s.to_string_lossy().into_owned());
    let run = || -> Result<Model, CompileError> {
        let to_error = |d| CompileError::from_diag(name, source, d);
        let tokens = lexer::lex(source).map_err(to_error)?;
        let program = parser::parse(&tokens).map_err(to_error)?;
        check_data_names(&program, data, name)?;
        lower::lower(&program, &model_name, resolver, data, opts).map_err(to_error)
    };
    std::thread::scope(|s| {
        // Where address space is tight, a smaller stack still serves every ordinary model.
        let handle = [STACK_BYTES, STACK_BYTES / 8]
            .into_iter()
            .find_map(|bytes| {
                std::thread::Builder::new()
                    .name("dsgd-compile".to_string())
                    .stack_size(bytes)
                    .spawn_scoped(s, run)
                    .ok()
            })
            .ok_or_else(|| {
                CompileError::without_location(name, "cannot start the compiler thread")
            })?;
        handle.join().unwrap_or_else(|_| {
            Err(CompileError::without_location(
                name,
                "internal compiler error (please report)",
            ))
        })
    })
}

/// Every name the run-time data gives must be a top-level `data` declaration of the model.
fn check_data_names(
    program: &ast::Program,
    data: &DataSet,
    file: &str,
) -> Result<(), CompileError> {
    let declared: Vec<&str> = program
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            ast::StmtKind::Data { name, .. } => Some(name.name.as_str()),
            _ => None,
        })
        .collect();
    match data.names().find(|n| !declared.contains(n)) {
        None => Ok(()),
        Some(unknown) => {
            let listing = if declared.is_empty() {
                "it declares no `data`".to_string()
            } else {
                format!("its `data` are {}", declared.join(", "))
            };
            Err(CompileError::without_location(
                file,
                format!(
                    "{} gives `{unknown}`, but the model declares no `data {unknown}` ({listing})",
                    data.origin()
                ),
            ))
        }
    }
}
