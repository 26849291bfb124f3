//! What the CPU can run, detected at run time: the one place that asks, so every choice of a
//! vector code path (the tape's sweeps, the estimators' loops, the vector maths) agrees.
//!
//! The answers are worked out once per process (`Features`), so asking costs one atomic
//! load; the hot loops ask per chunk.
//!
//! The builds, narrowest first: baseline x86-64 (SSE2; every `f64::mul_add` a call to the
//! runtime's `fma`, which is software on a CPU without FMA), portable (the same 128-bit code
//! with FMA, where `mul_add` is one instruction, and the generator's rounds in AES-NI: the
//! build of x86-64 CPUs with FMA but not AVX2, and the width of aarch64's NEON, which always
//! has FMA), AVX2/FMA and AVX-512.
//! `DSGD_KERNELS=baseline`, `portable` or `avx2` in the environment caps what is detected, so
//! that the narrower builds can be timed (or a suspected fault in a wider one ruled out) on a
//! CPU that runs more; results never depend on it, since every build gives the same bits. Any
//! other value is ignored, with a warning on stderr.

/// What this process may run, after the cap.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Features {
    fma: bool,
    avx2_fma: bool,
    avx512: bool,
    aes: bool,
    vaes: bool,
}

#[cfg(target_arch = "x86_64")]
fn features() -> Features {
    use std::arch::is_x86_feature_detected as has;
    static FEATURES: std::sync::OnceLock<Features> = std::sync::OnceLock::new();
    *FEATURES.get_or_init(|| {
        let cap = kernels_cap();
        let fma = cap >= PORTABLE && has!("fma");
        let avx2_fma = cap >= AVX2 && fma && has!("avx2");
        // What `#[target_feature(enable = ...)]` of the AVX-512 builds names besides AVX2/FMA:
        // foundation, double and quad words, vector lengths, bytes and words.
        let avx512 = cap >= AVX512
            && avx2_fma
            && has!("avx512f")
            && has!("avx512dq")
            && has!("avx512vl")
            && has!("avx512bw");
        // AES-NI is not in the baseline either (under its cap the generator's rounds are the
        // `aes` crate's, a call per round); the portable build has it, as aarch64 CPUs have
        // their AES instructions: every x86-64 CPU with FMA has AES-NI and SSE4.1.
        let aes = cap >= PORTABLE && has!("aes") && has!("sse4.1");
        Features {
            fma,
            avx2_fma,
            avx512,
            aes,
            vaes: aes && avx2_fma && has!("vaes"),
        }
    })
}

/// The caps `DSGD_KERNELS` sets, narrowest first.
#[cfg(target_arch = "x86_64")]
const BASELINE: u8 = 0;
#[cfg(target_arch = "x86_64")]
const PORTABLE: u8 = 1;
#[cfg(target_arch = "x86_64")]
const AVX2: u8 = 2;
#[cfg(target_arch = "x86_64")]
const AVX512: u8 = 3;

/// The widest builds the environment allows.
#[cfg(target_arch = "x86_64")]
fn kernels_cap() -> u8 {
    match std::env::var("DSGD_KERNELS") {
        Err(std::env::VarError::NotPresent) => AVX512,
        Ok(v) if v == "baseline" => BASELINE,
        Ok(v) if v == "portable" => PORTABLE,
        Ok(v) if v == "avx2" => AVX2,
        Ok(v) if v == "avx512" => AVX512,
        other => {
            eprintln!(
                "warning: DSGD_KERNELS={other:?} ignored (expected baseline, portable, avx2 or avx512)"
            );
            AVX512
        }
    }
}

/// Whether this CPU runs the portable builds of the hot loops with FMA (x86-64 with FMA, and
/// not capped to the baseline): their `mul_add`s are then instructions, not calls.
pub fn fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        features().fma
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU runs the AVX2/FMA builds of the hot loops.
pub fn avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        features().avx2_fma
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU runs the AVX-512 builds (with AVX2/FMA).
pub fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        features().avx512
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
        features().aes
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
        features().vaes
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Stamps out one function per build: the same signature and body (a call to an
/// `#[inline(always)]` body, which so compiles with each build's instructions), each under
/// its own `#[target_feature]`, so that the builds of one body are written once.
///
/// ```ignore
/// feature_builds! {
///     {
///         #[cfg(target_arch = "x86_64")]
///         [fn] (x: &mut [f64]) {
///             body::<WIDE>(x)
///         }
///     }
///     /// The AVX2 build.
///     body_avx2 = "avx2,fma", const WIDE: bool = true;
///     /// The portable build with FMA.
///     body_fma = "fma", const WIDE: bool = false;
/// }
/// ```
///
/// The braces hold the attributes every build shares, then in brackets what comes before
/// the name (`fn`, `unsafe fn`, ...), then the parameters, return type and body; each build
/// follows with its doc comment, name and features, and optionally constants its body
/// reads (where the builds differ in a generic argument).
macro_rules! feature_builds {
    ({ $($item:tt)* }) => {};
    (
        { $($item:tt)* }
        $(#[$doc:meta])* $name:ident = $features:literal
        $(, const $konst:ident: $kty:ty = $value:expr)*;
        $($builds:tt)*
    ) => {
        $crate::cpu::feature_builds!(
            @stamp [$(#[$doc])* #[target_feature(enable = $features)]] $name
            [$(const $konst: $kty = $value;)*] $($item)*
        );
        $crate::cpu::feature_builds!({ $($item)* } $($builds)*);
    };
    (
        @stamp [$($attrs:tt)*] $name:ident [$($konst:tt)*]
        $(#[$attr:meta])* [$($head:tt)*] $params:tt $(-> $ret:ty)? { $($body:tt)* }
    ) => {
        $($attrs)* $(#[$attr])* $($head)* $name $params $(-> $ret)? { $($konst)* $($body)* }
    };
}
pub(crate) use feature_builds;
