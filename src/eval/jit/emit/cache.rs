//! The register cache of the forward emitter: which value place each register pair holds,
//! which pair a new value takes, and which places were looked up and not found (read from
//! memory, so their values must be stored). How many pairs, and which a routine's call
//! loses, is the width's (`Vector::PAIRS`).

use std::cell::RefCell;

use super::super::super::instr::NONE;

/// Where a value is: in register pair `p`, or only in its slot.
#[derive(Clone, Copy)]
pub(in super::super) enum Operand {
    Pair(usize),
    Slot(u32),
}

/// Which slot each register pair holds, and the next pair to reuse; and the slots looked
/// up and not found since the emitter last asked ([`Cache::take_missed`]), which the code
/// reads from memory.
pub(in super::super) struct Cache {
    holds: Vec<u32>,
    /// The entries a routine's call loses.
    routine: std::ops::Range<usize>,
    next: usize,
    missed: RefCell<Vec<u32>>,
}

impl Cache {
    /// A cache of `entries` register pairs, of which a routine's call loses `routine`.
    pub(in super::super) fn with(entries: usize, routine: std::ops::Range<usize>) -> Self {
        Cache {
            holds: vec![NONE; entries],
            routine,
            next: 0,
            missed: RefCell::new(Vec::new()),
        }
    }

    /// The slots looked up and not found since the last call.
    pub(in super::super) fn take_missed(&self) -> Vec<u32> {
        std::mem::take(&mut *self.missed.borrow_mut())
    }

    pub(in super::super) fn clear(&mut self) {
        self.holds.fill(NONE);
    }

    /// Empty, and taking pairs from the first: the state each iteration of a loop starts
    /// in, so that all of them, run in one body, find their values where the first does.
    pub(in super::super) fn reset(&mut self) {
        self.clear();
        self.next = 0;
    }

    /// Forgets the pairs a routine uses as scratch.
    pub(in super::super) fn lose_routine_pairs(&mut self) {
        for p in self.routine.clone() {
            self.holds[p] = NONE;
        }
    }

    pub(in super::super) fn find(&self, slot: u32) -> Operand {
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
    pub(in super::super) fn free(&mut self, keep: &[Operand]) -> Option<usize> {
        let n = self.holds.len();
        for _ in 0..n {
            let p = self.next;
            self.next = (self.next + 1) % n;
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
    pub(in super::super) fn take(&mut self, keep: &[Operand]) -> usize {
        debug_assert!(keep.len() < self.holds.len());
        self.free(keep)
            .expect("a step of few operands leaves a pair free")
    }

    /// Records that pair `p` now holds `slot` (the only pair that does).
    pub(in super::super) fn set(&mut self, p: usize, slot: u32) {
        for s in &mut self.holds {
            if *s == slot {
                *s = NONE;
            }
        }
        self.holds[p] = slot;
    }

    /// The operands of the sum-chain terms `chain` (the places they read).
    pub(in super::super) fn terms(&self, chain: &[(u32, bool)]) -> Vec<Operand> {
        chain.iter().map(|&(t, _)| self.find(t)).collect()
    }
}
