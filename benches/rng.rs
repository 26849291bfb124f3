//! Nanoseconds per standard normal: the bulk path (`SampleRng::fill_lanes`, what
//! `Problem::draw_noise` uses) in the AVX-512, the AVX2 and the portable build (a set the
//! CPU lacks runs a narrower one), against one
//! `SampleRng::normal` after another, for one chunk of 16 samples with as many latents as
//! the paper models have.
//!
//! Not here: whether the numbers agree (`tests/infer_rng.rs`), whole estimators
//! (`benches/estimators.rs`).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dsgd::estimate::{Channel, Purpose, StreamKey};
use dsgd::eval::vmath::KernelSet;

const LANES: usize = 16;

fn bench_normals(c: &mut Criterion) {
    // textmsg, walk, xornet, temperature, cheating.
    for n in [3usize, 16, 25, 41, 301] {
        let mut group = c.benchmark_group(format!("normals_16_lanes/{n}_latents"));
        group.throughput(Throughput::Elements((LANES * n) as u64));
        let mut s = vec![0.0; LANES * n];
        let mut k = 0u64;
        for (name, set) in [
            ("bulk_avx512", KernelSet::Avx512),
            ("bulk", KernelSet::Avx2),
            ("bulk_portable", KernelSet::Portable),
        ] {
            group.bench_with_input(BenchmarkId::from_parameter(name), &n, |bench, &n| {
                bench.iter(|| {
                    k += 1;
                    let mut rng = StreamKey::new(0, k, Purpose::Step).rng(Channel::Noise);
                    rng.fill_lanes_on(set, 0, LANES, n, &mut s);
                    black_box(s[0])
                })
            });
        }
        group.bench_with_input(BenchmarkId::from_parameter("plain"), &n, |bench, &n| {
            bench.iter(|| {
                k += 1;
                let mut rng = StreamKey::new(0, k, Purpose::Step).rng(Channel::Noise);
                for l in 0..LANES {
                    let r = rng.lane(l);
                    for i in 0..n {
                        s[i * LANES + l] = r.normal();
                    }
                }
                black_box(s[0])
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    targets = bench_normals
}
criterion_main!(benches);
