//! The forward sweep of a layout compiled to machine code (x86-64 with AVX-512, or AVX2 and
//! FMA: `avx2/`), once per layout, semantics and width, as a build beside the interpreter's
//! AVX2 and AVX-512 ones.
//!
//! Why: the interpreter pays for each lane step a dispatch, bounds checks and a trip of every
//! operand and result through memory; on tapes of many cheap steps (selects, sums, products)
//! that is most of the time. The compiled code runs the cheap steps inline with the values
//! just computed still in registers, and calls the interpreter back for the rest (see
//! `emit.rs`). It gives the interpreter's bits; `kernel_choice` times it against the other
//! builds like any build and keeps the fastest.
//!
//! The map: `emit.rs` (with `emit/steps.rs`, `emit/cache.rs` and the driver `sweep.rs`)
//! writes the forward code and `reverse.rs` (with `reverse/steps.rs`, `reverse/partials.rs`)
//! the reverse code, each once for both widths; what a width does its own way is its
//! `vector.rs` trait's, implemented in `avx512.rs` and `avx2/` (with each width's routines,
//! `routines.rs` and `avx2/routines.rs`, and their shared constants, `consts.rs`). Loops
//! over repeated blocks are `repeat.rs` and `looping.rs`; `entry.rs` is the code's entry, exit
//! and calls back; `code.rs` holds the code once compiled.
//!
//! Safety: the code reads and writes only what [`ForwardCode::run`] checks before calling it:
//! value places below [`ForwardCode::slots`], parameters below `params`, and the noise,
//! locations and scales of latents below `latents`.

mod avx2;
mod avx512;
mod code;
mod consts;
mod emit;
mod entry;
mod indicators;
mod looping;
mod regs;
mod repeat;
mod reverse;
mod routine_parts;
mod routines;
mod sweep;
mod vector;

use std::ffi::c_void;

use super::instr::{Lanes, Op, Plan, Step, Target};
use code::{Builds, Mapped, Parts, supported};

pub use sweep::Coverage;

/// Layouts with more lane steps than this are not compiled (code of about 40 bytes a step:
/// the interpreter's loop then costs less than streaming the code through the caches).
const MAX_STEPS: usize = 200_000;

/// Lane steps per call back into the interpreter below which a layout is not compiled. A call
/// empties the register cache and enters the interpreter's loop, and the steps with no inline
/// form are the expensive ones anyway: measured on AMD Zen 4, layouts with a call per 2 to 5
/// steps (the paper's models but one, smoothed or crisp) ran 0-10 % slower compiled, and one
/// call in 1,000 steps (cheating, crisp) 1.33x faster. Compiling takes about a microsecond a
/// step, so a layout that cannot gain is not compiled at all.
const STEPS_PER_CALL: usize = 32;

/// What the compiled code reads, in the order of the offsets below.
#[repr(C)]
pub(super) struct Frame {
    pub values: *mut Lanes,
    pub params: *const f64,
    /// The noise of latent 0 in the chunk's first lane.
    pub noise: *const f64,
    /// Bytes from one latent's noise to the next one's.
    pub stride: usize,
    pub loc: *const f64,
    pub scale: *const f64,
    pub sign: f64,
    /// The code's constants ([`ForwardCode::consts`]).
    pub consts: *const f64,
    /// The smoothing weights' places.
    pub weights: *mut Lanes,
    /// The adjoints' places (read by reverse code only).
    pub adjoints: *mut Lanes,
    /// `1 / eta` of a smoothed sweep.
    pub inv_eta: f64,
    /// Runs steps `from..to` (lane steps forward, reverse steps in reverse code) in the
    /// interpreter.
    pub call_back: unsafe extern "sysv64" fn(*mut Frame, u32, u32),
    /// What `call_back` needs besides the frame.
    pub env: *mut c_void,
}

/// Byte offsets of [`Frame`]'s fields, for the emitter.
mod frame {
    use super::Frame;
    use std::mem::offset_of;

    pub const VALUES: i32 = offset_of!(Frame, values) as i32;
    pub const PARAMS: i32 = offset_of!(Frame, params) as i32;
    pub const NOISE: i32 = offset_of!(Frame, noise) as i32;
    pub const STRIDE: i32 = offset_of!(Frame, stride) as i32;
    pub const LOC: i32 = offset_of!(Frame, loc) as i32;
    pub const SCALE: i32 = offset_of!(Frame, scale) as i32;
    pub const SIGN: i32 = offset_of!(Frame, sign) as i32;
    pub const CONSTS: i32 = offset_of!(Frame, consts) as i32;
    pub const WEIGHTS: i32 = offset_of!(Frame, weights) as i32;
    pub const ADJOINTS: i32 = offset_of!(Frame, adjoints) as i32;
    pub const INV_ETA: i32 = offset_of!(Frame, inv_eta) as i32;
    pub const CALL_BACK: i32 = offset_of!(Frame, call_back) as i32;
}

/// One layout's forward sweep in machine code.
#[derive(Debug)]
pub(super) struct ForwardCode {
    /// The code, entered where the sweep starts (the routines it calls come first).
    code: Mapped,
    /// The constants the code reads (through [`Frame::consts`]).
    pub consts: Vec<f64>,
    /// Value places the code touches (all below this).
    pub slots: usize,
    /// Parameters it reads (all below this).
    pub params: usize,
    /// Latents it reads (all below this).
    pub latents: usize,
    /// Weight places it touches (all below this).
    pub weights: usize,
    /// The lane steps it was compiled from.
    pub steps: usize,
    /// Whether it reads each latent as its noise itself, never its location and scale
    /// (`Tape::with_noise_latents`): it must then be run only on latents of location `-0.0`
    /// and scale 1.
    pub noise_latents: bool,
    pub coverage: Coverage,
}

impl ForwardCode {
    /// Runs the code on `frame`.
    ///
    /// # Safety
    /// `frame` must point to `slots` value places, `params` parameters, and for `latents`
    /// latents their location and scale and a full chunk of noise each; `call_back` must run
    /// the interpreter on the same places.
    pub unsafe fn run(&self, frame: &mut Frame) {
        // SAFETY: the code was written for this entry by `emit::forward`, and it reads what
        // the caller guarantees.
        unsafe { self.code.enter(frame) }
    }
}

/// A layout's compiled forward sweeps, made at first use: smoothed and crisp, in AVX-512
/// and in AVX2 instructions.
#[derive(Default, Debug)]
pub(super) struct Compiled(Builds<ForwardCode>);

impl Compiled {
    /// The code for `steps` under crisp (or smoothed) semantics, in AVX2 instructions
    /// (`avx2`) or AVX-512 ones, compiled at the first call; `constants` are places that hold
    /// a constant for good (and its value); `plain`: the smoothing weights without their
    /// corrections (`Tape::with_plain_weights`, the same for every call on one tape);
    /// `noise_latents`: every latent its noise itself (`Tape::with_noise_latents`). `None`
    /// where the CPU lacks the instructions, the layout is too long or calls back too often to
    /// gain, or the system gives no executable memory.
    #[allow(clippy::too_many_arguments)]
    pub fn get(
        &self,
        steps: &[Step],
        chains: &[(u32, bool)],
        constants: &[(u32, f64)],
        pinned: usize,
        crisp: bool,
        avx2: bool,
        plain: bool,
        noise_latents: bool,
    ) -> Option<&ForwardCode> {
        self.0.get(crisp, avx2, || {
            if !supported(avx2)
                || steps.len() > MAX_STEPS
                || sweep::call_backs(steps) * STEPS_PER_CALL > steps.len()
            {
                return None;
            }
            let (mut slots, mut params, mut latents, mut weights) = (0, 0, 0, 0);
            for step in steps {
                slots = slots.max(step.out as usize + 1);
                let (ops, n) = super::instr::operands(&step.op);
                let mut read = ops[..n].to_vec();
                match step.op {
                    Op::Param { k } => params = params.max(k as usize + 1),
                    Op::If {
                        cache,
                        product,
                        reuse,
                        ..
                    } if !crisp && cache != super::instr::UNREAD => {
                        let kept = if product && !reuse { 1 } else { 2 };
                        weights = weights.max(cache as usize + kept);
                    }
                    Op::Latent { i }
                    | Op::SelectLatent { i, .. }
                    | Op::SelectLessLatent { i, .. } => latents = latents.max(i as usize + 1),
                    Op::SumChain { from, to, .. } | Op::SelectChain { from, to, .. } => {
                        read.extend(chains[from as usize..to as usize].iter().map(|&(t, _)| t));
                    }
                    _ => {}
                }
                for s in read {
                    slots = slots.max(s as usize + 1);
                }
            }
            // Displacements are 32-bit.
            if slots * std::mem::size_of::<Lanes>() > i32::MAX as usize / 2 {
                return None;
            }
            let emit_forward = if avx2 {
                emit::forward::<avx2::Avx2>
            } else {
                emit::forward::<avx512::Avx512>
            };
            let (parts, entry, consts, coverage) = emit_forward(
                steps,
                chains,
                constants,
                pinned,
                crisp,
                plain,
                noise_latents,
            )
            .ok()?;
            let code = Mapped::new(parts, entry)?;
            Some(ForwardCode {
                code,
                consts,
                slots,
                params,
                latents,
                weights,
                steps: steps.len(),
                noise_latents,
                coverage,
            })
        })
    }
}

/// Reverse plans with more steps than this are not compiled: the code takes about 100 bytes
/// a step, so this bounds it by 5 MB (the forward code's bound, [`MAX_STEPS`], allows about
/// twice that). Compiling takes about 5 microseconds a step, which the faster sweeps repay
/// within a few hundred chunks whatever the plan's length. The bound covers the
/// 10,000-student survey (20,600 steps), whose code streams from L3: its DSGD sample ran up
/// to 1.07x faster compiled on a quiet host, and no slower on a busy one.
const MAX_REVERSE_STEPS: usize = 50_000;

/// One reverse plan in machine code.
#[derive(Debug)]
pub(super) struct ReverseCode {
    code: Mapped,
    /// The constants the code reads (through [`Frame::consts`]).
    pub consts: Vec<f64>,
    /// Value places the code reads (all below this).
    pub slots: usize,
    /// Adjoint places it touches (all below this).
    pub adjoints: usize,
    /// Weight places it reads (all below this).
    pub weights: usize,
    pub coverage: Coverage,
}

impl ReverseCode {
    /// The code of `plan` under smoothed (`smooth`) or crisp semantics in AVX-512
    /// instructions, or AVX2 ones (`avx2`), or `None` where the CPU lacks them, the plan is
    /// too long or calls back too often to gain, or the system gives no executable memory.
    fn compile(
        plan: &Plan,
        smooth: bool,
        constants: &[(u32, f64)],
        avx2: bool,
    ) -> Option<ReverseCode> {
        if !supported(avx2)
            || plan.steps.len() > MAX_REVERSE_STEPS
            || reverse::call_backs(plan) * STEPS_PER_CALL > plan.steps.len()
        {
            return None;
        }
        let (mut slots, mut adjoints, mut weights) = (0, 0, 0);
        let mut adj = |t: &Target| {
            if t.adj != super::instr::NONE {
                adjoints = adjoints.max(t.adj as usize + 1);
            }
        };
        plan.chain_targets.iter().for_each(&mut adj);
        for rs in &plan.steps {
            rs.to.iter().for_each(&mut adj);
            adj(&Target {
                adj: rs.ad,
                first: false,
            });
            let (ops, n) = super::instr::operands(&rs.step.op);
            for &s in ops[..n].iter().chain([&rs.step.out]) {
                slots = slots.max(s as usize + 1);
            }
            if let Op::If { cache, product, .. } = rs.step.op
                && smooth
            {
                // A product of the weights is kept in one place, the weights in two.
                weights = weights.max(cache as usize + if product { 1 } else { 2 });
            }
        }
        if slots.max(adjoints).max(weights) * std::mem::size_of::<Lanes>() > i32::MAX as usize / 2 {
            return None;
        }
        let (parts, consts, coverage) = if avx2 {
            reverse::reverse::<avx2::Avx2>(plan, smooth, constants).ok()?
        } else {
            reverse::reverse::<avx512::Avx512>(plan, smooth, constants).ok()?
        };
        let code = Mapped::new(parts, 0)?;
        Some(ReverseCode {
            code,
            consts,
            slots,
            adjoints,
            weights,
            coverage,
        })
    }

    /// Runs the code on `frame`.
    ///
    /// # Safety
    /// `frame` must point to `slots` value places, `adjoints` adjoint places and `weights`
    /// weight places; `call_back` must run the interpreter's reverse steps on the same places.
    pub unsafe fn run(&self, frame: &mut Frame) {
        // SAFETY: the code was written for this entry by `reverse::reverse`, and it touches
        // what the caller guarantees.
        unsafe { self.code.enter(frame) }
    }
}

/// A tape's compiled reverse sweeps, made at first use: smoothed and crisp, in AVX-512 and
/// in AVX2 instructions.
#[derive(Default, Debug)]
pub(super) struct CompiledReverse(Builds<ReverseCode>);

impl Clone for CompiledReverse {
    /// A clone compiles again when used.
    fn clone(&self) -> Self {
        CompiledReverse::default()
    }
}

impl CompiledReverse {
    /// The code for `plan` under smoothed (`smooth`) or crisp semantics, in AVX2
    /// instructions (`avx2`) or AVX-512 ones, compiled at the first call.
    /// `constants` are places that hold a constant for good (and its value).
    pub fn get(
        &self,
        plan: &Plan,
        smooth: bool,
        constants: &[(u32, f64)],
        avx2: bool,
    ) -> Option<&ReverseCode> {
        self.0.get(smooth, avx2, || {
            ReverseCode::compile(plan, smooth, constants, avx2)
        })
    }
}
