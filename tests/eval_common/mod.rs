//! Helpers of the tests that compare builds of the sweeps bit for bit: a deterministic
//! number stream and bits with every NaN as one.

#![allow(dead_code)]

/// A deterministic stream of numbers in [0, 1) (a 64-bit LCG's top 53 bits).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() * n as f64) as usize % n
    }
}

/// Bits, with every NaN as one (builds may differ in a NaN's sign, never in a number).
pub fn bits(xs: &[f64]) -> Vec<u64> {
    xs.iter()
        .map(|x| {
            if x.is_nan() {
                f64::NAN.to_bits()
            } else {
                x.to_bits()
            }
        })
        .collect()
}
