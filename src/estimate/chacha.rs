//! The ChaCha8 block function, eight blocks at a time, for the bulk noise path.
//!
//! It produces exactly the keystream of `rand::rngs::ChaCha8Rng` (the `chacha20` crate's
//! 64-bit-counter, 64-bit-stream variant): state words 0-3 are the constants, 4-11 the key
//! (little-endian words of the seed), 12-13 the block counter and 14-15 the stream id, and
//! a block is four double rounds (eight rounds) of that state plus the state itself. Each
//! of the eight slots has its own stream and counter, so one call can serve eight samples'
//! streams at once or eight consecutive blocks of one stream. The same portable code is
//! compiled for AVX-512 and AVX2 and chosen at run time; all builds give the same words
//! (integer arithmetic only). Only the keystream lives here, not how it is consumed.

/// How many blocks one call computes side by side.
pub(crate) const SLOTS: usize = 8;

/// 32-bit words in one ChaCha block.
pub(crate) const BLOCK_WORDS: usize = 16;

/// "expand 32-byte k", the ChaCha constants.
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// The eight key words of a 32-byte seed, as the generator reads them.
pub(crate) fn key_words(seed: &[u8; 32]) -> [u32; 8] {
    std::array::from_fn(|i| {
        u32::from_le_bytes([
            seed[4 * i],
            seed[4 * i + 1],
            seed[4 * i + 2],
            seed[4 * i + 3],
        ])
    })
}

/// Which block each slot computes.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Job {
    pub stream: u64,
    pub block: u64,
}

/// Computes block `jobs[t].block` of stream `jobs[t].stream` into `out[t]`, for every slot.
pub(crate) fn blocks(key: &[u32; 8], jobs: &[Job; SLOTS], out: &mut [[u32; BLOCK_WORDS]; SLOTS]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl") {
            // SAFETY: the CPU has the features the function was compiled for.
            unsafe { blocks_avx512(key, jobs, out) };
            return;
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            unsafe { blocks_avx2(key, jobs, out) };
            return;
        }
    }
    blocks_portable(key, jobs, out);
}

/// The build without any run-time CPU features (also what tests compare the others with).
pub(crate) fn blocks_portable(
    key: &[u32; 8],
    jobs: &[Job; SLOTS],
    out: &mut [[u32; BLOCK_WORDS]; SLOTS],
) {
    blocks_body(key, jobs, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn blocks_avx2(key: &[u32; 8], jobs: &[Job; SLOTS], out: &mut [[u32; BLOCK_WORDS]; SLOTS]) {
    blocks_body(key, jobs, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512f,avx512vl")]
fn blocks_avx512(key: &[u32; 8], jobs: &[Job; SLOTS], out: &mut [[u32; BLOCK_WORDS]; SLOTS]) {
    blocks_body(key, jobs, out);
}

/// One state word across the eight slots: a vector register once compiled.
type Lanes = [u32; SLOTS];

#[inline(always)]
fn blocks_body(key: &[u32; 8], jobs: &[Job; SLOTS], out: &mut [[u32; BLOCK_WORDS]; SLOTS]) {
    let mut input = [[0u32; SLOTS]; BLOCK_WORDS];
    for (w, c) in SIGMA.iter().enumerate() {
        input[w] = [*c; SLOTS];
    }
    for (w, k) in key.iter().enumerate() {
        input[4 + w] = [*k; SLOTS];
    }
    for (t, job) in jobs.iter().enumerate() {
        input[12][t] = job.block as u32;
        input[13][t] = (job.block >> 32) as u32;
        input[14][t] = job.stream as u32;
        input[15][t] = (job.stream >> 32) as u32;
    }
    let mut x = input;
    for _ in 0..4 {
        quarter(&mut x, 0, 4, 8, 12);
        quarter(&mut x, 1, 5, 9, 13);
        quarter(&mut x, 2, 6, 10, 14);
        quarter(&mut x, 3, 7, 11, 15);
        quarter(&mut x, 0, 5, 10, 15);
        quarter(&mut x, 1, 6, 11, 12);
        quarter(&mut x, 2, 7, 8, 13);
        quarter(&mut x, 3, 4, 9, 14);
    }
    for w in 0..BLOCK_WORDS {
        for t in 0..SLOTS {
            out[t][w] = x[w][t].wrapping_add(input[w][t]);
        }
    }
}

#[inline(always)]
fn quarter(x: &mut [Lanes; BLOCK_WORDS], a: usize, b: usize, c: usize, d: usize) {
    step(x, a, b, d, 16);
    step(x, c, d, b, 12);
    step(x, a, b, d, 8);
    step(x, c, d, b, 7);
}

/// `p += q; r ^= p; r <<<= k`, slot by slot.
#[inline(always)]
fn step(x: &mut [Lanes; BLOCK_WORDS], p: usize, q: usize, r: usize, k: u32) {
    let (xq, mut xp, mut xr) = (x[q], x[p], x[r]);
    for ((p, r), q) in xp.iter_mut().zip(xr.iter_mut()).zip(xq) {
        *p = p.wrapping_add(q);
        *r = (*r ^ *p).rotate_left(k);
    }
    x[p] = xp;
    x[r] = xr;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::ChaCha8Rng;
    use rand::{Rng, SeedableRng};

    /// The generator's own words of `block` in `stream`.
    fn reference(seed: [u8; 32], stream: u64, block: u64) -> [u32; BLOCK_WORDS] {
        let mut rng = ChaCha8Rng::from_seed(seed);
        rng.set_stream(stream);
        rng.set_word_pos(u128::from(block) * BLOCK_WORDS as u128);
        std::array::from_fn(|_| rng.next_u32())
    }

    #[test]
    fn every_slot_is_the_generators_block() {
        let mut seed = [0u8; 32];
        for (i, b) in seed.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        let key = key_words(&seed);
        let streams = [0, 1, 7, 1 << 32, (1 << 40) + 3, u64::MAX, 12345, 2];
        let blocks_at = [0, 1, 3, 5, (1 << 32) - 1, 1 << 32, 1 << 33, u64::MAX];
        let jobs: [Job; SLOTS] = std::array::from_fn(|t| Job {
            stream: streams[t],
            block: blocks_at[t],
        });
        let mut fast = [[0; BLOCK_WORDS]; SLOTS];
        let mut portable = [[0; BLOCK_WORDS]; SLOTS];
        blocks(&key, &jobs, &mut fast);
        blocks_portable(&key, &jobs, &mut portable);
        for t in 0..SLOTS {
            let want = reference(seed, streams[t], blocks_at[t]);
            assert_eq!(fast[t], want, "slot {t}");
            assert_eq!(portable[t], want, "slot {t}");
        }
    }
}
