//! The compiled tape: a program evaluated and differentiated over a batch of samples at once.
//!
//! Architecture invariant: after a [`Workspace`] exists, evaluating allocates nothing. Values
//! are structure-of-arrays (each node holds its lanes of a chunk as one fixed-width array),
//! so the per-op loops compile to straight-line vector code; the vector (AVX2/FMA) build of
//! the sweeps is chosen at run time and gives the same bits as the portable one.

mod fuse;
mod kernels;
mod sweep;
mod tape;

pub use sweep::simd_available;
pub use tape::{BatchGradient, CHUNK, Tape, Workspace};
