//! Cost of `exp` and `ln` over one chunk of lanes: the exact vector path (`eval::vmath`),
//! the standard library lane by lane, and the opt-in polynomial `exp` (`special::exp_poly`,
//! compiled for AVX2/FMA as the tape's vector build compiles it), on arguments where the
//! models' weights and log-densities live.
//!
//! Not here: the tape around them (`benches/tape.rs`).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dsgd::eval::{CHUNK, vmath};
use dsgd::special::exp_poly;

/// 256 chunks of arguments spread evenly over `[lo, hi)` in a fixed shuffled order.
fn inputs(lo: f64, hi: f64) -> Vec<[f64; CHUNK]> {
    let n = 256 * CHUNK;
    let mut k: u64 = 1;
    (0..256)
        .map(|_| {
            std::array::from_fn(|_| {
                k = k.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                lo + (hi - lo) * ((k >> 11) % n as u64) as f64 / n as f64
            })
        })
        .collect()
}

/// [`exp_poly`] on every lane, as the tape's AVX2/FMA build runs it (portable elsewhere).
fn exp_poly_lanes(a: &[f64; CHUNK]) -> [f64; CHUNK] {
    #[cfg(target_arch = "x86_64")]
    if dsgd::eval::simd_available() {
        #[target_feature(enable = "avx2,fma")]
        fn avx2(a: &[f64; CHUNK]) -> [f64; CHUNK] {
            // The tape's lane loop (`kernels::map`), which LLVM vectorises.
            let mut out = [0.0; CHUNK];
            for (y, x) in out.iter_mut().zip(a) {
                *y = exp_poly(*x);
            }
            out
        }
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        return unsafe { avx2(a) };
    }
    a.map(exp_poly)
}

fn bench(c: &mut Criterion) {
    let xe = inputs(-20.0, 20.0);
    let xl = inputs(1e-3, 1e3);
    let mut group = c.benchmark_group("lanes_16");
    group.throughput(Throughput::Elements((xe.len() * CHUNK) as u64));
    type Kernel = fn(&[f64; CHUNK]) -> [f64; CHUNK];
    let cases: [(&str, &Vec<[f64; CHUNK]>, Kernel); 5] = [
        ("exp_vmath", &xe, vmath::exp_lanes),
        ("exp_std", &xe, |a| a.map(f64::exp)),
        ("exp_poly", &xe, exp_poly_lanes),
        ("ln_vmath", &xl, vmath::ln_lanes),
        ("ln_std", &xl, |a| a.map(f64::ln)),
    ];
    for (name, xs, f) in cases {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut acc = 0.0;
                for x in xs.iter() {
                    acc += f(black_box(x))[CHUNK - 1];
                }
                black_box(acc)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
