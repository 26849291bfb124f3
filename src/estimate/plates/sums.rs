//! Sums over rows: each lane's values added one after another in row order, the lanes'
//! chains side by side, so that a sum's bits do not depend on the threads or the kernels.

use crate::eval::CHUNK;

/// `acc[l] += src[l][0] + ... + src[l][n - 1]`, one addition after another in each lane, the
/// lanes' chains interleaved.
#[inline]
#[allow(clippy::needless_range_loop)] // one row of every lane at a time, on purpose
pub(super) fn add_lanes(acc: &mut [f64], src: &[&[f64]], n: usize) {
    if let (Ok(acc), Ok(src)) = (
        <&mut [f64; CHUNK]>::try_from(&mut *acc),
        <&[&[f64]; CHUNK]>::try_from(src),
    ) {
        let src: [&[f64]; CHUNK] = std::array::from_fn(|l| &src[l][..n]);
        for t in 0..n {
            for l in 0..CHUNK {
                acc[l] += src[l][t];
            }
        }
        return;
    }
    for t in 0..n {
        for (a, s) in acc.iter_mut().zip(src) {
            *a += s[t];
        }
    }
}
