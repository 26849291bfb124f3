//! `exp` and `ln` over a chunk of lanes: the scalar definitions of [`crate::elementary`] in a
//! lane loop, which LLVM vectorises where the caller is compiled for AVX2/FMA.
//!
//! The tape calls these from inside its sweeps, so they run in whichever build of the sweeps
//! the workspace chose; [`exp_lanes_on`] and [`ln_lanes_on`] pick the kernel set explicitly,
//! so tests can hold the builds to the same bits and benches can time them.
//!
//! Not here: where the tape uses them (`kernels.rs`).

use crate::elementary;

use super::instr::{CHUNK, Lanes};

/// The builds of a vector routine the binary may choose at run time. Every routine has the
/// same operations in the same order in each, so the choice never shows in a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelSet {
    /// 128-bit: on x86-64 SSE2 with FMA where the CPU has it (`crate::cpu::fma`; else the
    /// baseline build, whose fused multiply-adds are calls to the runtime's `fma`), and any
    /// other target's baseline (aarch64: NEON, with FMA).
    Portable,
    /// AVX2 and FMA, four lanes per instruction.
    Avx2,
    /// AVX-512 (with AVX2/FMA), eight lanes per instruction. Only the tape's forward sweep
    /// has such a build (and only some tapes run faster in it: see `kernel_choice.rs`); the
    /// other routines run their AVX2 build in this set.
    Avx512,
    /// [`KernelSet::Avx512`] with the forward sweep compiled to machine code per tape
    /// (`eval/jit`), where it can run; the interpreter's AVX-512 build elsewhere, and in a
    /// crate built without the `jit` feature (which [`KernelSet::available`] then omits).
    Jit,
    /// [`KernelSet::Avx2`] with the forward sweep compiled to AVX2 machine code per tape
    /// (`eval/jit/avx2`), where it can run; the interpreter's AVX2 build elsewhere, and in a
    /// crate built without the `jit` feature (which [`KernelSet::available`] then omits).
    Avx2Jit,
}

impl KernelSet {
    /// The widest set this CPU runs.
    pub fn best() -> KernelSet {
        if crate::cpu::avx512() {
            KernelSet::Avx512
        } else if crate::cpu::avx2_fma() {
            KernelSet::Avx2
        } else {
            KernelSet::Portable
        }
    }

    /// Every set this CPU runs, portable first.
    pub fn available() -> Vec<KernelSet> {
        let mut sets = vec![KernelSet::Portable];
        if crate::cpu::avx2_fma() {
            sets.push(KernelSet::Avx2);
            if cfg!(all(feature = "jit", target_arch = "x86_64")) {
                sets.push(KernelSet::Avx2Jit);
            }
        }
        if crate::cpu::avx512() {
            sets.push(KernelSet::Avx512);
            if cfg!(all(feature = "jit", target_arch = "x86_64")) {
                sets.push(KernelSet::Jit);
            }
        }
        sets
    }
}

/// `exp` of every lane (in the caller's build).
#[inline(always)]
pub fn exp_lanes(a: &Lanes) -> Lanes {
    lanes(a, elementary::exp)
}

/// `ln` of every lane (in the caller's build).
#[inline(always)]
pub fn ln_lanes(a: &Lanes) -> Lanes {
    lanes(a, elementary::ln)
}

/// `f` of every lane, inlined into the caller: `array::map` may stay a call, compiled
/// without the caller's FMA, where every `mul_add` becomes a call to libm's `fma`.
#[inline(always)]
fn lanes(a: &Lanes, f: impl Fn(f64) -> f64) -> Lanes {
    let mut out = [0.0; CHUNK];
    for (y, &x) in out.iter_mut().zip(a) {
        *y = f(x);
    }
    out
}

/// [`exp_lanes`] in the build `set`; `set` must be one of [`KernelSet::available`] (the
/// portable build runs otherwise).
pub fn exp_lanes_on(set: KernelSet, a: &Lanes) -> Lanes {
    #[cfg(target_arch = "x86_64")]
    if matches!(set, KernelSet::Avx512 | KernelSet::Jit) && crate::cpu::avx512() {
        // SAFETY: the CPU has AVX-512 (checked just above).
        return unsafe { exp_avx512(a) };
    }
    #[cfg(target_arch = "x86_64")]
    if set != KernelSet::Portable && crate::cpu::avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        return unsafe { exp_avx2(a) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::fma() {
        // SAFETY: the CPU has FMA (checked just above).
        return unsafe { exp_fma(a) };
    }
    let _ = set;
    exp_lanes(a)
}

/// [`ln_lanes`] in the build `set` (see [`exp_lanes_on`]).
pub fn ln_lanes_on(set: KernelSet, a: &Lanes) -> Lanes {
    #[cfg(target_arch = "x86_64")]
    if matches!(set, KernelSet::Avx512 | KernelSet::Jit) && crate::cpu::avx512() {
        // SAFETY: the CPU has AVX-512 (checked just above).
        return unsafe { ln_avx512(a) };
    }
    #[cfg(target_arch = "x86_64")]
    if set != KernelSet::Portable && crate::cpu::avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        return unsafe { ln_avx2(a) };
    }
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::fma() {
        // SAFETY: the CPU has FMA (checked just above).
        return unsafe { ln_fma(a) };
    }
    let _ = set;
    ln_lanes(a)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn exp_fma(a: &Lanes) -> Lanes {
    exp_lanes(a)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
fn ln_fma(a: &Lanes) -> Lanes {
    ln_lanes(a)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn exp_avx2(a: &Lanes) -> Lanes {
    exp_lanes(a)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn ln_avx2(a: &Lanes) -> Lanes {
    ln_lanes(a)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,avx512f,avx512dq,avx512vl,avx512bw")]
fn exp_avx512(a: &Lanes) -> Lanes {
    exp_lanes(a)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,avx512f,avx512dq,avx512vl,avx512bw")]
fn ln_avx512(a: &Lanes) -> Lanes {
    ln_lanes(a)
}
