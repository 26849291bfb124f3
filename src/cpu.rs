//! What the CPU can run, detected at run time: the one place that asks, so every choice of a
//! vector code path (the tape's sweeps, the estimators' loops, the vector maths) agrees.
//!
//! `is_x86_feature_detected!` caches its answer, so asking costs one relaxed atomic load.
//!
//! `DSGD_KERNELS=portable` or `DSGD_KERNELS=avx2` in the environment caps what is detected,
//! so that the narrower builds can be timed (or a suspected fault in a wider one ruled out)
//! on a CPU that runs more; results never depend on it, since every build gives the same
//! bits. Any other value is ignored, with a warning on stderr.

#[cfg(target_arch = "x86_64")]
use std::sync::OnceLock;

/// The widest builds the environment allows: 0 portable, 1 AVX2/FMA, 2 AVX-512.
#[cfg(target_arch = "x86_64")]
fn cap() -> u8 {
    static CAP: OnceLock<u8> = OnceLock::new();
    *CAP.get_or_init(|| match std::env::var("DSGD_KERNELS") {
        Err(std::env::VarError::NotPresent) => 2,
        Ok(v) if v == "portable" => 0,
        Ok(v) if v == "avx2" => 1,
        Ok(v) if v == "avx512" => 2,
        other => {
            eprintln!(
                "warning: DSGD_KERNELS={other:?} ignored (expected portable, avx2 or avx512)"
            );
            2
        }
    })
}

/// Whether this CPU runs the AVX2/FMA builds of the hot loops.
pub fn avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        cap() >= 1
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
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
        cap() >= 2
            && avx2_fma()
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
