//! The intermediate representation: a DAG of the paper's calculus over parameters and
//! latent variables, the builder that makes one, and its static analyses.
//!
//! Architecture invariant: nothing here draws random numbers, reads files or prints. A
//! node refers only to earlier nodes, so arena order is a topological order.

mod analysis;
pub mod blame;
mod builder;
mod density;
mod dist;
mod error;
mod functions;
mod guard_scale;
mod hash;
mod hoist;
mod model;
mod node;
mod ops;
mod plate;
mod primitive;
mod program;
mod row_affine;
mod rows;
mod source;
mod term;
mod transform;

pub use analysis::{
    AffineGuard, Analysis, GuardInfo, NotAffine, UnsafeReason, analyse, nesting_depths,
};
pub use builder::{Builder, DEFAULT_NODE_LIMIT, Var};
pub use density::{Constrained, Sampled};
pub use dist::{ConstantProblem, Dist, Support};
pub use error::IrError;
pub use functions::{Arity, Function};
pub use guard_scale::{
    GuardScaled, PlateFactors, plate_guard_factor, scale_guards, scale_plate_guards,
};
pub(crate) use hash::FastBuild;
pub use model::{LatentKind, LatentSpec, Mode, Model, ParamSpec};
pub use node::{Branch, Node, NodeId};
pub use ops::{binary_derivatives, binary_value, unary_derivative, unary_value};
pub use plate::{LoopNote, LoopOutcome, Plate, RowLatents, Shared};
pub use primitive::{Binary, BinaryInfo, CompiledForm, Domain, Reads, Unary, UnaryInfo};
#[cfg_attr(
    not(all(feature = "jit", target_arch = "x86_64")),
    allow(unused_imports)
)]
pub(crate) use primitive::{
    unary_called_back, unary_called_back_without_stand_in, unary_without_stand_in,
};
pub use program::{Program, Semantics};
pub use row_affine::{RowGuard, first_non_affine_row_guard};
pub use source::{SourceText, Span};
pub use term::{Term, TermKind, TermNode};
pub use transform::Transform;
