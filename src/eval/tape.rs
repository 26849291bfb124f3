//! A compiled tape: what it holds, what it tells about itself, and the scratch memory to run
//! it with.
//!
//! Not here: how a program becomes a tape (`compile.rs`), running it over a batch
//! (`evaluate.rs`), LYY18's per-sample forcing (`forced_plan.rs`, `forced.rs`).

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::ir::Semantics;

use super::crisp::CrispPlan;
use super::forced_plan::ForcedPlan;
use super::input::Latents;
use super::instr::{CHUNK, Op, Plan, Step};
use super::jit::{Coverage as JitCoverage, ForwardCode};
use super::layout::{Layout, LayoutKind};
use super::workspace::Workspace;
use crate::aligned::ArrayBuf;

/// What the per-sample values of a gradient sweep must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// The output's values.
    Exact,
    /// Finite exactly where the output's values are, and equal to them where no logarithm
    /// (`ln`, `log1p`, `softplus`) only the output reads enters: what an optimisation step
    /// reads them for (to find the samples whose log-density is not finite). Such logarithms
    /// are replaced by a stand-in finite where they are (see `checked.rs`), which saves
    /// their cost; the gradients keep their bits. The two can differ in finiteness only
    /// where a sum or product past such a logarithm overflows (terms near `1e308`).
    Checked,
}

/// A program compiled for batched evaluation of one of its outputs. Cloning it is cheap:
/// clones share one compiled tape (a large program's steps and plans take tens of
/// megabytes).
#[derive(Clone, Debug)]
pub struct Tape(Arc<Compiled>);

impl Deref for Tape {
    type Target = Compiled;

    fn deref(&self) -> &Compiled {
        &self.0
    }
}

impl Tape {
    pub(super) fn new(compiled: Compiled) -> Tape {
        Tape(Arc::new(compiled))
    }

    /// This tape with its smoothed if-statements' weights computed without their rounding
    /// corrections (`elementary::sigmoid_big_small_plain`) and from a shorter exponential
    /// (`elementary::exp_of_nonpositive_tabled`), in every build alike: a plate body's
    /// tapes, whose weights are most of a smoothed gradient's time. Its smoothed
    /// values then differ from [`Tape::compile`]'s by a few ulp per weight; crisp sweeps are
    /// unchanged. Called on a tape just compiled (its machine code is made at first use).
    pub fn with_plain_weights(mut self) -> Tape {
        Arc::get_mut(&mut self.0)
            .expect("a tape just compiled, not yet shared")
            .plain_weights = true;
        self
    }
}

/// What a [`Tape`] holds.
#[derive(Debug)]
pub struct Compiled {
    /// Identifies the constants a workspace holds (a clone shares them, so shares the id).
    pub(super) id: u64,
    pub(super) len: usize,
    pub(super) consts: Vec<(u32, f64)>,
    /// Steps whose value is the same in every lane (parameters and what depends on them
    /// and on constants only): run once per call, not once per chunk. Their slots are placed
    /// alike in every layout.
    pub(super) uniform_steps: Vec<Step>,
    /// The other steps, run for every chunk, with values sharing places where their lives
    /// do not overlap (see `layout.rs`): what the sweeps use.
    pub(super) compact: Layout,
    /// The compact layout with the logarithms only the output reads replaced by a stand-in
    /// finite where they are (`checked.rs`), for [`Values::Checked`]; `None` where there are
    /// too few such logarithms to pay for a layout of their own.
    pub(super) checked: Option<Layout>,
    /// The steps a forward-only crisp sweep runs in a workspace in the compact layout
    /// (`crisp.rs`), and the constants only they read.
    pub(super) crisp: CrispPlan,
    /// What LYY18's forced sweeps need (`forced_plan.rs`), built at the first of them: the
    /// forced layout, in which a workspace of those sweeps keeps some more values, and the
    /// dependency graph of the steps.
    pub(super) forced_plan: OnceLock<ForcedPlan>,
    /// Adjoint places a workspace needs.
    pub(super) adjoints: usize,
    /// The adjoint place of the output, and of each latent and parameter (`NONE` where
    /// there is none).
    pub(super) out_adj: u32,
    pub(super) latent_adj: Vec<u32>,
    pub(super) param_adj: Vec<u32>,
    pub(super) if_slots: usize,
    pub(super) output: u32,
    pub(super) smooth_plan: Plan,
    pub(super) crisp_plan: Plan,
    /// The forward sweep of each of its layouts (by [`LayoutKind`]) in machine code,
    /// compiled at first use (`jit/emit.rs`).
    pub(super) forward_jit: [super::jit::Compiled; LayoutKind::COUNT],
    /// The reverse plans in machine code, compiled at first use (`jit/reverse.rs`).
    pub(super) reverse_jit: super::jit::CompiledReverse,
    pub(super) latent_count: usize,
    /// The value place of each parameter (pinned: the same in every layout).
    pub(super) param_slots: Vec<Option<u32>>,
    pub(super) if_count: usize,
    /// Indices of the if-statements among `uniform_steps` (their guards read no latent).
    pub(super) uniform_ifs: Vec<u32>,
    pub(super) fused_squares: usize,
    pub(super) fused_poisson: usize,
    pub(super) fused_chains: usize,
    pub(super) reused_weights: usize,
    /// Whether its smoothed if-statements' weights are the plain ones
    /// (`kernels::smooth_weights_plain`; see [`Tape::with_plain_weights`]).
    pub(super) plain_weights: bool,
}

impl Tape {
    pub fn latent_count(&self) -> usize {
        self.latent_count
    }

    pub fn param_count(&self) -> usize {
        self.param_slots.len()
    }

    /// Whether a gradient sweep writes latent `i`'s gradient at every call; where it does
    /// not, its row of a [`super::BatchGradient`] holds zeros written once, which whoever
    /// adds to that row (a plate's rows) must then write afresh instead.
    pub fn writes_latent_gradient(&self, i: usize) -> bool {
        self.latent_adj[i] != super::instr::NONE
    }

    /// [`Tape::writes_latent_gradient`] for parameter `k`.
    pub fn writes_param_gradient(&self, k: usize) -> bool {
        self.param_adj[k] != super::instr::NONE
    }

    /// Number of instructions (live nodes of the compiled output).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// If-statements of the program (indices used by [`Semantics::Forced`]).
    pub fn if_count(&self) -> usize {
        self.if_count
    }

    /// How many normal-density quadratic terms `c ((x - m) / s)^2` (or `c (x - m)^2`) were
    /// fused into one instruction each (for tests and benchmark reports).
    pub fn fused_squares(&self) -> usize {
        self.fused_squares
    }

    /// How many Poisson log-density terms `c ln(r) - r` were fused into one instruction each
    /// (for tests and benchmark reports).
    pub fn fused_poisson_terms(&self) -> usize {
        self.fused_poisson
    }

    /// How many logarithms (`ln`, `log1p`, `softplus`, Poisson terms) a gradient sweep with
    /// [`Values::Checked`] replaces by their stand-in (for tests and benchmark reports; see
    /// `checked.rs`).
    pub fn ln_stand_ins(&self) -> usize {
        self.checked.as_ref().map_or(0, |l| {
            l.steps
                .iter()
                .filter(|st| {
                    matches!(
                        st.op,
                        Op::StandIn { .. } | Op::PoissonTerm { stand_in: true, .. }
                    )
                })
                .count()
        })
    }

    /// Instructions of the reverse sweep under `semantics` (for tests and benchmark
    /// reports): steps whose adjoint can only be zero, or cannot flow on to a latent or
    /// parameter, are left out.
    pub fn reverse_len(&self, semantics: Semantics) -> usize {
        match semantics {
            Semantics::Smoothed { .. } => self.smooth_plan.steps.len(),
            _ => self.crisp_plan.steps.len(),
        }
    }

    /// Lane instructions of a forward sweep (for tests and benchmark reports).
    pub fn forward_len(&self) -> usize {
        self.compact.steps.len()
    }

    /// How many lane steps of the gradient sweep's forward half the machine code
    /// (`KernelSet::Jit`) runs itself under `semantics`, and how many it hands back to the
    /// interpreter (compiled at the first call); `None` where nothing is compiled (a CPU
    /// without AVX-512, a forced semantics, a tape too long).
    pub fn jit_coverage(&self, semantics: Semantics) -> Option<JitCoverage> {
        self.coverage(&self.compact, semantics)
    }

    /// [`Tape::jit_coverage`] of the AVX2 machine code (`KernelSet::Avx2Jit`), on any CPU
    /// with AVX2 and FMA (for tests).
    pub fn avx2_jit_coverage(&self, semantics: Semantics) -> Option<JitCoverage> {
        self.coverage_in(&self.compact, semantics, true)
    }

    /// [`Tape::jit_coverage`] of the checked layout's forward sweep (for
    /// [`Values::Checked`]); `None` where there is no checked layout too.
    pub fn checked_jit_coverage(&self, semantics: Semantics) -> Option<JitCoverage> {
        self.coverage(self.checked.as_ref()?, semantics)
    }

    /// The coverage of `layout`'s compiled forward sweep under `semantics` (none for a forced
    /// one, which is never compiled).
    fn coverage(&self, layout: &Layout, semantics: Semantics) -> Option<JitCoverage> {
        // The width the CPU runs: the AVX2 code where it lacks AVX-512.
        self.coverage_in(layout, semantics, !crate::cpu::avx512())
    }

    /// [`Tape::coverage`] of the AVX2 code (`avx2`) or the AVX-512 code.
    fn coverage_in(
        &self,
        layout: &Layout,
        semantics: Semantics,
        avx2: bool,
    ) -> Option<JitCoverage> {
        let crisp = match semantics {
            Semantics::Smoothed { .. } => false,
            Semantics::Crisp => true,
            Semantics::Forced { .. } => return None,
        };
        Some(self.forward_code(layout, crisp, avx2)?.coverage)
    }

    /// `layout`'s (one of this tape's) forward sweep in machine code under crisp (or
    /// smoothed) semantics, in AVX2 instructions (`avx2`) or AVX-512 ones, compiled at the
    /// first call; `None` where none can be (see `jit::ForwardCode`).
    pub(super) fn forward_code(
        &self,
        layout: &Layout,
        crisp: bool,
        avx2: bool,
    ) -> Option<&ForwardCode> {
        let code = self.forward_jit[layout.kind as usize].get(
            &layout.steps,
            &layout.chains,
            &layout.constants,
            layout.pinned,
            crisp,
            avx2,
            self.plain_weights,
        )?;
        // A tape has one layout of each kind: code compiled for another would give wrong
        // values (though never touch memory outside the workspace: its bounds are checked).
        assert_eq!(code.steps, layout.steps.len(), "code of another layout");
        Some(code)
    }

    /// How many steps of the reverse sweep under `semantics` its machine code runs itself,
    /// and how many it hands back to the interpreter (compiled at the first call); `None`
    /// where nothing is compiled (as for [`Tape::jit_coverage`]).
    pub fn reverse_jit_coverage(&self, semantics: Semantics) -> Option<JitCoverage> {
        self.reverse_coverage_in(semantics, false)
    }

    /// [`Tape::reverse_jit_coverage`] of the AVX2 machine code, on any CPU with AVX2 and FMA
    /// (for tests).
    pub fn avx2_reverse_jit_coverage(&self, semantics: Semantics) -> Option<JitCoverage> {
        self.reverse_coverage_in(semantics, true)
    }

    fn reverse_coverage_in(&self, semantics: Semantics, avx2: bool) -> Option<JitCoverage> {
        let (plan, smooth) = match semantics {
            Semantics::Smoothed { .. } => (&self.smooth_plan, true),
            Semantics::Crisp => (&self.crisp_plan, false),
            Semantics::Forced { .. } => return None,
        };
        Some(
            self.reverse_jit
                .get(plan, smooth, &self.compact.constants, avx2)?
                .coverage,
        )
    }

    /// Lane instructions of a forward-only crisp sweep (for tests and benchmark reports): at
    /// most [`Tape::forward_len`], fewer where selects between constants were folded into
    /// what reads them or subtractions read only as guards were fused into their selects.
    pub fn crisp_forward_len(&self) -> usize {
        if self.crisp_saves() {
            self.crisp.layout.steps.len()
        } else {
            self.forward_len()
        }
    }

    /// How many additions were fused away into sum chains (for tests and benchmark reports).
    pub fn fused_additions(&self) -> usize {
        self.fused_chains
    }

    /// How many smoothed if-statements send their guard's contribution on to the operands
    /// of the sum or difference it is (which the smoothed reverse sweep then skips; for
    /// tests and benchmark reports).
    pub fn folded_guards(&self) -> usize {
        self.smooth_plan
            .steps
            .iter()
            .filter(|rs| rs.folded_guard.is_some())
            .count()
    }

    /// How many if-statements read the smoothing weights of an earlier one on the same
    /// guard instead of computing them again (for tests and benchmark reports).
    pub fn reused_weights(&self) -> usize {
        self.reused_weights
    }

    /// Value places of a workspace in the compact layout (for tests and benchmark reports):
    /// at most [`Tape::len`], and far fewer on a large tape whose values are read only
    /// close to where they are computed.
    pub fn value_places(&self) -> usize {
        self.compact.values
    }

    /// Value places of a workspace in the forced layout, which a workspace takes at its
    /// first forced sweep (for tests and benchmark reports): the compact layout's, and one
    /// for each value it holds beyond those (see [`Tape::held_values`]).
    pub fn forced_value_places(&self) -> usize {
        self.forced_plan().layout.values
    }

    /// How many values the forced layout keeps in places of their own beyond those every
    /// layout pins (for tests and benchmark reports): every value of a small tape, and of a
    /// large one those that would be costly to compute again.
    pub fn held_values(&self) -> usize {
        self.forced_plan().extra_held
    }

    /// Adjoint places of a workspace (for tests and benchmark reports).
    pub fn adjoint_places(&self) -> usize {
        self.adjoints
    }

    /// Scratch space for evaluating this tape (in the compact layout until a forced sweep
    /// asks for the forced one).
    pub fn workspace(&self) -> Workspace {
        let mut ws = Workspace {
            tape_id: 0,
            values: ArrayBuf::zeroed(self.unforced_places()),
            adjoints: ArrayBuf::zeroed(self.adjoints),
            weights: ArrayBuf::zeroed(self.if_slots),
            kernels: None,
            forward_choice: Default::default(),
            plan_choice: Default::default(),
            checked_choice: Default::default(),
            forced_layout: false,
            crisp_chunk: false,
            lanes: 0,
            forced: Vec::with_capacity(2 * CHUNK),
            moved: Vec::with_capacity(CHUNK),
        };
        self.prepare(&mut ws);
        ws
    }

    /// Whether the crisp forward-only plan has fewer lane steps than the compact layout.
    fn crisp_saves(&self) -> bool {
        self.crisp.layout.steps.len() < self.compact.steps.len()
    }

    /// Value places of a workspace before any forced sweep: those of the compact layout and
    /// of the crisp forward-only plan.
    fn unforced_places(&self) -> usize {
        self.compact.values.max(self.crisp.layout.values)
    }

    /// The layout a forward sweep under `semantics` runs in, `reverse` whether a reverse
    /// sweep follows: the crisp forward-only plan where it may (a crisp sweep without one,
    /// in a workspace that is not in the forced layout) and it saves steps, else
    /// [`Tape::layout`]. (Where it saves none, as on influenza, whose selects are the only
    /// change, its sweep measured no faster than the compact layout's.) A gradient sweep
    /// whose values are only checked runs in the checked layout where there is one (not in
    /// a workspace in the forced layout, whose places LYY18's sweeps read after it).
    pub(super) fn forward_layout(
        &self,
        ws: &Workspace,
        semantics: Semantics,
        reverse: bool,
        values: Values,
    ) -> &Layout {
        if !reverse && semantics == Semantics::Crisp && !ws.forced_layout && self.crisp_saves() {
            &self.crisp.layout
        } else if let (true, Values::Checked, false, Some(checked)) =
            (reverse, values, ws.forced_layout, &self.checked)
        {
            checked
        } else {
            self.layout(ws)
        }
    }

    /// The forced sweeps' plan, built at the first call.
    pub(super) fn forced_plan(&self) -> &ForcedPlan {
        self.forced_plan
            .get_or_init(|| ForcedPlan::new(&self.compact, self.if_count, self.latent_count))
    }

    /// The layout `ws` runs in.
    pub(super) fn layout(&self, ws: &Workspace) -> &Layout {
        if ws.forced_layout {
            &self.forced_plan().layout
        } else {
            &self.compact
        }
    }

    /// Switches `ws` to the forced layout (once; the constants and uniform values keep their
    /// places, as every pinned value does).
    pub(super) fn use_forced_layout(&self, ws: &mut Workspace) {
        if !ws.forced_layout {
            ws.values.resize(self.forced_plan().layout.values);
            ws.forced_layout = true;
            ws.crisp_chunk = false;
        }
    }

    /// Writes this tape's constants into `ws` unless it already holds them (those of the
    /// crisp forward-only plan too, unless `ws` is in the forced layout, which never runs
    /// that plan).
    pub(super) fn prepare(&self, ws: &mut Workspace) {
        if ws.tape_id != self.id {
            for &(s, c) in &self.consts {
                ws.values[s as usize] = [c; CHUNK];
            }
            if !ws.forced_layout {
                for &(s, c) in &self.crisp.consts {
                    ws.values[s as usize] = [c; CHUNK];
                }
            }
            ws.tape_id = self.id;
        }
    }

    /// Panics unless the inputs and the workspace fit this tape.
    pub(super) fn check_inputs(
        &self,
        ws: &Workspace,
        params: &[f64],
        latents: &Latents,
        batch: usize,
    ) {
        assert_eq!(params.len(), self.param_count(), "one value per parameter");
        assert_eq!(
            latents.len(),
            self.latent_count() * batch,
            "latents are latent-major"
        );
        assert!(
            latents.fits(self.latent_count()),
            "one location and scale per latent"
        );
        assert!(
            ws.values.len()
                == if ws.forced_layout {
                    self.forced_plan().layout.values
                } else {
                    self.unforced_places()
                }
                && ws.adjoints.len() == self.adjoints
                && ws.weights.len() == self.if_slots,
            "workspace of another tape"
        );
    }
}
