//! `exp` and `ln` over a chunk of lanes in vector code, giving exactly the bits of `f64::exp`
//! and `f64::ln` for every input.
//!
//! The tape's results must not move by one ulp (xornet's final ELBO moves by up to 13 % when
//! they do), so a fast `exp` has to be libm's `exp`, bit for bit. The AVX2/FMA kernels
//! (`avx2.rs`) evaluate each lane to 2^-61 relative or better and keep the exact error of the final
//! rounding; a lane whose true value is far enough from a rounding boundary that libm (within
//! its documented 0.511/0.519 ulp) must round it the same way takes the vector result, and
//! every other lane (about 3 % for `exp`, 6 % for `ln`, plus NaN, infinities, subnormal results
//! or arguments, overflow) is recomputed by std alone. `exp(x) = +0` for `x < -746` is exact in
//! vector code: the smoothing weights' `exp(-|g/eta|)` lands there often.
//!
//! Two kernel sets: AVX-512 (`avx512.rs`, eight lanes per instruction, `exp`'s table in
//! registers; `ln` is the AVX2 one) where the CPU has AVX-512F, else AVX2/FMA (`avx2.rs`,
//! four lanes). Every lane
//! of either is std's bits or recomputed by std, so the choice never shows in a result.
//! At first use the tables are computed (`tables.rs`) and the kernels checked against std on a
//! few thousand fixed inputs; on a CPU without AVX2/FMA, or a libm that rounds differently, the
//! fast path stays off for the process and every lane goes to std (an AVX-512 set failing the
//! check leaves the AVX2 one in use).
//!
//! Not here: where the tape uses these (`kernels.rs`).

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod tables;

use std::sync::OnceLock;

use super::instr::{CHUNK, Lanes};
use tables::Tables;

/// Every lane: the fallback mask when the fast path is off.
const ALL: u32 = if CHUNK >= 32 {
    u32::MAX
} else {
    (1u32 << CHUNK) - 1
};

const _: () = assert!(
    CHUNK.is_multiple_of(4) && CHUNK <= 32,
    "the kernels run 4 lanes at a time"
);

/// The kernel sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// AVX2 and FMA, four lanes per instruction.
    Avx2,
    /// AVX-512F, eight lanes per instruction.
    Avx512,
}

/// The tables and the kernel set in use.
struct State {
    tables: Box<Tables>,
    isa: Isa,
}

/// `None` where the fast path is off.
static STATE: OnceLock<Option<State>> = OnceLock::new();

#[inline(always)]
fn state() -> Option<&'static State> {
    STATE.get_or_init(init).as_ref()
}

fn init() -> Option<State> {
    if !crate::cpu::avx2_fma() {
        return None;
    }
    let tables = Tables::compute();
    let isa = [Isa::Avx512, Isa::Avx2]
        .into_iter()
        .find(|&isa| supported(isa) && self_check(&tables, isa))?;
    Some(State { tables, isa })
}

/// Whether this CPU runs `isa`'s kernels.
fn supported(isa: Isa) -> bool {
    match isa {
        Isa::Avx2 => crate::cpu::avx2_fma(),
        Isa::Avx512 => crate::cpu::avx512f(),
    }
}

/// Whether the vector path is in use in this process (false: every lane is std's).
pub fn active() -> bool {
    state().is_some()
}

/// The kernel set in use, if any.
pub fn isa() -> Option<Isa> {
    state().map(|s| s.isa)
}

/// `f64::exp` of every lane.
#[inline(always)]
pub fn exp_lanes(a: &Lanes) -> Lanes {
    exp_lanes_fallbacks(a).0
}

/// `f64::ln` of every lane.
#[inline(always)]
pub fn ln_lanes(a: &Lanes) -> Lanes {
    ln_lanes_fallbacks(a).0
}

/// [`exp_lanes`] and the mask of lanes that were computed by std (bit `l` for lane `l`).
#[inline(always)]
pub fn exp_lanes_fallbacks(a: &Lanes) -> (Lanes, u32) {
    match state() {
        Some(s) => run(&s.tables, s.isa, a, Fun::Exp),
        None => (a.map(f64::exp), ALL),
    }
}

/// [`ln_lanes`] and the mask of lanes that were computed by std (bit `l` for lane `l`).
#[inline(always)]
pub fn ln_lanes_fallbacks(a: &Lanes) -> (Lanes, u32) {
    match state() {
        Some(s) => run(&s.tables, s.isa, a, Fun::Ln),
        None => (a.map(f64::ln), ALL),
    }
}

/// [`exp_lanes_fallbacks`] by the kernel set `isa`, whichever is in use (for tests that hold
/// both sets to std); `None` where the fast path is off or the CPU lacks `isa`.
pub fn exp_lanes_fallbacks_on(isa: Isa, a: &Lanes) -> Option<(Lanes, u32)> {
    let s = state().filter(|_| supported(isa))?;
    Some(run(&s.tables, isa, a, Fun::Exp))
}

/// [`ln_lanes_fallbacks`] by the kernel set `isa` (see [`exp_lanes_fallbacks_on`]).
pub fn ln_lanes_fallbacks_on(isa: Isa, a: &Lanes) -> Option<(Lanes, u32)> {
    let s = state().filter(|_| supported(isa))?;
    Some(run(&s.tables, isa, a, Fun::Ln))
}

#[derive(Clone, Copy)]
enum Fun {
    Exp,
    Ln,
}

/// `fun` over a chunk by the kernels of `isa`, which the caller has checked the CPU runs.
#[inline(always)]
fn run(t: &Tables, isa: Isa, a: &Lanes, fun: Fun) -> (Lanes, u32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `isa` is `supported` (the callers check it, `init` for the state's own).
    unsafe {
        match (isa, fun) {
            (Isa::Avx512, Fun::Exp) => avx512::exp_chunk(t, a),
            (Isa::Avx2, Fun::Exp) => avx2::exp_chunk(t, a),
            // `avx512.rs` says why there is no AVX-512 `ln`.
            (_, Fun::Ln) => avx2::ln_chunk(t, a),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, isa);
        match fun {
            Fun::Exp => (a.map(f64::exp), ALL),
            Fun::Ln => (a.map(f64::ln), ALL),
        }
    }
}

/// Whether the kernels give std's bits on 4,096 fixed inputs per function (tens of
/// microseconds): the guard against a libm that rounds otherwise than the one the error
/// bounds in `avx2.rs` are about.
fn self_check(t: &Tables, isa: Isa) -> bool {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let unit = |u: u64| (u >> 11) as f64 / (1u64 << 53) as f64;
    for round in 0..4096 / CHUNK {
        let mut xe = [0.0; CHUNK];
        let mut xl = [0.0; CHUNK];
        for l in 0..CHUNK {
            let (u, v) = (next(), next());
            xe[l] = match round % 3 {
                0 => -750.0 + 1462.0 * unit(u),
                1 => -40.0 + 80.0 * unit(u),
                _ => -1.0 + 2.0 * unit(u),
            };
            xl[l] = match round % 3 {
                // Any positive finite double, subnormals included.
                0 => f64::from_bits(v % 0x7ff0_0000_0000_0000),
                1 => 1.0 + (unit(v) - 0.5) * 0.01,
                _ => 1e-3 + 1e3 * unit(v),
            };
        }
        let (ye, yl) = (run(t, isa, &xe, Fun::Exp).0, run(t, isa, &xl, Fun::Ln).0);
        for l in 0..CHUNK {
            if ye[l].to_bits() != xe[l].exp().to_bits() || yl[l].to_bits() != xl[l].ln().to_bits() {
                return false;
            }
        }
    }
    true
}
