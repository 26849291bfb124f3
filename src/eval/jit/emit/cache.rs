//! The register cache of the forward emitter: which value place each register pair holds,
//! which pair a new value takes, and which places were looked up and not found (read from
//! memory, so their values must be stored).

use std::cell::RefCell;

use super::super::super::instr::NONE;

/// Register pairs that cache values.
pub(super) const PAIRS: usize = 10;

/// The cache pairs whose registers (`zmm10..zmm19`) the routines use as scratch: a call to
/// one loses them.
const ROUTINE_PAIRS: std::ops::Range<usize> = 5..10;

/// Where a value is: in register pair `p`, or only in its slot.
#[derive(Clone, Copy)]
pub(super) enum Operand {
    Pair(usize),
    Slot(u32),
}

/// Which slot each register pair holds, and the next pair to reuse; and the slots looked
/// up and not found since the emitter last asked ([`Cache::take_missed`]), which the code
/// reads from memory.
pub(super) struct Cache {
    holds: [u32; PAIRS],
    next: usize,
    missed: RefCell<Vec<u32>>,
}

impl Cache {
    pub(super) fn new() -> Self {
        Cache {
            holds: [NONE; PAIRS],
            next: 0,
            missed: RefCell::new(Vec::new()),
        }
    }

    /// The slots looked up and not found since the last call.
    pub(super) fn take_missed(&self) -> Vec<u32> {
        std::mem::take(&mut *self.missed.borrow_mut())
    }

    pub(super) fn clear(&mut self) {
        self.holds = [NONE; PAIRS];
    }

    /// Empty, and taking pairs from the first: the state each iteration of a loop starts
    /// in, so that all of them, run in one body, find their values where the first does.
    pub(super) fn reset(&mut self) {
        self.clear();
        self.next = 0;
    }

    /// Forgets the pairs a routine uses as scratch ([`ROUTINE_PAIRS`]).
    pub(super) fn lose_routine_pairs(&mut self) {
        for p in ROUTINE_PAIRS {
            self.holds[p] = NONE;
        }
    }

    pub(super) fn find(&self, slot: u32) -> Operand {
        match self.holds.iter().position(|&s| s == slot) {
            Some(p) => Operand::Pair(p),
            None => {
                self.missed.borrow_mut().push(slot);
                Operand::Slot(slot)
            }
        }
    }

    /// A pair for a new value, none of `keep` (the pairs of the step's operands), if one is:
    /// a sum chain's terms may fill every pair.
    pub(super) fn free(&mut self, keep: &[Operand]) -> Option<usize> {
        for _ in 0..PAIRS {
            let p = self.next;
            self.next = (self.next + 1) % PAIRS;
            if !keep
                .iter()
                .any(|o| matches!(o, Operand::Pair(q) if *q == p))
            {
                return Some(p);
            }
        }
        None
    }

    /// [`Cache::free`] for a step of at most four operands, which leaves one.
    pub(super) fn take(&mut self, keep: &[Operand]) -> usize {
        debug_assert!(keep.len() < PAIRS);
        self.free(keep)
            .expect("a step of few operands leaves a pair free")
    }

    /// Records that pair `p` now holds `slot` (the only pair that does).
    pub(super) fn set(&mut self, p: usize, slot: u32) {
        for s in &mut self.holds {
            if *s == slot {
                *s = NONE;
            }
        }
        self.holds[p] = slot;
    }
}
