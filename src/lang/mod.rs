//! The modelling language: `.dsgd` source text to an [`ir::Model`](crate::ir::Model).
//!
//! Stages: [`lexer`] (tokens with spans), [`parser`] (syntax tree, [`ast`]), lowering
//! (unrolling, inlining, if-conversion onto the IR builder). Errors carry a source span and
//! are rendered by [`diagnostic`]. The whole compilation runs on a thread with a large stack
//! and under explicit limits on nesting, call depth, steps and nodes, so that no input can
//! overflow the stack or run unbounded.

#[doc(hidden)]
pub mod ast;
mod bind;
mod data;
pub mod diagnostic;
#[doc(hidden)]
pub mod lexer;
mod lower;
#[doc(hidden)]
pub mod parser;

use std::path::{Path, PathBuf};

pub use bind::{DataError, DataSet, DataValue, Packed, max_values_in as max_data_values_in};
pub use data::{FsResolver, Resolver};
pub use diagnostic::{CompileError, LineIndex, Location, locate};

use crate::ir::{Model, SourceText};

/// Limits and settings of a compilation.
///
/// The default limits are sized so that a program over them is refused within about two
/// seconds and 300 MB: a node of the unrolled program costs about 100 bytes while it is being
/// built, and a lowering step well under a microsecond. The command line raises them with
/// `--max-nodes`, `--max-steps` and `--max-data-bytes`.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Most nodes the unrolled program may have (before dead-code elimination).
    pub node_limit: usize,
    /// Most lowering steps (statements, expressions, loop iterations, array elements).
    pub step_limit: usize,
    /// Deepest nesting of inlined function calls.
    pub max_call_depth: usize,
    /// Largest data file `csv(..)` reads, in bytes.
    pub max_data_bytes: u64,
    /// Whether `csv(..)` may read files outside the model's directory and `data_dirs`.
    pub allow_data_outside: bool,
    /// Directories besides the model's own that `csv(..)` may read from.
    pub data_dirs: Vec<PathBuf>,
    /// A caller's cancel flag (Ctrl-C in the Python package): once it rises, lexing and
    /// parsing (every few thousand tokens) and the lowering (at its next step) stop with an
    /// error that says so.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Which `for` loops are kept as plates (`--plates`).
    pub plates: PlatePolicy,
    /// Whether an if-statement on data inside an observation's distribution is lifted out of
    /// it (`observe y ~ D(if c {a} else {b})` read as `if c {observe y ~ D(a)} else {observe
    /// y ~ D(b)}`: the same crisp program, a smoothing error of second order in eta instead of
    /// first; on by default, off to compare).
    pub lift_observations: bool,
}

/// Which qualifying `for` loops are kept as plates (a loop over rows compiled once and run
/// over the rows) rather than unrolled. A loop qualifies when its iterations are independent
/// and it only adds to the objective (docs/language.md says the rules); a loop that does not
/// is unrolled whatever the policy.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PlatePolicy {
    /// A qualifying loop of at least [`PLATE_MIN_ROWS`] iterations is a plate.
    #[default]
    Auto,
    /// Every qualifying loop is a plate.
    On,
    /// Every loop is unrolled.
    Off,
}

impl PlatePolicy {
    /// The policy's name as the option takes it.
    pub fn name(self) -> &'static str {
        match self {
            PlatePolicy::Auto => "auto",
            PlatePolicy::On => "on",
            PlatePolicy::Off => "off",
        }
    }

    /// The policy named `name` (`auto`, `on` or `off`).
    pub fn from_name(name: &str) -> Option<PlatePolicy> {
        match name {
            "auto" => Some(PlatePolicy::Auto),
            "on" => Some(PlatePolicy::On),
            "off" => Some(PlatePolicy::Off),
            _ => None,
        }
    }
}

/// Under [`PlatePolicy::Auto`], the fewest iterations for which a qualifying loop is kept as
/// a plate: below it, unrolled code is as fast and the paper's models compile as they always
/// did.
pub const PLATE_MIN_ROWS: usize = 1000;

/// Default of [`CompileOptions::node_limit`]: the built-in `cheating` survey with 10,000
/// students has 130,000 nodes.
pub const DEFAULT_NODE_LIMIT: usize = 1_000_000;
/// Default of [`CompileOptions::step_limit`] (the 10,000-student survey takes 730,000).
pub const DEFAULT_STEP_LIMIT: usize = 2_000_000;
/// Default of [`CompileOptions::max_data_bytes`] (64 MiB).
pub const DEFAULT_MAX_DATA_BYTES: u64 = 64 << 20;

impl CompileOptions {
    /// Whether the caller's cancel flag has risen.
    pub fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
    }
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            node_limit: DEFAULT_NODE_LIMIT,
            step_limit: DEFAULT_STEP_LIMIT,
            max_call_depth: 1000,
            max_data_bytes: DEFAULT_MAX_DATA_BYTES,
            allow_data_outside: false,
            data_dirs: Vec::new(),
            cancel: None,
            plates: PlatePolicy::Auto,
            lift_observations: true,
        }
    }
}

/// Largest model source file [`compile_file`] reads (64 MiB): far beyond any program the
/// default limits accept, and small enough to hold in memory.
pub const MAX_SOURCE_BYTES: u64 = 64 << 20;

/// Tokens a model may have per step of [`CompileOptions::step_limit`].
const TOKENS_PER_STEP: usize = 2;

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
    let source = read_source(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let resolver = FsResolver::new(base, opts);
    compile_with_data(&name, &source, &resolver, data, opts)
}

/// The text of a model file: a regular file (not a device or FIFO), at most
/// [`MAX_SOURCE_BYTES`], and UTF-8 (an invalid byte is reported with its offset, line and
/// column).
pub fn read_source(path: &Path) -> Result<String, CompileError> {
    use crate::input::{InputError, Links, read_file};
    let name = path.display().to_string();
    let bytes = read_file(path, Links::Follow, MAX_SOURCE_BYTES).map_err(|e| {
        let message = match e {
            InputError::TooLarge { .. } => format!(
                "`{name}` is larger than {MAX_SOURCE_BYTES} bytes, the most a model file may be"
            ),
            InputError::NotRegular { .. } => {
                format!("cannot read `{name}`: it is not a regular file")
            }
            InputError::Io { source, .. } => format!("cannot read `{name}`: {source}"),
        };
        CompileError::without_location(&name, message)
    })?;
    source_text(&name, bytes)
}

/// Source bytes as text, or an error at the first byte that is not UTF-8 (with its byte
/// offset, line and column).
pub fn source_text(name: &str, bytes: Vec<u8>) -> Result<String, CompileError> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let offset = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
        let line_start = valid.rfind('\n').map_or(0, |p| p + 1);
        let loc = Location {
            line: valid.matches('\n').count() + 1,
            column: valid[line_start..].chars().count() + 1,
            line_text: valid[line_start..].to_string(),
            width: 1,
        };
        CompileError {
            file: name.to_string(),
            message: format!(
                "byte {offset} (line {}, column {}) is not valid UTF-8",
                loc.line, loc.column
            ),
            expected: "UTF-8 text".to_string(),
            location: Some(Box::new(loc)),
            notes: Vec::new(),
        }
    })
}

/// Compiles `source` (named `name` in messages); data files are read relative to `base_dir`.
pub fn compile_source(
    name: &str,
    source: &str,
    base_dir: &Path,
    opts: &CompileOptions,
) -> Result<Model, CompileError> {
    let resolver = FsResolver::new(base_dir, opts);
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
    if source.len() as u64 > MAX_SOURCE_BYTES {
        return Err(CompileError::without_location(
            name,
            format!("the model is larger than {MAX_SOURCE_BYTES} bytes, the most a model may be"),
        ));
    }
    let run = || -> Result<Model, CompileError> {
        let to_error = |d| CompileError::from_diag(name, source, d);
        // Every token costs the lowering a step or more unless it is in code never run: a
        // text of many times more tokens than steps cannot compile.
        let max_tokens = opts.step_limit.saturating_mul(TOKENS_PER_STEP);
        // Both read the cancel flag as they go: compiling stops soon after it rises.
        let cancel = opts.cancel.as_deref();
        let tokens = lexer::lex_cancellable(source, max_tokens, cancel).map_err(to_error)?;
        let program = parser::parse_cancellable(&tokens, cancel).map_err(to_error)?;
        // The tokens take about as much memory as the syntax tree: free them before the
        // lowering, whose memory peaks with both the tree and the program being built.
        drop(tokens);
        check_data_names(&program, data, name)?;
        let mut model =
            lower::lower(&program, &model_name, resolver, data, opts).map_err(to_error)?;
        let text = std::sync::Arc::new(SourceText {
            file: name.to_string(),
            text: source.to_string(),
        });
        std::sync::Arc::make_mut(&mut model.program).set_source(text.clone());
        for plate in &mut model.plates {
            std::sync::Arc::make_mut(&mut plate.body).set_source(text.clone());
        }
        Ok(model)
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

/// Whether `e` says that a `data` declaration has no value (`data y;` with none given): a
/// front end that binds data later (Python's `fit(data=..)`) may hold such a model until
/// then.
pub fn is_missing_data(e: &CompileError) -> bool {
    e.message.starts_with("data `") && e.message.contains("` has no value")
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
