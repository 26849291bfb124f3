//! Where no machine code is compiled (the crate built without its `jit` feature, or for a
//! target other than x86-64: the code is AVX-512): the stand-ins the rest of `eval` names,
//! which never hold any.

use super::instr::{Plan, Step};

/// How many steps the code runs itself and how many it hands back (for tests and reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub inline: usize,
    pub called: usize,
    pub looped: usize,
}

/// Never made on this target.
pub(super) struct ForwardCode {
    pub steps: usize,
    pub coverage: Coverage,
}

/// A layout's compiled forward sweeps: none on this target.
#[derive(Clone, Debug, Default)]
pub(super) struct Compiled;

impl Compiled {
    /// Nothing is compiled on this target.
    #[allow(clippy::too_many_arguments)]
    pub fn get(
        &self,
        _: &[Step],
        _: &[(u32, bool)],
        _: &[(u32, f64)],
        _: usize,
        _: bool,
        _: bool,
        _: bool,
        _: bool,
    ) -> Option<&ForwardCode> {
        None
    }
}

/// Never made on this target.
pub(super) struct ReverseCode {
    pub coverage: Coverage,
}

/// A tape's compiled reverse sweeps: none on this target.
#[derive(Clone, Debug, Default)]
pub(super) struct CompiledReverse;

impl CompiledReverse {
    /// Nothing is compiled on this target.
    pub fn get(&self, _: &Plan, _: bool, _: &[(u32, f64)], _: bool) -> Option<&ReverseCode> {
        None
    }
}
