//! Errors of the builder API: a Rust user's mistake becomes a value, never a panic.

use thiserror::Error;

/// What went wrong while building or finishing a program.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum IrError {
    #[error("parameter index {index} is out of range: the program declares {count} parameter(s)")]
    ParamOutOfRange { index: usize, count: usize },
    #[error("latent index {index} is out of range: the program declares {count} latent(s)")]
    LatentOutOfRange { index: usize, count: usize },
    #[error("node {node} does not belong to this builder (it has {count} node(s))")]
    NodeOutOfRange { node: String, count: usize },
    #[error("`{name}` takes {expected} argument(s), but {found} were given")]
    Arity {
        name: String,
        expected: String,
        found: usize,
    },
    #[error("a latent cannot be drawn from `{dist}`: {why}")]
    NoLatentTransform { dist: String, why: String },
    #[error("unknown function `{0}`")]
    UnknownFunction(String),
    #[error("the program has no output: give at least one node to `finish`")]
    NoOutput,
    #[error("the program would have more than {limit} nodes")]
    TooLarge { limit: usize },
}
