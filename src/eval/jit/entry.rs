//! The instructions every compiled sweep starts and ends with, and its call back into the
//! interpreter, shared by the forward and reverse code: the System V ABI's callee-saved
//! registers, the frame (`rdi` on entry) kept in `rbx`, and the registers a width keeps
//! constants in set (again after every call, which may change any vector register): `zmm30`
//! and `zmm31` to `-0.0` and zero in AVX-512 code ([`constants`]).

use iced_x86::IcedError;
use iced_x86::code_asm::*;

use super::frame;
use super::regs::{SIGN, ZERO};

/// Saves the callee-saved registers, puts the frame in `rbx`, loads the value places into
/// `r12`, each `(register, frame field offset)` of `loads`, the constants' table into `rbp`,
/// and sets the constants' registers (`constants`). Every sweep reads the values at `r12` and
/// its constants at `rbp`; `loads` are the places of its own.
pub(super) fn enter(
    a: &mut CodeAssembler,
    loads: &[(AsmRegister64, i32)],
    constants: Constants,
) -> Result<(), IcedError> {
    for r in [rbx, rbp, r12, r13, r14, r15] {
        a.push(r)?;
    }
    // Six pushes and the return address: 56 bytes; calls need 16-byte alignment.
    a.sub(rsp, 8)?;
    a.mov(rbx, rdi)?;
    for &(r, field) in [(r12, frame::VALUES)]
        .iter()
        .chain(loads)
        .chain(&[(rbp, frame::CONSTS)])
    {
        a.mov(r, qword_ptr(rbx + field))?;
    }
    constants(a)
}

/// What sets the registers a width keeps constants in.
pub(super) type Constants = fn(&mut CodeAssembler) -> Result<(), IcedError>;

/// `zmm30` = `-0.0` and `zmm31` = zero in every lane (the AVX-512 code's [`Constants`]).
pub(super) fn constants(a: &mut CodeAssembler) -> Result<(), IcedError> {
    a.vbroadcastsd(SIGN, qword_ptr(rbx + frame::SIGN))?;
    a.vxorpd(ZERO, ZERO, ZERO)
}

/// Restores what [`enter`] saved and returns.
pub(super) fn leave(a: &mut CodeAssembler) -> Result<(), IcedError> {
    a.vzeroupper()?;
    a.add(rsp, 8)?;
    for r in [r15, r14, r13, r12, rbp, rbx] {
        a.pop(r)?;
    }
    a.ret()
}

/// Calls the frame's `call_back` on steps `from..to`, then sets the constants' registers
/// again (`constants`).
pub(super) fn call_back(
    a: &mut CodeAssembler,
    from: usize,
    to: usize,
    constants: Constants,
) -> Result<(), IcedError> {
    a.mov(rdi, rbx)?;
    a.mov(esi, from as u32)?;
    a.mov(edx, to as u32)?;
    a.call(qword_ptr(rbx + frame::CALL_BACK))?;
    constants(a)
}

/// The runs of consecutive `true`s in `called` (whether each step is handed back): the calls
/// back a sweep's code makes, one per run.
pub(super) fn runs(called: impl IntoIterator<Item = bool>) -> usize {
    let mut runs = 0;
    let mut in_run = false;
    for called in called {
        runs += usize::from(called && !in_run);
        in_run = called;
    }
    runs
}
