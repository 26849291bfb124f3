//! What the AVX-512 and the AVX2 forward code share besides their instructions: the driver
//! that assembles the routines first and then the sweep in two passes (the first finding
//! which values some later step or call reads from memory, the second storing only those and
//! the pinned ones), in parts of [`PART_STEPS`] steps, with a call back into the interpreter
//! for each run of steps with no inline form. Each build says through [`Sweep`] how it emits
//! a run of inline steps, a call back, and its entry and exit.

use iced_x86::IcedError;
use iced_x86::code_asm::CodeAssembler;

use crate::ir::CompiledForm;

use super::super::instr::{NONE, Op, Step, each_read, forward_only_op, non_primitive_op};
use super::emit::cache::Cache;
use super::{Parts, entry};

/// How many steps the code runs itself and how many it hands back (for tests and reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub inline: usize,
    pub called: usize,
    /// Of the steps run inline, those in loops over repeated blocks (`repeat.rs`).
    pub looped: usize,
}

/// Runs of consecutive steps without an inline form: the calls back the code would make.
pub(super) fn call_backs(steps: &[Step]) -> usize {
    entry::runs(steps.iter().map(|step| !inline(&step.op)))
}

/// Whether `op` has an inline form (under smoothed and crisp semantics alike: forced sweeps
/// and per-lane forcing are never compiled): a primitive where its descriptor says so
/// (`exp`, `ln`, `sqrt`, negation and the arithmetic), every other step.
pub(super) fn inline(op: &Op) -> bool {
    match *op {
        Op::Binary { op, .. } => op.info().forward == CompiledForm::Inline,
        Op::Unary { op, .. } => op.info().forward == CompiledForm::Inline,
        non_primitive_op!() | forward_only_op!() => true,
    }
}

/// Steps assembled at a time. The assembler keeps every instruction of its part until it
/// encodes them (about 40 bytes each, some twenty a step): a 100,000-step layout in one part
/// took 100 MB; in parts, memory stays a few megabytes beside the code.
pub(super) const PART_STEPS: usize = 2_048;

/// A routine's body, emitted once at the start of the code and called.
pub(super) type Routine = fn(&mut CodeAssembler) -> Result<(), IcedError>;

/// Which steps' values the code stores in their places.
pub(super) enum Stores {
    /// First pass: finding out. `writer[p]` is the step whose value place `p` holds (`NONE`:
    /// none of this code's, or a call's), `needed[k]` whether step `k`'s value is read from
    /// memory.
    Finding { writer: Vec<u32>, needed: Vec<bool> },
    /// Second pass: the pinned values and those `needed`.
    Only(Vec<bool>),
}

impl Stores {
    /// First pass: marks the values of the places `missed` (looked up in the register cache
    /// and not found) as needed in memory.
    pub(super) fn note_missed(&mut self, missed: Vec<u32>) {
        if let Stores::Finding { writer, needed } = self {
            for s in missed {
                if let Some(&w) = writer.get(s as usize)
                    && w != NONE
                {
                    needed[w as usize] = true;
                }
            }
        }
    }

    /// First pass: the steps `called` hand back read their operands from memory and leave
    /// their values there.
    fn called(&mut self, called: &[Step], chains: &[(u32, bool)]) {
        if let Stores::Finding { writer, needed } = self {
            for st in called {
                each_read(st, chains, |s| {
                    if let Some(&w) = writer.get(s as usize)
                        && w != NONE
                    {
                        needed[w as usize] = true;
                    }
                });
                if let Some(w) = writer.get_mut(st.out as usize) {
                    *w = NONE;
                }
            }
        }
    }

    /// Whether the value of step `index`, in place `out`, goes to memory (first pass: always,
    /// noting who wrote the place; second: where it is needed or `out` below `pinned`).
    pub(super) fn store(&mut self, index: usize, out: u32, pinned: u32) -> bool {
        match self {
            Stores::Finding { writer, .. } => {
                let p = out as usize;
                if writer.len() <= p {
                    writer.resize(p + 1, NONE);
                }
                writer[p] = index as u32;
                true
            }
            Stores::Only(needed) => needed[index] || out < pinned,
        }
    }
}

/// One build's emitter of a sweep, as the driver [`forward`] uses it.
pub(super) trait Sweep {
    /// The instructions written since the last part.
    fn assembler(&mut self) -> &mut CodeAssembler;
    fn cache(&self) -> &Cache;
    fn stores(&mut self) -> &mut Stores;
    fn coverage(&mut self) -> &mut Coverage;
    fn prologue(&mut self) -> Result<(), IcedError>;
    fn epilogue(&mut self) -> Result<(), IcedError>;
    /// Emits inline steps from `k` on (`steps[k]` has an inline form), counting them in the
    /// coverage; returns the index of the first step not emitted.
    fn inline_steps(&mut self, steps: &[Step], k: usize) -> Result<usize, IcedError>;
    /// A call back into the interpreter for steps `from..to`.
    fn call_back(&mut self, from: usize, to: usize) -> Result<(), IcedError>;
    /// The code's constant table and its coverage, after the second pass.
    fn finish(self) -> (Vec<f64>, Coverage);
}

/// The code of `steps`: `routines` first, then the sweep the emitter `make` builds (given
/// which values to store and where the routines start), with its entry's offset, its
/// constants and its coverage.
pub(super) fn forward<E: Sweep>(
    steps: &[Step],
    chains: &[(u32, bool)],
    routines: [Routine; 3],
    mut make: impl FnMut(Stores, [u64; 3]) -> Result<E, IcedError>,
) -> Result<(Parts, usize, Vec<f64>, Coverage), IcedError> {
    let mut bytes = Parts::default();
    let mut routine_at = [0; 3];
    for (at, body) in routine_at.iter_mut().zip(routines) {
        *at = bytes.len() as u64;
        let mut a = CodeAssembler::new(64)?;
        body(&mut a)?;
        bytes.push(a.assemble(*at)?);
    }
    let entry = bytes.len();
    let mut stores = Stores::Finding {
        writer: Vec::new(),
        needed: vec![false; steps.len()],
    };
    for _pass in 0..2 {
        let mut e = make(stores, routine_at)?;
        let finding = matches!(e.stores(), Stores::Finding { .. });
        let mut code = Parts::starting_at(bytes.len());
        e.prologue()?;
        let mut k = 0;
        let mut part_from = 0;
        while k < steps.len() {
            if k - part_from >= PART_STEPS {
                assemble_part(e.assembler(), &mut code, finding)?;
                part_from = k;
            }
            if inline(&steps[k].op) {
                k = e.inline_steps(steps, k)?;
            } else {
                let from = k;
                while k < steps.len() && !inline(&steps[k].op) {
                    k += 1;
                }
                let missed = e.cache().take_missed();
                e.stores().note_missed(missed);
                e.stores().called(&steps[from..k], chains);
                e.call_back(from, k)?;
                e.coverage().called += k - from;
            }
        }
        e.epilogue()?;
        assemble_part(e.assembler(), &mut code, finding)?;
        stores = match std::mem::replace(e.stores(), Stores::Only(Vec::new())) {
            Stores::Finding { needed, .. } => Stores::Only(needed),
            Stores::Only(_) => {
                bytes.append(code);
                let (consts, coverage) = e.finish();
                return Ok((bytes, entry, consts, coverage));
            }
        };
    }
    unreachable!("the second pass returns")
}

/// Encodes the instructions written in `a` since the last part, after `bytes` (drops them in
/// the first pass, `finding`), and leaves `a` empty.
fn assemble_part(a: &mut CodeAssembler, bytes: &mut Parts, finding: bool) -> Result<(), IcedError> {
    let mut part = std::mem::replace(a, CodeAssembler::new(64)?);
    if finding {
        return Ok(());
    }
    let at = bytes.len() as u64;
    bytes.push(part.assemble(at)?);
    Ok(())
}
