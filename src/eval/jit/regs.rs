//! The registers the compiled code gives roles to, and the comparison predicates it uses.

use iced_x86::code_asm::*;

/// Every vector register by number.
pub(super) const ZMM: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];
pub(super) const SIGN: AsmRegisterZmm = zmm30;
pub(super) const ZERO: AsmRegisterZmm = zmm31;

/// `g < 0` and `0 > g` as `vcmppd` predicates (ordered, quiet: false on NaN, like Rust's
/// `<`).
pub(super) const LT_OQ: i32 = 0x11;
pub(super) const GT_OQ: i32 = 0x1e;
/// `x >= 0` (false on NaN), `x != 0` (true on NaN) and "is NaN" as predicates.
pub(super) const GE_OQ: i32 = 0x1d;
pub(super) const NEQ_UQ: i32 = 0x04;
pub(super) const UNORD_Q: i32 = 0x03;
/// `x == 0` and `x <= 0` (false on NaN).
pub(super) const EQ_OQ: i32 = 0x00;
pub(super) const LE_OQ: i32 = 0x12;

/// Scratch registers.
pub(super) const X: [AsmRegisterZmm; 10] = [
    zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27, zmm28, zmm29,
];
