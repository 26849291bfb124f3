//! Tests of `group16`: the same bits as the scalar reference in every build.

use super::super::{Channel, Purpose, StreamKey};
use super::*;

/// The AES-NI build of a group, which a CPU with VAES never picks by itself.
#[cfg(target_arch = "x86_64")]
#[test]
fn groups_without_vaes_give_one_normal_after_another() {
    if !crate::cpu::avx2_fma() || !crate::cpu::aes() {
        return;
    }
    let key = StreamKey::new(5, 9, Purpose::Step);
    let t = normal::tables();
    for (first, w, n) in [(0, 16, 301), (21, 20, 37), (100, 32, 2)] {
        let mut rng = key.rng(Channel::Noise);
        let mut plain = vec![0.0; w * n];
        for l in 0..w {
            let r = rng.lane(first + l);
            for k in 0..n {
                plain[k * w + l] = r.normal();
            }
        }
        let mut bulk = vec![f64::NAN; w * n];
        let mut pending = Pending::default();
        for g0 in (0..w).step_by(GROUP) {
            // SAFETY: the CPU has AVX2, FMA and AES-NI (checked above).
            unsafe { rng.fill_group16_aesni(t, first as u64, w, n, &mut bulk, g0, &mut pending) };
        }
        // SAFETY: as above.
        unsafe { rng.redo_batch_aesni(t, &pending, &mut bulk) };
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&bulk), bits(&plain), "{first} {w} {n}");
    }
}
