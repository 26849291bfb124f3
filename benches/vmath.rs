//! Cost of `exp` and `ln` over one chunk of lanes (`eval::vmath`) in each kernel set, against
//! the standard library lane by lane, on arguments where the models' weights and
//! log-densities live.
//!
//! Not here: the tape around them (`benches/tape.rs`), accuracy (`tests/eval_vmath.rs`).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dsgd::eval::CHUNK;
use dsgd::eval::vmath::{self, KernelSet};

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

fn bench(c: &mut Criterion) {
    let xe = inputs(-20.0, 20.0);
    let xl = inputs(1e-3, 1e3);
    let mut group = c.benchmark_group("lanes_16");
    group.throughput(Throughput::Elements((xe.len() * CHUNK) as u64));
    type Kernel = fn(&[f64; CHUNK]) -> [f64; CHUNK];
    let cases: [(&str, &Vec<[f64; CHUNK]>, Kernel); 6] = [
        ("exp_avx2", &xe, |a| vmath::exp_lanes_on(KernelSet::Avx2, a)),
        ("exp_portable", &xe, |a| {
            vmath::exp_lanes_on(KernelSet::Portable, a)
        }),
        ("exp_std", &xe, |a| a.map(f64::exp)),
        ("ln_avx2", &xl, |a| vmath::ln_lanes_on(KernelSet::Avx2, a)),
        ("ln_portable", &xl, |a| {
            vmath::ln_lanes_on(KernelSet::Portable, a)
        }),
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
