//! Tests of `ars`: the same bits as the scalar reference in every build.

use super::*;

/// `block` with `r` rounds under the key `[k0, k1, k2, k3]` (32-bit words, low first).
fn ars(r: usize, ctr: [u32; 4], key: [u32; 4]) -> [u32; 4] {
    let key = [
        u64::from(key[0]) | u64::from(key[1]) << 32,
        u64::from(key[2]) | u64::from(key[3]) << 32,
    ];
    match r {
        7 => rounds(ctr, &Keys::new(key).round),
        10 => rounds(ctr, &schedule::<11>(key)),
        _ => unreachable!(),
    }
}

#[test]
fn known_answers_of_the_reference_implementation() {
    // Random123's published known-answer vectors for ARS4x32 with ten rounds (its
    // `kat_vectors`: counter, key, output, 32-bit words low first); the schedule and the
    // rounds are the same code for seven.
    let cases: [([u32; 4], [u32; 4], [u32; 4]); 3] = [
        (
            [0; 4],
            [0; 4],
            [0x8d73ee19, 0x506401ef, 0x13c2dbe4, 0x0cbe9c0d],
        ),
        (
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0, 0x082efa98, 0xec4e6c89],
            [0xa516e7d6, 0x8357ad74, 0x5b59b3ec, 0x8763fff3],
        ),
        (
            [u32::MAX; 4],
            [u32::MAX, u32::MAX, 0, 0],
            [0xbb3743b1, 0x9f635551, 0xecbc87fc, 0xa19478a9],
        ),
    ];
    for (ctr, key, out) in cases {
        assert_eq!(ars(10, ctr, key), out, "{ctr:x?} {key:x?}");
    }
}

/// A plain byte-wise AES round (FIPS 197), written independently of the `aes` crate, to
/// check the rounds `block` runs wherever the crate uses its software round.
fn reference_round(s: [u8; 16], k: &[u8; 16], mix: bool) -> [u8; 16] {
    fn mul(mut a: u8, mut b: u8) -> u8 {
        let mut p = 0u8;
        while b != 0 {
            if b & 1 != 0 {
                p ^= a;
            }
            a = (a << 1) ^ if a & 0x80 != 0 { 0x1b } else { 0 };
            b >>= 1;
        }
        p
    }
    fn sub(x: u8) -> u8 {
        // The multiplicative inverse (x^254), then the affine map.
        let mut inv = 1u8;
        for _ in 0..254 {
            inv = mul(inv, x);
        }
        let inv = if x == 0 { 0 } else { inv };
        inv ^ inv.rotate_left(1)
            ^ inv.rotate_left(2)
            ^ inv.rotate_left(3)
            ^ inv.rotate_left(4)
            ^ 0x63
    }
    // Byte `4c + r` is row `r` of column `c`; ShiftRows moves row `r` left by `r`.
    let shifted: [u8; 16] = std::array::from_fn(|i| {
        let (c, r) = (i / 4, i % 4);
        sub(s[4 * ((c + r) % 4) + r])
    });
    let mixed: [u8; 16] = if mix {
        std::array::from_fn(|i| {
            let (c, r) = (i / 4, i % 4);
            let col = &shifted[4 * c..4 * c + 4];
            mul(2, col[r]) ^ mul(3, col[(r + 1) % 4]) ^ col[(r + 2) % 4] ^ col[(r + 3) % 4]
        })
    } else {
        shifted
    };
    std::array::from_fn(|i| mixed[i] ^ k[i])
}

#[test]
fn the_reference_round_is_aes() {
    // FIPS 197 appendix C.1: AES-128 of 00112233..ff under the key 00010203..0f.
    let key: [u8; 16] = std::array::from_fn(|i| i as u8);
    let plain: [u8; 16] = std::array::from_fn(|i| (i as u8) * 0x11);
    // The AES-128 key expansion.
    let mut w: Vec<[u8; 4]> = (0..4)
        .map(|i| [key[4 * i], key[4 * i + 1], key[4 * i + 2], key[4 * i + 3]])
        .collect();
    let sbox = |x: u8| reference_round([x; 16], &[0; 16], false)[0];
    let mut rcon = 1u8;
    for i in 4..44 {
        let mut t = w[i - 1];
        if i % 4 == 0 {
            t = [sbox(t[1]) ^ rcon, sbox(t[2]), sbox(t[3]), sbox(t[0])];
            rcon = (rcon << 1) ^ if rcon & 0x80 != 0 { 0x1b } else { 0 };
        }
        w.push(std::array::from_fn(|j| w[i - 4][j] ^ t[j]));
    }
    let round_key = |r: usize| -> [u8; 16] { std::array::from_fn(|i| w[4 * r + i / 4][i % 4]) };
    let mut s: [u8; 16] = std::array::from_fn(|i| plain[i] ^ round_key(0)[i]);
    for r in 1..=10 {
        s = reference_round(s, &round_key(r), r < 10);
    }
    let expect = [
        0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5,
        0x5a,
    ];
    assert_eq!(s, expect);
}

#[test]
fn blocks_run_the_aes_rounds() {
    let mut x = 0x0123_4567_89ab_cdefu64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 32) as u32
    };
    for _ in 0..200 {
        let ctr = [next(), next(), next(), next()];
        let key = [
            u64::from(next()) << 32 | u64::from(next()),
            u64::from(next()) << 32 | u64::from(next()),
        ];
        let keys = Keys::new(key);
        let mut s = state(ctr);
        s = std::array::from_fn(|i| s[i] ^ keys.round[0][i]);
        for r in 1..=ROUNDS {
            s = reference_round(s, &keys.round[r], r < ROUNDS);
        }
        assert_eq!(rounds(ctr, &keys.round), words(s));
        assert_eq!(block(ctr, &keys), words(s));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,aes")]
fn pairs_aesni(c: &[[u32; 8]; 3], keys: &Keys) -> [[u64; 4]; 3] {
    // SAFETY: this function's features, which the caller checked.
    unsafe { pairs::<3, false>(c, keys) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,aes,vaes")]
fn pairs_vaes(c: &[[u32; 8]; 3], keys: &Keys) -> [[u64; 4]; 3] {
    // SAFETY: this function's features, which the caller checked.
    unsafe { pairs::<3, true>(c, keys) }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn pairs_give_what_one_block_gives() {
    if !crate::cpu::avx2_fma() || !crate::cpu::aes() {
        return;
    }
    let keys = Keys::new([0x0bad_cafe_dead_beef, 0x1357_9bdf_0246_8ace]);
    let c: [[u32; 8]; 3] = std::array::from_fn(|i| {
        std::array::from_fn(|j| (0x9e37_79b9u32 ^ (i as u32) << 8).wrapping_mul(j as u32 + 1))
    });
    // SAFETY: the CPU has AVX2 and AES-NI (checked above), VAES where used.
    let mut runs = vec![unsafe { pairs_aesni(&c, &keys) }];
    if crate::cpu::vaes() {
        // SAFETY: the CPU has AVX2, AES-NI (checked above) and VAES (just checked).
        runs.push(unsafe { pairs_vaes(&c, &keys) });
    }
    for got in runs {
        for (c, got) in c.iter().zip(got) {
            let (a, b) = words64(block([c[0], c[1], c[2], c[3]], &keys));
            let (d, e) = words64(block([c[4], c[5], c[6], c[7]], &keys));
            assert_eq!(got, [a, b, d, e], "{c:x?}");
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn sixteen_lanes_give_what_one_block_gives() {
    use std::arch::x86_64::*;
    if !crate::cpu::avx2_fma() || !crate::cpu::aes() {
        return;
    }
    let keys = Keys::new([0x1234_5678_9abc_def0, 0x0fed_cba9_8765_4321]);
    let lanes: [u32; 16] = std::array::from_fn(|l| 0xffff_fff0u32.wrapping_add(3 * l as u32));
    let (a, b) = (0xdead_beef, 0x0bad_f00d);
    // SAFETY: the CPU has AVX2 and AES-NI (checked above), VAES where used.
    let group = unsafe { Group16::new(&keys, lanes, a, b) };
    for head in [0u32, 1, 77, 1 << 30, u32::MAX] {
        // SAFETY: the CPU has AVX2 and AES-NI (checked above).
        let mut runs = vec![unsafe { group.words_aesni(head) }];
        if crate::cpu::vaes() {
            // SAFETY: and VAES (just checked).
            runs.push(unsafe { group.words_vaes(head) });
        }
        for (first, second) in runs {
            let mut got = [[0u64; 16]; 2];
            for q in 0..4 {
                // SAFETY: unaligned stores of four 64-bit words into `got[i][4 q..]`,
                // which holds at least four (`q < 4`, sixteen words a row); AVX, which the
                // CPU has (AVX2, checked above).
                unsafe {
                    _mm256_storeu_si256(got[0][4 * q..].as_mut_ptr().cast(), first[q]);
                    _mm256_storeu_si256(got[1][4 * q..].as_mut_ptr().cast(), second[q]);
                }
            }
            for l in 0..16 {
                let want = words64(block([head, lanes[l], a, b], &keys));
                assert_eq!((got[0][l], got[1][l]), want, "head {head} lane {l}");
            }
        }
    }
}
