//! The ChaCha8 block function, sixteen blocks at a time, for the bulk noise path.
//!
//! It produces exactly the keystream of `rand::rngs::ChaCha8Rng` (the `chacha20` crate's
//! 64-bit-counter, 64-bit-stream variant): state words 0-3 are the constants, 4-11 the key
//! (little-endian words of the seed), 12-13 the block counter and 14-15 the stream id, and
//! a block is four double rounds (eight rounds) of that state plus the state itself. Each
//! of the sixteen slots has its own stream and counter, so one call can serve sixteen
//! samples' streams at once or consecutive blocks of one stream. AVX-512 and AVX2 builds
//! are chosen at run time, with a portable fallback; all give the same words (integer
//! arithmetic only). Only the keystream lives here, not how it is consumed.

/// How many blocks one call computes side by side.
pub(crate) const SLOTS: usize = 16;

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

/// The blocks of one call, each as the generator's 16 words in order.
pub(crate) type Blocks = [[u32; BLOCK_WORDS]; SLOTS];

/// Computes block `jobs[t].block` of stream `jobs[t].stream` into `out[t]`, for every slot.
pub(crate) fn blocks(key: &[u32; 8], jobs: &[Job; SLOTS], out: &mut Blocks) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function was compiled for.
            unsafe { x86::blocks_avx512(key, jobs, out) };
            return;
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            unsafe { x86::blocks_avx2(key, jobs, out) };
            return;
        }
    }
    blocks_portable(key, jobs, out);
}

/// One double round (columns, then diagonals) with literal indices, so that every build
/// keeps the whole state in registers.
macro_rules! double_round {
    ($quarter:ident) => {
        $quarter!(0, 4, 8, 12);
        $quarter!(1, 5, 9, 13);
        $quarter!(2, 6, 10, 14);
        $quarter!(3, 7, 11, 15);
        $quarter!(0, 5, 10, 15);
        $quarter!(1, 6, 11, 12);
        $quarter!(2, 7, 8, 13);
        $quarter!(3, 4, 9, 14);
    };
}

/// Blocks one at a time without any run-time CPU features: the fallback, what tests compare
/// the vector builds with, and cheaper than a vector call when only one or two blocks are
/// wanted. Computes as many blocks as `jobs` and `out` both have.
pub(crate) fn blocks_portable(key: &[u32; 8], jobs: &[Job], out: &mut [[u32; BLOCK_WORDS]]) {
    for (job, out) in jobs.iter().zip(out.iter_mut()) {
        let mut input = [0u32; BLOCK_WORDS];
        input[..4].copy_from_slice(&SIGMA);
        input[4..12].copy_from_slice(key);
        input[12] = job.block as u32;
        input[13] = (job.block >> 32) as u32;
        input[14] = job.stream as u32;
        input[15] = (job.stream >> 32) as u32;
        let mut x = input;
        macro_rules! quarter {
            ($a:literal, $b:literal, $c:literal, $d:literal) => {
                x[$a] = x[$a].wrapping_add(x[$b]);
                x[$d] = (x[$d] ^ x[$a]).rotate_left(16);
                x[$c] = x[$c].wrapping_add(x[$d]);
                x[$b] = (x[$b] ^ x[$c]).rotate_left(12);
                x[$a] = x[$a].wrapping_add(x[$b]);
                x[$d] = (x[$d] ^ x[$a]).rotate_left(8);
                x[$c] = x[$c].wrapping_add(x[$d]);
                x[$b] = (x[$b] ^ x[$c]).rotate_left(7);
            };
        }
        for _ in 0..4 {
            double_round!(quarter);
        }
        for ((o, x), i) in out.iter_mut().zip(x).zip(input) {
            *o = x.wrapping_add(i);
        }
    }
}

/// The vector builds: one state word per register, a slot per 32-bit lane; the result is
/// transposed 4 x 4 within each 128-bit lane and stored 16 bytes at a time.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{BLOCK_WORDS, Blocks, Job, SIGMA, SLOTS};
    use std::arch::x86_64::*;

    /// The per-slot state words 12..16 (counter and stream, low and high halves).
    fn slot_words(jobs: &[Job; SLOTS]) -> [[u32; SLOTS]; 4] {
        let mut w = [[0u32; SLOTS]; 4];
        for (t, job) in jobs.iter().enumerate() {
            w[0][t] = job.block as u32;
            w[1][t] = (job.block >> 32) as u32;
            w[2][t] = job.stream as u32;
            w[3][t] = (job.stream >> 32) as u32;
        }
        w
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn blocks_avx512(key: &[u32; 8], jobs: &[Job; SLOTS], out: &mut Blocks) {
        let sw = slot_words(jobs);
        let mut input = [_mm512_setzero_si512(); BLOCK_WORDS];
        for (w, c) in SIGMA.iter().chain(key.iter()).enumerate() {
            input[w] = _mm512_set1_epi32(*c as i32);
        }
        for (i, words) in sw.iter().enumerate() {
            // SAFETY: `words` is 16 u32s, one 512-bit load.
            input[12 + i] = unsafe { _mm512_loadu_si512(words.as_ptr().cast()) };
        }
        let mut x = input;
        macro_rules! quarter {
            ($a:literal, $b:literal, $c:literal, $d:literal) => {
                x[$a] = _mm512_add_epi32(x[$a], x[$b]);
                x[$d] = _mm512_rol_epi32::<16>(_mm512_xor_si512(x[$d], x[$a]));
                x[$c] = _mm512_add_epi32(x[$c], x[$d]);
                x[$b] = _mm512_rol_epi32::<12>(_mm512_xor_si512(x[$b], x[$c]));
                x[$a] = _mm512_add_epi32(x[$a], x[$b]);
                x[$d] = _mm512_rol_epi32::<8>(_mm512_xor_si512(x[$d], x[$a]));
                x[$c] = _mm512_add_epi32(x[$c], x[$d]);
                x[$b] = _mm512_rol_epi32::<7>(_mm512_xor_si512(x[$b], x[$c]));
            };
        }
        for _ in 0..4 {
            double_round!(quarter);
        }
        for (x, i) in x.iter_mut().zip(input) {
            *x = _mm512_add_epi32(*x, i);
        }
        for g in 0..4 {
            let a = [x[4 * g], x[4 * g + 1], x[4 * g + 2], x[4 * g + 3]];
            let t0 = _mm512_unpacklo_epi32(a[0], a[1]);
            let t1 = _mm512_unpackhi_epi32(a[0], a[1]);
            let t2 = _mm512_unpacklo_epi32(a[2], a[3]);
            let t3 = _mm512_unpackhi_epi32(a[2], a[3]);
            let r = [
                _mm512_unpacklo_epi64(t0, t2),
                _mm512_unpackhi_epi64(t0, t2),
                _mm512_unpacklo_epi64(t1, t3),
                _mm512_unpackhi_epi64(t1, t3),
            ];
            for (i, v) in r.iter().enumerate() {
                // 128-bit lane `l` of `r[i]` holds words 4g..4g+4 of slot 4l + i.
                let lanes = [
                    _mm512_extracti32x4_epi32::<0>(*v),
                    _mm512_extracti32x4_epi32::<1>(*v),
                    _mm512_extracti32x4_epi32::<2>(*v),
                    _mm512_extracti32x4_epi32::<3>(*v),
                ];
                for (l, chunk) in lanes.iter().enumerate() {
                    let dst = &mut out[4 * l + i][4 * g..4 * g + 4];
                    // SAFETY: `dst` is four u32s, one 128-bit store.
                    unsafe { _mm_storeu_si128(dst.as_mut_ptr().cast(), *chunk) };
                }
            }
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn blocks_avx2(key: &[u32; 8], jobs: &[Job; SLOTS], out: &mut Blocks) {
        let sw = slot_words(jobs);
        let rot16 = _mm256_setr_epi8(
            2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11,
            8, 9, 14, 15, 12, 13,
        );
        let rot8 = _mm256_setr_epi8(
            3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9,
            10, 15, 12, 13, 14,
        );
        for half in 0..2 {
            let mut input = [_mm256_setzero_si256(); BLOCK_WORDS];
            for (w, c) in SIGMA.iter().chain(key.iter()).enumerate() {
                input[w] = _mm256_set1_epi32(*c as i32);
            }
            for (i, words) in sw.iter().enumerate() {
                // SAFETY: eight of the 16 u32s, one 256-bit load.
                input[12 + i] = unsafe { _mm256_loadu_si256(words[8 * half..].as_ptr().cast()) };
            }
            let mut x = input;
            macro_rules! quarter {
                ($a:literal, $b:literal, $c:literal, $d:literal) => {
                    x[$a] = _mm256_add_epi32(x[$a], x[$b]);
                    x[$d] = _mm256_shuffle_epi8(_mm256_xor_si256(x[$d], x[$a]), rot16);
                    x[$c] = _mm256_add_epi32(x[$c], x[$d]);
                    let t = _mm256_xor_si256(x[$b], x[$c]);
                    x[$b] = _mm256_or_si256(_mm256_slli_epi32::<12>(t), _mm256_srli_epi32::<20>(t));
                    x[$a] = _mm256_add_epi32(x[$a], x[$b]);
                    x[$d] = _mm256_shuffle_epi8(_mm256_xor_si256(x[$d], x[$a]), rot8);
                    x[$c] = _mm256_add_epi32(x[$c], x[$d]);
                    let t = _mm256_xor_si256(x[$b], x[$c]);
                    x[$b] = _mm256_or_si256(_mm256_slli_epi32::<7>(t), _mm256_srli_epi32::<25>(t));
                };
            }
            for _ in 0..4 {
                double_round!(quarter);
            }
            for (x, i) in x.iter_mut().zip(input) {
                *x = _mm256_add_epi32(*x, i);
            }
            for g in 0..4 {
                let a = [x[4 * g], x[4 * g + 1], x[4 * g + 2], x[4 * g + 3]];
                let t0 = _mm256_unpacklo_epi32(a[0], a[1]);
                let t1 = _mm256_unpackhi_epi32(a[0], a[1]);
                let t2 = _mm256_unpacklo_epi32(a[2], a[3]);
                let t3 = _mm256_unpackhi_epi32(a[2], a[3]);
                let r = [
                    _mm256_unpacklo_epi64(t0, t2),
                    _mm256_unpackhi_epi64(t0, t2),
                    _mm256_unpacklo_epi64(t1, t3),
                    _mm256_unpackhi_epi64(t1, t3),
                ];
                for (i, v) in r.iter().enumerate() {
                    let lanes = [
                        _mm256_castsi256_si128(*v),
                        _mm256_extracti128_si256::<1>(*v),
                    ];
                    for (l, chunk) in lanes.iter().enumerate() {
                        let dst = &mut out[8 * half + 4 * l + i][4 * g..4 * g + 4];
                        // SAFETY: `dst` is four u32s, one 128-bit store.
                        unsafe { _mm_storeu_si128(dst.as_mut_ptr().cast(), *chunk) };
                    }
                }
            }
        }
    }
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
    fn every_build_gives_the_generators_blocks_in_every_slot() {
        let mut seed = [0u8; 32];
        for (i, b) in seed.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        let key = key_words(&seed);
        let streams = [
            0,
            1,
            7,
            1 << 32,
            (1 << 40) + 3,
            u64::MAX,
            12345,
            2,
            3,
            4,
            5,
            6,
            7,
            8,
            9,
            1 << 63,
        ];
        let at = [
            0,
            1,
            3,
            5,
            (1 << 32) - 1,
            1 << 32,
            1 << 33,
            u64::MAX,
            0,
            0,
            1,
            1,
            2,
            40,
            41,
            7,
        ];
        let jobs: [Job; SLOTS] = std::array::from_fn(|t| Job {
            stream: streams[t],
            block: at[t],
        });
        let mut builds: Vec<(&str, Blocks)> = Vec::new();
        let mut out = [[0; BLOCK_WORDS]; SLOTS];
        blocks(&key, &jobs, &mut out);
        builds.push(("dispatched", out));
        blocks_portable(&key, &jobs, &mut out);
        builds.push(("portable", out));
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                // SAFETY: the feature was checked.
                unsafe { x86::blocks_avx512(&key, &jobs, &mut out) };
                builds.push(("avx512", out));
            }
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the feature was checked.
                unsafe { x86::blocks_avx2(&key, &jobs, &mut out) };
                builds.push(("avx2", out));
            }
        }
        assert!(builds.len() >= 2);
        for (name, got) in &builds {
            for t in 0..SLOTS {
                assert_eq!(
                    got[t],
                    reference(seed, streams[t], at[t]),
                    "{name}, slot {t}"
                );
            }
        }
    }
}
