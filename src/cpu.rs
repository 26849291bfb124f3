//! What the CPU can run, detected at run time: the one place that asks, so every choice of a
//! vector code path (the tape's sweeps, the estimators' loops, the vector maths) agrees.
//!
//! `is_x86_feature_detected!` caches its answer, so asking costs one relaxed atomic load.

/// Whether this CPU runs the AVX2/FMA builds of the hot loops.
pub fn avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU runs the AVX-512 builds (foundation, double and quad words, vector
/// lengths, bytes and words: what `#[target_feature(enable = ...)]` of those builds names,
/// besides AVX2/FMA).
pub fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        avx2_fma()
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU has the AES round instructions (AES-NI), which every AVX2 processor we
/// know of has; the normals' AVX2 build runs the generator's rounds with them.
pub fn aes() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("aes")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU runs the AES round on two blocks per instruction (VAES, with AVX2).
pub fn vaes() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        aes() && avx2_fma() && std::arch::is_x86_feature_detected!("vaes")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
