//! The registers a loop over a repeated block advances (`repeat.rs`), and where its moving
//! operands are: an index that moves by `d` per iteration is addressed as its first
//! iteration's place plus a register that holds `d` times the iteration number times the
//! index's size, scaled by 1, 2, 4 or 8 so that one register serves several amounts (the
//! survey's temporaries move by 2 places where its kept values move by 1).
//!
//! The registers are caller-saved ones the forward code leaves free (`rdx`, `r8`-`r11`); the
//! routines touch no general register and a loop contains no call back, so nothing else
//! changes them inside it.

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use super::repeat::{self, Item, Repeat, Unit};

const FREE: [AsmRegister64; 5] = [rdx, r8, r9, r10, r11];

/// Layouts and reverse plans of fewer steps than this run no loops. Their straight-line code
/// (about 90 bytes a forward step, 100 a reverse one) stays in the caches, where a loop only
/// adds its back edge and loses the values its register caches carried from one iteration
/// to the next: on Zen 4 the random walk (168 forward steps, 150 of them in loops) ran 0.84x
/// as fast looped, the 100-student survey (1,015 steps) the same, the 1,000-student one
/// (10,000 steps) 1.04x (DSGD) and 1.15x (Reparam) faster, and the 10,000-student one's
/// forward code shrank from 5.5 to 1.0 MB and its reverse code from 2 to 0.44 MB.
pub(super) const LOOP_FROM_STEPS: usize = 2_048;

/// Bytes of a value or weight place, and of a parameter, location or scale.
const PLACE_BYTES: i64 = 128;
const WORD_BYTES: i64 = 8;

/// What a register's index counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    /// Value and weight places.
    Place,
    /// Parameters, and latents' locations and scales.
    Word,
    /// Latents' noise (`r15` bytes apart).
    Noise,
}

/// The runs of repeated blocks among `steps` (each made an [`Item`] by `item`, `None` for
/// one a loop may not contain) that can run as loops, with their registers: none among
/// fewer than [`LOOP_FROM_STEPS`] steps.
pub(super) fn plan_loops<S>(
    steps: &[S],
    item: impl Fn(&S) -> Option<Item>,
) -> Vec<(Repeat, Looping)> {
    if steps.len() < LOOP_FROM_STEPS {
        return Vec::new();
    }
    let items: Vec<Option<Item>> = steps.iter().map(item).collect();
    repeat::find(&items)
        .into_iter()
        .filter_map(|run| {
            let looping = Looping::plan(&run)?;
            Some((run, looping))
        })
        .collect()
}

/// A register advancing by `base` indices of `class` per iteration.
#[derive(Clone, Copy, Debug)]
struct Advancing {
    reg: AsmRegister64,
    class: Class,
    base: i64,
}

/// How a loop finds its moving operands and when it ends.
#[derive(Clone, Debug)]
pub(super) struct Looping {
    regs: Vec<Advancing>,
    /// Each moving index of the first iteration: its register and the scale applied to it.
    index: Vec<(Class, Unit, u32, AsmRegister64, i32)>,
    reps: usize,
    /// A register counting iterations down, where no advancing register can tell the end.
    counter: Option<AsmRegister64>,
}

impl Looping {
    /// The registers for `repeat`, or `None` where it needs more than are free or an
    /// advance that does not fit an instruction's 32-bit immediate.
    pub fn plan(repeat: &Repeat) -> Option<Looping> {
        let mut wanted: Vec<(Class, Unit, u32, i64)> = Vec::new();
        for &(unit, x, d) in &repeat.shifts {
            match unit {
                Unit::Slot | Unit::Weight | Unit::Adjoint => {
                    wanted.push((Class::Place, unit, x, d))
                }
                Unit::Param => wanted.push((Class::Word, unit, x, d)),
                Unit::Latent => {
                    wanted.push((Class::Word, unit, x, d));
                    wanted.push((Class::Noise, unit, x, d));
                }
            }
        }
        // Smallest amounts first, so that larger ones can be their multiples.
        wanted.sort_by_key(|&(.., d)| (d.abs(), d < 0));
        let mut regs: Vec<Advancing> = Vec::new();
        let mut index = Vec::new();
        for (class, unit, x, d) in wanted {
            let found = regs.iter().find_map(|r| {
                let m = [1, 2, 4, 8]
                    .into_iter()
                    .find(|&m| r.class == class && r.base * m == d)?;
                Some((r.reg, m as i32))
            });
            let (reg, scale) = match found {
                Some(f) => f,
                None => {
                    let reg = *FREE.get(regs.len())?;
                    regs.push(Advancing {
                        reg,
                        class,
                        base: d,
                    });
                    (reg, 1)
                }
            };
            index.push((class, unit, x, reg, scale));
        }
        // Every register's last value (and its advance) must fit 32 bits, and one that is
        // not noise tells the end; otherwise a counter does.
        let reps = repeat.reps as i64;
        for r in &regs {
            if r.class != Class::Noise
                && i32::try_from(r.base * Self::size(r.class) * reps).is_err()
            {
                return None;
            }
        }
        let counter = if regs.iter().any(|r| r.class != Class::Noise) {
            None
        } else {
            Some(*FREE.get(regs.len())?)
        };
        Some(Looping {
            regs,
            index,
            reps: repeat.reps,
            counter,
        })
    }

    fn size(class: Class) -> i64 {
        match class {
            Class::Place => PLACE_BYTES,
            Class::Word | Class::Noise => WORD_BYTES,
        }
    }

    fn find(&self, class: Class, unit: Unit, x: u32) -> Option<(AsmRegister64, i32)> {
        self.index
            .iter()
            .find(|&&(c, u, v, ..)| c == class && u == unit && v == x)
            .map(|&(.., reg, scale)| (reg, scale))
    }

    /// The register (and scale) to add to the address of value place `x` (`Unit::Slot`),
    /// weight place `x` (`Unit::Weight`) or adjoint place `x` (`Unit::Adjoint`), where it
    /// moves.
    pub fn place(&self, unit: Unit, x: u32) -> Option<(AsmRegister64, i32)> {
        self.find(Class::Place, unit, x)
    }

    /// The register (and scale) to add to the address of parameter `x` (`Unit::Param`) or
    /// latent `x`'s location and scale (`Unit::Latent`), where it moves.
    pub fn word(&self, unit: Unit, x: u32) -> Option<(AsmRegister64, i32)> {
        self.find(Class::Word, unit, x)
    }

    /// The register (and scale) to add to latent `x`'s noise offset, where it moves.
    pub fn noise(&self, x: u32) -> Option<(AsmRegister64, i32)> {
        self.find(Class::Noise, Unit::Latent, x)
    }

    /// Before the loop: every register at the first iteration; then the loop's top, the
    /// label [`Looping::back_edge`] jumps back to.
    pub fn enter(&self, a: &mut CodeAssembler) -> Result<CodeLabel, IcedError> {
        for r in &self.regs {
            a.xor(r.reg, r.reg)?;
        }
        if let Some(c) = self.counter {
            a.mov(c, self.reps as u64)?;
        }
        let mut top = a.create_label();
        a.set_label(&mut top)?;
        Ok(top)
    }

    /// The end of an iteration: every register advanced, and back to `top` unless that was
    /// the last. Clobbers `rax`.
    pub fn back_edge(&self, a: &mut CodeAssembler, top: CodeLabel) -> Result<(), IcedError> {
        for r in &self.regs {
            match r.class {
                Class::Noise => {
                    a.imul_3(rax, r15, r.base as i32)?;
                    a.add(r.reg, rax)?;
                }
                class => a.add(r.reg, (r.base * Self::size(class)) as i32)?,
            }
        }
        match (
            self.counter,
            self.regs.iter().find(|r| r.class != Class::Noise),
        ) {
            (Some(c), _) => a.dec(c)?,
            (None, Some(r)) => {
                let end = r.base * Self::size(r.class) * self.reps as i64;
                a.cmp(r.reg, end as i32)?;
            }
            (None, None) => unreachable!("a plan has a counter where no register tells the end"),
        }
        a.jne(top)
    }
}
