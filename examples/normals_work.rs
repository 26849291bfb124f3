//! A fixed amount of bulk normal drawing for profiling and CPU-time comparisons of the
//! generator alone: `cargo run --release --example normals_work -- LATENTS CHUNKS [LANES]`
//! draws CHUNKS chunks of LANES (default 16) samples with LATENTS normals each, as
//! `Problem::draw_noise` does, and prints a checksum of the bits, so that a faster build can
//! be checked to draw the same numbers. Compare builds with `perf stat` (cycles and
//! instructions are steadier than time on a shared machine); `cargo bench --bench rng` is
//! the benchmark.

use dsgd::estimate::{Channel, Purpose, StreamKey};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (n, chunks, lanes) = match args.as_slice() {
        [n, chunks] => (n.parse()?, chunks.parse()?, 16),
        [n, chunks, lanes] => (n.parse()?, chunks.parse()?, lanes.parse()?),
        _ => return Err("usage: normals_work LATENTS CHUNKS [LANES]".into()),
    };
    let mut s = vec![0.0f64; n * lanes];
    let mut checksum = 0u64;
    for c in 0..chunks {
        let key = StreamKey::new(0, c as u64, Purpose::Step);
        key.rng(Channel::Noise).fill_lanes(0, lanes, n, &mut s);
        // A sum of the bits (cheap next to the draws) of each chunk.
        let sum = s.iter().fold(0u64, |a, x| a.wrapping_add(x.to_bits()));
        checksum = checksum.rotate_left(5) ^ sum;
    }
    println!("{checksum:016x}");
    Ok(())
}
