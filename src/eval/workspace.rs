//! Scratch memory for running a tape on one thread: the values, adjoints and smoothing
//! weights of one chunk, the layout they are in, and what those values are known to hold.
//!
//! Architecture invariant: after a workspace exists, evaluating allocates nothing.

use crate::ir::Semantics;

use super::instr::{CHUNK, Lanes};
use super::kernel_choice::{ForwardChoice, chooses_forward_build};
use super::layout::{Layout, LayoutKind};
use super::vmath::KernelSet;
use crate::aligned::ArrayBuf;

/// Scratch memory for one thread: values, adjoints and smoothing weights of one chunk.
#[derive(Clone, Debug)]
pub struct Workspace {
    /// Which tape's constants `values` holds.
    pub(super) tape_id: u64,
    pub(super) values: ArrayBuf<CHUNK>,
    pub(super) adjoints: ArrayBuf<CHUNK>,
    pub(super) weights: ArrayBuf<CHUNK>,
    /// The build every sweep runs in, if one was set ([`Workspace::set_kernels`]); else
    /// the widest the CPU runs, with the forward sweep's AVX-512 build where it was faster.
    pub(super) kernels: Option<KernelSet>,
    pub(super) forward_choice: ForwardChoice,
    /// The choice for the crisp forward-only plan, made apart: it runs under the same
    /// semantics as the gradient sweeps' crisp forward half but is a different tape, and
    /// timing both as one compared builds on whichever was shorter.
    pub(super) plan_choice: ForwardChoice,
    /// The choice for the checked layout (`checked.rs`), made apart for the same reason: a
    /// run's measurements sweep the compact layout and its steps the checked one, and
    /// timing both as one compared builds on whichever was cheaper.
    pub(super) checked_choice: ForwardChoice,
    /// Whether `values` are in the tape's forced layout (the compact one with some more
    /// values in places of their own, which LYY18's incremental forced sweeps read); the
    /// compact layout otherwise.
    pub(super) forced_layout: bool,
    /// Whether the values in places of their own hold one chunk's crisp forward sweep of
    /// `lanes` samples (for [`Tape::forward_forced_moved`](super::Tape::forward_forced_moved)
    /// to redo only what changed), except downstream of the if-statements in `forced`, which
    /// the last forced sweep forced, and with the latents in `moved` taking the lanes given
    /// there (those the last forced sweep moved).
    pub(super) crisp_chunk: bool,
    pub(super) lanes: usize,
    pub(super) forced: Vec<u32>,
    pub(super) moved: Vec<(u32, Lanes)>,
}

impl Workspace {
    /// Records what `values` hold after a sweep under `semantics` over `batch` samples.
    pub(super) fn note_sweep(&mut self, semantics: Semantics, batch: usize) {
        self.crisp_chunk = self.forced_layout && semantics == Semantics::Crisp && batch <= CHUNK;
        self.lanes = batch;
        self.forced.clear();
        self.moved.clear();
    }

    /// The build choice for sweeps of `layout`: each kind of layout has its own.
    pub(super) fn choice_for(&mut self, layout: &Layout) -> &mut ForwardChoice {
        match layout.kind {
            LayoutKind::Compact | LayoutKind::Held => &mut self.forward_choice,
            LayoutKind::ForwardOnly => &mut self.plan_choice,
            LayoutKind::Checked => &mut self.checked_choice,
        }
    }

    /// Chooses the vector code paths the CPU runs (the default) or the portable one. Both
    /// give bit-identical results; this exists to test and measure that.
    pub fn set_simd(&mut self, on: bool) {
        self.kernels = if on { None } else { Some(KernelSet::Portable) };
    }

    /// Runs every sweep in the build `set` (one of [`KernelSet::available`]; the portable
    /// build runs otherwise), instead of choosing. Every build gives the same bits; this
    /// exists to test and measure that.
    pub fn set_kernels(&mut self, set: KernelSet) {
        self.kernels = Some(set);
    }

    /// The build the forward sweep runs in under `semantics`: the one set, or the one
    /// chosen, once the first sweeps have timed the candidates (`None` until then) on a CPU
    /// with builds to choose between ([`chooses_forward_build`]), else the widest build.
    pub fn forward_kernels(&self, semantics: Semantics) -> Option<KernelSet> {
        match self.kernels {
            Some(set) => Some(set),
            None if chooses_forward_build() => self.forward_choice.chosen(semantics),
            None => Some(KernelSet::best()),
        }
    }
}
