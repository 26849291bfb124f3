//! The compiled tape: a program evaluated and differentiated over a batch of samples at once.
//!
//! Architecture invariant: after a [`Workspace`] exists, evaluating allocates nothing. Values
//! are structure-of-arrays (each node holds its lanes contiguously), processed in chunks that
//! stay in cache, so the per-op loops vectorise.

mod kernels;
mod tape;

pub use tape::{BatchGradient, CHUNK, Tape, Workspace};
