//! A fast, non-cryptographic hasher for the builder's tables (node interning, if-statement
//! spans), in the multiply-and-rotate style of rustc's `FxHasher`.
//!
//! The keys are small fixed-size values made by the program itself (node ids, opcodes, bit
//! patterns of constants), so SipHash's protection against chosen collisions buys nothing
//! here, while it was about 40 % of compiling a million-node program. Hashes are the same in
//! every process (no random seed), which also keeps nothing order-dependent: no table here is
//! ever iterated to build output.

use std::hash::{BuildHasherDefault, Hasher};

/// Odd multiplier with well-spread bits (the golden ratio's, as in Fx hashing).
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// Word-at-a-time hasher: `h = (rotl(h, 5) ^ word) * K`.
#[derive(Clone, Copy, Debug, Default)]
pub struct FastHasher {
    hash: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            // The length keeps "a" and "a\0" apart.
            self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.add(i as u32 as u64);
    }

    #[inline]
    fn write_isize(&mut self, i: isize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        mix(self.hash)
    }
}

/// The finishing mix (xor-shift, multiply, xor-shift): the word-at-a-time state alone
/// spreads consecutive ids poorly over the middle bits that pick a table's bucket (7,598
/// buckets of 65,536 for 65,536 consecutive ids; 41,500 after this, as random hashes give).
#[inline]
fn mix(mut h: u64) -> u64 {
    h ^= h >> 32;
    h = h.wrapping_mul(0xd6e8_feb8_6659_fd93);
    h ^ (h >> 32)
}

/// 32 bits of the hash of `value`, for tables that store the hash beside each entry.
#[inline]
pub fn hash32<T: std::hash::Hash + ?Sized>(value: &T) -> u32 {
    let mut h = FastHasher::default();
    value.hash(&mut h);
    (mix(h.hash) >> 32) as u32
}

/// A stored 32-bit hash as the 64 bits a `hashbrown` table reads: its bucket from the low
/// bits, its tag from the top 7, both from the 32.
#[inline]
pub fn spread(h: u32) -> u64 {
    u64::from(h) * 0x1_0000_0001
}

/// `BuildHasher` of [`FastHasher`], for `HashMap<K, V, FastBuild>`.
pub type FastBuild = BuildHasherDefault<FastHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Binary, Node, NodeId};

    #[test]
    fn equal_values_hash_equal_and_neighbours_differ() {
        let a = Node::Binary(Binary::Add, NodeId(1), NodeId(2));
        assert_eq!(hash32(&a), hash32(&a));
        let b = Node::Binary(Binary::Add, NodeId(2), NodeId(1));
        let c = Node::Binary(Binary::Mul, NodeId(1), NodeId(2));
        assert_ne!(hash32(&a), hash32(&b));
        assert_ne!(hash32(&a), hash32(&c));
        assert_ne!(hash32("a"), hash32("a\0"));
    }

    #[test]
    fn consecutive_ids_spread_over_buckets() {
        // The low 16 bits (a table's bucket index) of 65,536 consecutive nodes: nearly all
        // distinct, as a good hash gives (about 63 % of buckets hit for random hashes).
        let mut seen = vec![false; 1 << 16];
        for i in 0..1u32 << 16 {
            let h = spread(hash32(&Node::Binary(Binary::Add, NodeId(0), NodeId(i))));
            seen[(h & 0xffff) as usize] = true;
        }
        let hit = seen.iter().filter(|&&s| s).count();
        assert!(hit > 40_000, "{hit} of 65536 buckets hit");
    }
}
