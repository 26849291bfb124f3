//! The compiled tape: a program evaluated and differentiated over a batch of samples at once.
//!
//! Architecture invariant: after a [`Workspace`] exists, evaluating allocates nothing. Values
//! are structure-of-arrays (each node holds its lanes of a chunk as one fixed-width array),
//! so the per-op loops compile to straight-line vector code; the vector builds of the sweeps
//! (AVX2/FMA, and AVX-512 for the forward sweep where it is faster: `kernel_choice`) are
//! chosen at run time and give the same bits as the portable one.
//!
//! Architecture invariant: every speed-up here leaves results bit-identical to a plain
//! one-sample reverse sweep (`tests/eval_reference.rs`): constants are written once per
//! workspace, parameter-only steps run once per call on one lane, fused instructions
//! (`fuse.rs`) repeat the scalar operations of what they replace in the same order, and
//! adjoints receive their contributions in the unfused order; a tape compiled for some latents
//! only (`Tape::compile_active`) skips adjoints nobody reads, and
//! `Tape::forward_forced_moved` right after a crisp sweep of the same chunk redoes only the
//! steps whose inputs changed and what they read that no place holds any more;
//! `exp` and `ln` lanes come from `vmath`, the lane loops of `crate::elementary`'s scalar
//! definitions (the reference's own functions). The one exception: a plate body's tapes
//! (`Tape::with_plain_weights`) take their smoothing weights from a shorter, tabled `exp`
//! and without the sigmoid's rounding corrections, in every build alike (within 3 ulp of
//! the reference's sigmoid).
//!
//! The modules, each importing only those listed before it: `instr` (the instruction set),
//! `input` (the latents a sweep reads: values, or noise reparameterised as it loads them),
//! `fuse`, `plan`, `layout`, `crisp` and `checked` (compile-time passes; `crisp` builds the
//! crisp forward-only plan, with selects folded and guards fused, `checked` the layout of
//! gradient sweeps whose values are only checked for finiteness), `forced_plan` (the dependency graph and
//! layout of LYY18's forced sweeps, built at the first of them), `vmath` (lane `exp` and `ln`,
//! and the kernel sets), `kernel_choice` (which build of the forward sweep runs), `workspace`,
//! `tape` (the compiled tape), `compile` (program to tape), `kernels` (lane rules), `sweep`
//! (one chunk), `evaluate` (a batch) and `forced` (LYY18's per-sample forcing).

mod checked;
mod compile;
mod crisp;
mod evaluate;
mod forced;
mod forced_plan;
mod fuse;
mod input;
mod instr;
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
mod jit;
#[cfg(not(all(feature = "jit", target_arch = "x86_64")))]
#[path = "jit/none.rs"]
mod jit;
mod kernel_choice;
mod kernels;
mod layout;
mod plan;
mod reverse;
mod sweep;
mod tape;
pub mod vmath;
mod workspace;

pub use crate::cpu::avx2_fma as simd_available;
pub use evaluate::BatchGradient;
pub use forced::ForcedScratch;
pub use fuse::CHAIN_SEGMENT;
pub use input::Latents;
pub use instr::CHUNK;
pub use jit::Coverage as JitCoverage;
pub use kernel_choice::CHOICE_SWEEPS as KERNEL_CHOICE_SWEEPS;
pub use kernel_choice::chooses_forward_build;
pub use tape::{Tape, Values};
pub use workspace::Workspace;
