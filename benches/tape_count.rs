//! A fixed amount of tape work for instruction counting (`valgrind --tool=callgrind`) and CPU
//! time (`perf stat`): `cargo bench --bench tape_count -- BATCH ITERS [crisp]` runs ITERS
//! gradient sweeps over BATCH samples of the thermostat program and prints a checksum of the
//! results (the bits of every value and gradient), so that a speed-up can be checked not to
//! change a single result.
//!
//! Not a statistical benchmark: `benches/tape.rs` is.

use std::hint::black_box;
use std::time::Instant;

use dsgd::eval::{BatchGradient, Tape};
use dsgd::ir::Semantics;

mod support;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let batch: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(16);
    let iters: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let sem = if args.get(2).is_some_and(|a| a == "crisp") {
        Semantics::Crisp
    } else {
        Semantics::Smoothed { eta: 0.1 }
    };
    let program = support::thermostat();
    let tape = Tape::compile(&program, 0);
    let params = support::params(&program);
    let latents = support::latents(&program, batch);
    let mut ws = tape.workspace();
    let mut grad = BatchGradient::new(&tape, batch);
    let start = Instant::now();
    for _ in 0..iters {
        tape.gradient(&mut ws, sem, &params, black_box(&latents), &mut grad);
        black_box(grad.value[0]);
    }
    let secs = start.elapsed().as_secs_f64();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for x in grad.value.iter().chain(&grad.latents).chain(&grad.params) {
        hash = (hash ^ x.to_bits()).wrapping_mul(0x0100_0000_01b3);
    }
    println!(
        "batch {batch} iters {iters}: {:.3e} samples/s, checksum {hash:016x} ({} squares, {} additions fused)",
        (batch * iters) as f64 / secs,
        tape.fused_squares(),
        tape.fused_additions()
    );
}
