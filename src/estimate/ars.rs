//! ARS-7 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3",
//! SC 2011): a counter-based generator made of AES rounds, 128 random bits from a 128-bit
//! counter and a 128-bit key, with no state between calls.
//!
//! Why ARS: every sample's noise must be a pure function of its key and counter (so a batch
//! splits over threads freely), and the noise is a large share of the engine's time (a third
//! of a `cheating` gradient, which draws 300 normals per sample). Its rounds are the AES
//! round function, one instruction on every x86-64 processor with AVX2 (and on ARMv8 with
//! the crypto extension), two blocks per instruction with VAES: seven rounds cost about as
//! much as one of Philox4x32-10's ten. Quality: the authors found no statistical flaw in ARS
//! from five rounds on (it passes TestU01's BigCrush), and seven rounds, the default of their
//! library, keeps the two-round margin; Intel's oneMKL ships the five-round variant.
//!
//! A block: `v = ctr ^ k_0`, then `v = AESENC(v, k_r)` for `r = 1..R-1` and
//! `v = AESENCLAST(v, k_R)`, with the round keys `k_r = k_{r-1} + W` (each 64-bit half
//! plus its Weyl increment). The words are little-endian: word `i` of the counter, the key
//! and the output is bytes `4i..4i+4` of the AES state.
//!
//! Every build gives the same bits: the AES round is fully specified (FIPS 197). The
//! portable build ([`block`]) calls the `aes` crate's round function, which uses the CPU's
//! AES instructions where it has them and a constant-time software round otherwise; the AVX2
//! build of the normals ([`Group16`]) runs sixteen lanes' blocks in AES-NI or VAES
//! intrinsics.

use aes::hazmat;

/// Rounds of a block.
pub const ROUNDS: usize = 7;

/// The key schedule's increments of the low and the high 64-bit half (the constants of the
/// paper: the fractional parts of the golden ratio and of `sqrt(3)`).
const WEYL: [u64; 2] = [0x9e37_79b9_7f4a_7c15, 0xbb67_ae85_84ca_a73b];

/// The round keys `k_0..=k_R` of a key, as AES states.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    round: [[u8; 16]; ROUNDS + 1],
}

impl Keys {
    /// The schedule of the 128-bit key `[low, high]`.
    pub fn new(key: [u64; 2]) -> Keys {
        Keys {
            round: schedule(key),
        }
    }
}

/// `k_0..=k_{N-1}` of `key`.
fn schedule<const N: usize>(key: [u64; 2]) -> [[u8; 16]; N] {
    std::array::from_fn(|r| {
        let lo = key[0].wrapping_add(WEYL[0].wrapping_mul(r as u64));
        let hi = key[1].wrapping_add(WEYL[1].wrapping_mul(r as u64));
        let mut s = [0u8; 16];
        s[..8].copy_from_slice(&lo.to_le_bytes());
        s[8..].copy_from_slice(&hi.to_le_bytes());
        s
    })
}

/// The AES state of four little-endian words.
#[inline(always)]
fn state(w: [u32; 4]) -> [u8; 16] {
    let mut s = [0u8; 16];
    for (i, w) in w.into_iter().enumerate() {
        s[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    s
}

/// The four little-endian words of an AES state.
#[inline(always)]
fn words(s: [u8; 16]) -> [u32; 4] {
    std::array::from_fn(|i| {
        u32::from_le_bytes([s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]])
    })
}

/// The rounds on `ctr` under the round keys `keys` (`keys.len() - 1` rounds, at least one).
fn rounds(ctr: [u32; 4], keys: &[[u8; 16]]) -> [u32; 4] {
    let xor = |a: [u8; 16], b: &[u8; 16]| -> [u8; 16] { std::array::from_fn(|i| a[i] ^ b[i]) };
    let mut v = aes::Block::from(xor(state(ctr), &keys[0]));
    let (last, middle) = keys[1..].split_last().expect("at least one round");
    for k in middle {
        hazmat::cipher_round(&mut v, &aes::Block::from(*k));
    }
    // AESENCLAST is a round without MixColumns: undo it after a round under the zero key.
    hazmat::cipher_round(&mut v, &aes::Block::from([0u8; 16]));
    hazmat::inv_mix_columns(&mut v);
    words(xor(v.into(), last))
}

/// One block: the rounds on `ctr` under `keys`, in AES-NI intrinsics where the CPU has them
/// (the same numbers as the `aes` crate's rounds, without a call and a feature check per
/// round: the ziggurat's rejected draws and the estimators' indices come one block at a
/// time).
pub fn block(ctr: [u32; 4], keys: &Keys) -> [u32; 4] {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::aes() {
        let c = ctr.map(|w| [w]);
        // SAFETY: the CPU has AES-NI (checked just above).
        let [[lo], [hi]] = unsafe { blocks_aesni::<1>(&c, keys) };
        return [lo as u32, (lo >> 32) as u32, hi as u32, (hi >> 32) as u32];
    }
    rounds(ctr, &keys.round)
}

/// The words of a block as the normal transform reads them: `(w0 | w1 << 32, w2 | w3 << 32)`.
#[inline(always)]
pub fn words64(w: [u32; 4]) -> (u64, u64) {
    (
        u64::from(w[0]) | u64::from(w[1]) << 32,
        u64::from(w[2]) | u64::from(w[3]) << 32,
    )
}

/// The blocks of sixteen lanes whose counters share three of their four words,
/// `[head, lane[l], a, b]`, with `head` chosen per call: the normals' blocks of a group of
/// samples (the block index in `head`, the sample in the second word, the iteration in the
/// last two). Everything but `head` is xored with `k_0` once, when the group is set up.
///
/// The states live in pairs of lanes per 256-bit vector, `[l | l + 2]` and
/// `[l + 1 | l + 3]` for each four lanes from `l`, so that one unpack of the two gives
/// the four lanes' first (or second) 64-bit words in lane order.
/// Sixteen lanes' two 64-bit words ([`words64`]), four lanes per vector in lane order: the
/// first words, then the second.
#[cfg(target_arch = "x86_64")]
pub type Words16 = (
    [std::arch::x86_64::__m256i; 4],
    [std::arch::x86_64::__m256i; 4],
);

#[cfg(target_arch = "x86_64")]
pub struct Group16 {
    base: [std::arch::x86_64::__m256i; 8],
    /// `k_1..=k_R` in both halves of a vector.
    keys: [std::arch::x86_64::__m256i; ROUNDS],
}

/// The rounds on every vector of `$v` (each two AES states) under the round keys `$keys`
/// (`k_1..=k_R`, broadcast to both halves), with the round instructions `$enc` and
/// `$last` (VAES, or two AES-NI instructions per vector). A macro rather than a function
/// so that it expands inside the functions with the target features it needs.
#[cfg(target_arch = "x86_64")]
macro_rules! ars_rounds {
    ($v:expr, $keys:expr, $enc:expr, $last:expr) => {{
        let (last, middle) = $keys.split_last().expect("at least one round");
        for k in middle {
            for x in $v.iter_mut() {
                *x = $enc(*x, *k);
            }
        }
        for x in $v.iter_mut() {
            *x = $last(*x, *last);
        }
    }};
}

/// Round key `r` of `keys` as a vector.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn round_key(keys: &Keys, r: usize) -> std::arch::x86_64::__m128i {
    // SAFETY: an unaligned 16-byte load of a 16-byte array (SSE2, which every x86-64 CPU has).
    unsafe { std::arch::x86_64::_mm_loadu_si128(keys.round[r].as_ptr().cast()) }
}

/// The sixteen lanes' states after the first round key: counters `[_, lane[l], a, b]` (the
/// head's word zero until a block's head is xored in) xor `k_0`, for both vector widths'
/// groups to arrange.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn first_states(keys: &Keys, lane: [u32; 16], a: u32, b: u32) -> [std::arch::x86_64::__m128i; 16] {
    use std::arch::x86_64::*;
    let k0 = round_key(keys, 0);
    std::array::from_fn(|l| {
        // SAFETY: SSE2, which every x86-64 CPU has.
        unsafe { _mm_xor_si128(_mm_set_epi32(b as i32, a as i32, lane[l] as i32, 0), k0) }
    })
}

#[cfg(target_arch = "x86_64")]
impl Group16 {
    /// The group of counters `[_, lane[l], a, b]` under `keys`.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn new(keys: &Keys, lane: [u32; 16], a: u32, b: u32) -> Group16 {
        use std::arch::x86_64::*;
        let states = first_states(keys, lane, a, b);
        let state = |l: usize| states[l];
        let base = std::array::from_fn(|v| {
            // Vector `v`: lanes `4q + p` and `4q + p + 2` with `q = v / 2`, `p = v % 2`.
            let l = 4 * (v / 2) + v % 2;
            _mm256_set_m128i(state(l + 2), state(l))
        });
        let keys = std::array::from_fn(|r| _mm256_broadcastsi128_si256(round_key(keys, r + 1)));
        Group16 { base, keys }
    }

    /// The blocks of counters `[head, lane[l], a, b]` as [`words64`] of each lane: four
    /// lanes per vector, the first words in `.0`, the second in `.1`; with VAES.
    ///
    /// # Safety
    /// The CPU must have AVX2 and VAES.
    #[target_feature(enable = "avx2,aes,vaes")]
    #[inline]
    pub unsafe fn words_vaes(&self, head: u32) -> Words16 {
        use std::arch::x86_64::*;
        let mut v = self.start(head);
        ars_rounds!(v, self.keys, _mm256_aesenc_epi128, _mm256_aesenclast_epi128);
        Self::unpack(&v)
    }

    /// [`Group16::words_vaes`] with AES-NI, one state per instruction (the same numbers).
    ///
    /// # Safety
    /// The CPU must have AVX2 and AES-NI.
    #[target_feature(enable = "avx2,aes")]
    #[inline]
    pub unsafe fn words_aesni(&self, head: u32) -> Words16 {
        use std::arch::x86_64::*;
        let v = self.start(head);
        // Sixteen states, one per register, so each instruction takes one.
        let mut x: [__m128i; 16] = std::array::from_fn(|i| {
            let y = v[i / 2];
            if i % 2 == 0 {
                _mm256_castsi256_si128(y)
            } else {
                _mm256_extracti128_si256::<1>(y)
            }
        });
        let keys: [__m128i; ROUNDS] = self.keys.map(|k| _mm256_castsi256_si128(k));
        ars_rounds!(x, keys, _mm_aesenc_si128, _mm_aesenclast_si128);
        let v: [__m256i; 8] = std::array::from_fn(|i| _mm256_set_m128i(x[2 * i + 1], x[2 * i]));
        Self::unpack(&v)
    }

    /// The states after `k_0`: the group's base with `head ^ k_0`'s first word.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn start(&self, head: u32) -> [std::arch::x86_64::__m256i; 8] {
        use std::arch::x86_64::*;
        let h = _mm256_set_epi32(0, 0, 0, head as i32, 0, 0, 0, head as i32);
        self.base.map(|b| _mm256_xor_si256(b, h))
    }

    /// Each lane's two 64-bit words, four lanes per vector in lane order.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn unpack(v: &[std::arch::x86_64::__m256i; 8]) -> Words16 {
        use std::arch::x86_64::*;
        let first = std::array::from_fn(|q| _mm256_unpacklo_epi64(v[2 * q], v[2 * q + 1]));
        let second = std::array::from_fn(|q| _mm256_unpackhi_epi64(v[2 * q], v[2 * q + 1]));
        (first, second)
    }
}

/// [`Group16`] in 512-bit vectors for the AVX-512 build: four AES states per vector, so a
/// round of sixteen lanes is four VAES instructions instead of eight (the same
/// instruction throughput per vector on the CPUs we measured, so half the time of the
/// rounds), and 32 vector registers keep the round keys and states out of memory.
///
/// Vector `2h + p` holds lanes `8h + p + {0, 2, 4, 6}`, so that one unpack of vectors `2h`
/// and `2h + 1` gives lanes `8h..8h + 8`'s first (or second) 64-bit words in lane order.
#[cfg(target_arch = "x86_64")]
pub struct Group16Zmm {
    base: [std::arch::x86_64::__m512i; 4],
    /// `k_1..=k_R` in each 128-bit quarter of a vector.
    keys: [std::arch::x86_64::__m512i; ROUNDS],
}

/// Sixteen lanes' two 64-bit words ([`words64`]) in 512-bit vectors, eight lanes per vector
/// in lane order: the first words of lanes `0..8` and `8..16`, then the second words.
#[cfg(target_arch = "x86_64")]
pub type Words16Zmm = [std::arch::x86_64::__m512i; 4];

#[cfg(target_arch = "x86_64")]
impl Group16Zmm {
    /// The group of counters `[_, lane[l], a, b]` under `keys`.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub unsafe fn new(keys: &Keys, lane: [u32; 16], a: u32, b: u32) -> Group16Zmm {
        use std::arch::x86_64::*;
        let states = first_states(keys, lane, a, b);
        let state = |l: usize| states[l];
        let base = std::array::from_fn(|v| {
            let l = 8 * (v / 2) + v % 2;
            let lo = _mm256_set_m128i(state(l + 2), state(l));
            let hi = _mm256_set_m128i(state(l + 6), state(l + 4));
            _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
        });
        let keys = std::array::from_fn(|r| _mm512_broadcast_i32x4(round_key(keys, r + 1)));
        Group16Zmm { base, keys }
    }

    /// The blocks of counters `[head[i], lane[l], a, b]` for both heads, each as
    /// [`Words16Zmm`]: the same numbers as [`Group16::words_vaes`]. Two blocks at a time,
    /// eight independent states through each round: the rounds' latency needs that many for
    /// the instructions to issue at their full rate.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and VAES.
    #[target_feature(enable = "avx512f,aes,vaes")]
    #[inline]
    pub unsafe fn words2(&self, head: [u32; 2]) -> [Words16Zmm; 2] {
        use std::arch::x86_64::*;
        let h = head.map(|h| _mm512_broadcast_i32x4(_mm_cvtsi32_si128(h as i32)));
        let mut v: [__m512i; 8] =
            std::array::from_fn(|i| _mm512_xor_si512(self.base[i % 4], h[i / 4]));
        ars_rounds!(v, self.keys, _mm512_aesenc_epi128, _mm512_aesenclast_epi128);
        std::array::from_fn(|b| {
            let v = &v[4 * b..];
            [
                _mm512_unpacklo_epi64(v[0], v[1]),
                _mm512_unpacklo_epi64(v[2], v[3]),
                _mm512_unpackhi_epi64(v[0], v[1]),
                _mm512_unpackhi_epi64(v[2], v[3]),
            ]
        })
    }
}

/// [`block`] of `G` lanes with AES-NI, returning each lane's [`words64`]: the same numbers.
/// `G` independent states go through each round together, so the processor overlaps their
/// latencies.
///
/// # Safety
/// The CPU must have AES-NI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.1,aes")]
#[inline]
pub unsafe fn blocks_aesni<const G: usize>(c: &[[u32; G]; 4], keys: &Keys) -> [[u64; G]; 2] {
    use std::arch::x86_64::*;
    // SAFETY: unaligned 16-byte loads of 16-byte arrays.
    let load = |s: &[u8; 16]| unsafe { _mm_loadu_si128(s.as_ptr().cast()) };
    let k0 = load(&keys.round[0]);
    let mut x: [__m128i; G] = std::array::from_fn(|l| {
        let ctr = _mm_set_epi32(
            c[3][l] as i32,
            c[2][l] as i32,
            c[1][l] as i32,
            c[0][l] as i32,
        );
        _mm_xor_si128(ctr, k0)
    });
    let round_keys: [__m128i; ROUNDS] = std::array::from_fn(|r| load(&keys.round[r + 1]));
    ars_rounds!(x, round_keys, _mm_aesenc_si128, _mm_aesenclast_si128);
    let mut out = [[0u64; G]; 2];
    for (l, v) in x.into_iter().enumerate() {
        out[0][l] = _mm_extract_epi64::<0>(v) as u64;
        out[1][l] = _mm_extract_epi64::<1>(v) as u64;
    }
    out
}

/// [`blocks_aesni`] of `G` lanes whose counters differ from `ctr[l]` only in their first
/// word, which is `head` (the counters' first words in `ctr` are zero): each lane's counter
/// is one 16-byte load, where [`blocks_aesni`] gathers its four words from four rows. The
/// same numbers.
///
/// # Safety
/// The CPU must have AES-NI and SSE4.1.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.1,aes")]
#[inline]
pub unsafe fn blocks_aesni_heads<const G: usize>(
    ctr: &[[u32; 4]; G],
    head: u32,
    keys: &Keys,
) -> [[u64; G]; 2] {
    // SAFETY: this function's features.
    unsafe { blocks_aesni_heads_inline(ctr, head, keys) }
}

/// [`blocks_aesni_heads`], inlined into its caller: a call per block costs a sixth of the
/// block (a group of sixteen lanes is too large for LLVM to inline of its own accord).
///
/// # Safety
/// The CPU must have AES-NI and SSE4.1, and the caller must be compiled with them.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn blocks_aesni_heads_inline<const G: usize>(
    ctr: &[[u32; 4]; G],
    head: u32,
    keys: &Keys,
) -> [[u64; G]; 2] {
    use std::arch::x86_64::*;
    // SAFETY: the caller's promise; the loads read 16 bytes of 16-byte arrays.
    unsafe {
        let load = |s: &[u8; 16]| _mm_loadu_si128(s.as_ptr().cast());
        let k0 = _mm_xor_si128(load(&keys.round[0]), _mm_cvtsi32_si128(head as i32));
        let mut x = [_mm_setzero_si128(); G];
        for (x, c) in x.iter_mut().zip(ctr) {
            *x = _mm_xor_si128(_mm_loadu_si128(c.as_ptr().cast()), k0);
        }
        let mut round_keys = [_mm_setzero_si128(); ROUNDS];
        for (k, r) in round_keys.iter_mut().zip(&keys.round[1..]) {
            *k = load(r);
        }
        ars_rounds!(x, round_keys, _mm_aesenc_si128, _mm_aesenclast_si128);
        let mut out = [[0u64; G]; 2];
        for (l, v) in x.into_iter().enumerate() {
            out[0][l] = _mm_cvtsi128_si64(v) as u64;
            out[1][l] = _mm_extract_epi64::<1>(v) as u64;
        }
        out
    }
}

/// Pairs of blocks of one lane each: for each `c[i]`, the block of counter `c[i][..4]` and
/// the block of counter `c[i][4..]`, as their [`words64`] side by side (`[first block's two,
/// second block's two]`): the same numbers as [`block`]. With VAES (`VAES`) a pair is one
/// state vector, so each round is one instruction per pair; else two AES-NI instructions.
///
/// # Safety
/// The CPU must have AVX2 and AES-NI, and VAES if `VAES`; the caller must be compiled with
/// them (a function with the target features): it inlines there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn pairs<const N: usize, const VAES: bool>(
    c: &[[u32; 8]; N],
    keys: &Keys,
) -> [[u64; 4]; N] {
    use std::arch::x86_64::*;
    // SAFETY: the caller's promise; the loads and stores read and write 16 or 32 bytes of
    // arrays of that size.
    unsafe {
        let k0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(keys.round[0].as_ptr().cast()));
        let mut v: [__m256i; N] =
            std::array::from_fn(|i| _mm256_xor_si256(_mm256_loadu_si256(c[i].as_ptr().cast()), k0));
        if VAES {
            let round_keys: [__m256i; ROUNDS] = std::array::from_fn(|r| {
                _mm256_broadcastsi128_si256(_mm_loadu_si128(keys.round[r + 1].as_ptr().cast()))
            });
            ars_rounds!(
                v,
                round_keys,
                _mm256_aesenc_epi128,
                _mm256_aesenclast_epi128
            );
        } else {
            let mut x: [[__m128i; 2]; N] = std::array::from_fn(|i| {
                [
                    _mm256_castsi256_si128(v[i]),
                    _mm256_extracti128_si256::<1>(v[i]),
                ]
            });
            let round_keys: [__m128i; ROUNDS] =
                std::array::from_fn(|r| _mm_loadu_si128(keys.round[r + 1].as_ptr().cast()));
            let (last, middle) = round_keys.split_last().expect("at least one round");
            for k in middle {
                for [lo, hi] in x.iter_mut() {
                    (*lo, *hi) = (_mm_aesenc_si128(*lo, *k), _mm_aesenc_si128(*hi, *k));
                }
            }
            for [lo, hi] in x.iter_mut() {
                (*lo, *hi) = (
                    _mm_aesenclast_si128(*lo, *last),
                    _mm_aesenclast_si128(*hi, *last),
                );
            }
            v = x.map(|[lo, hi]| _mm256_set_m128i(hi, lo));
        }
        let mut out = [[0u64; 4]; N];
        for (o, v) in out.iter_mut().zip(v) {
            _mm256_storeu_si256(o.as_mut_ptr().cast(), v);
        }
        out
    }
}

#[cfg(test)]
mod tests;
