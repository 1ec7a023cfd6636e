//! Fusion keys: what an id must be for the kernel (hashable, ordered, cheap to copy), and the seeded
//! hashes of short keys (an i64, or a str id read as two words plus its length).

use std::hash::{BuildHasher, Hash};

/// Per-call hash seeds: two words for the short-key hashes, and foldhash (seeded per process and per
/// call) for str ids longer than 16 bytes. Unknown seeds keep adversarial ids from colliding cheaply.
#[derive(Clone)]
pub struct KeySeeds {
    s0: u64,
    s1: u64,
    long: foldhash::fast::RandomState,
}

impl KeySeeds {
    #[must_use]
    pub fn new() -> Self {
        let long = foldhash::fast::RandomState::default();
        Self { s0: long.hash_one(0x243F_6A88_85A3_08D3_u64), s1: long.hash_one(0x1319_8A2E_0370_7344_u64), long }
    }
}

impl Default for KeySeeds {
    fn default() -> Self {
        Self::new()
    }
}

/// The 128-bit product of `x` and `y`, its halves xor-ed (the mixing step of foldhash and wyhash).
#[inline]
fn folded_multiply(x: u64, y: u64) -> u64 {
    let full = u128::from(x) * u128::from(y);
    (full as u64) ^ ((full >> 64) as u64)
}

/// What an id must be for fusion: cheap to copy, hashable, and totally ordered (for `tie_break="id"`).
/// Implemented for `i64` and `&str`; `&str` orders by bytes, which for UTF-8 is code-point order,
/// the same order Python uses for `str`.
///
/// The kernel keeps each candidate's [`FusionKey::Inline`] form in its own record, so that matching
/// an id against a candidate reads neither the candidate's id bytes nor the input again.
pub trait FusionKey: Copy + Eq + Hash + Ord + Send + Sync + std::fmt::Debug {
    /// A fixed-size form of the id, computed once per occurrence.
    type Inline: Copy;
    fn inline(self) -> Self::Inline;
    /// A seeded hash of the id, given its inline form.
    fn hash_with(self, inline: Self::Inline, seeds: &KeySeeds) -> u64;
    /// `self == other`, where `inline`/`other_inline` are the inline forms of the two ids; `other` is
    /// only called when the inline forms cannot decide (str ids longer than 16 bytes).
    fn same(self, inline: Self::Inline, other_inline: Self::Inline, other: impl FnOnce() -> Self) -> bool;
}

impl FusionKey for i64 {
    type Inline = i64;

    #[inline]
    fn inline(self) -> i64 {
        self
    }

    #[inline]
    fn hash_with(self, _: i64, seeds: &KeySeeds) -> u64 {
        folded_multiply(u64::from_ne_bytes(self.to_ne_bytes()) ^ seeds.s0, seeds.s1)
    }

    #[inline]
    fn same(self, _: i64, other_inline: i64, _: impl FnOnce() -> Self) -> bool {
        self == other_inline
    }
}

/// A str id as the kernel stores it: its length and two words that, for ids of at most 16 bytes,
/// determine it completely (first and last 8 bytes, overlapping; shorter ids padded with zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrInline {
    head: u64,
    tail: u64,
    len: u64,
}

impl FusionKey for &str {
    type Inline = StrInline;

    /// Ids are short (a few to a few dozen bytes): two word loads replace the byte loops of a general
    /// hasher and the `memcmp` of a comparison (which took 11% of the str kernel).
    #[inline]
    fn inline(self) -> StrInline {
        let b = self.as_bytes();
        let n = b.len();
        let (head, tail) = if n >= 8 {
            (word(&b[..8]), word(&b[n - 8..]))
        } else if n >= 4 {
            (u64::from(half(&b[..4])), u64::from(half(&b[n - 4..])))
        } else if n > 0 {
            (u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16, 0)
        } else {
            (0, 0)
        };
        StrInline { head, tail, len: n as u64 }
    }

    #[inline]
    fn hash_with(self, inline: StrInline, seeds: &KeySeeds) -> u64 {
        if inline.len <= 16 {
            folded_multiply(inline.head ^ seeds.s0, inline.tail ^ seeds.s1 ^ inline.len.rotate_right(8))
        } else {
            seeds.long.hash_one(self)
        }
    }

    #[inline]
    fn same(self, inline: StrInline, other_inline: StrInline, other: impl FnOnce() -> Self) -> bool {
        // Up to 16 bytes, length, head and tail together determine the id (for n >= 8 the two words
        // cover all bytes; for 4 <= n < 8 the two halves do; below 4, first, middle and last byte do).
        inline == other_inline && (inline.len <= 16 || self.as_bytes()[8..] == other().as_bytes()[8..])
    }
}

/// The first 8 bytes of `bytes` as one machine word.
#[inline]
fn word(bytes: &[u8]) -> u64 {
    let mut out = [0; 8];
    out.copy_from_slice(&bytes[..8]);
    u64::from_ne_bytes(out)
}

/// The first 4 bytes of `bytes`.
#[inline]
fn half(bytes: &[u8]) -> u32 {
    let mut out = [0; 4];
    out.copy_from_slice(&bytes[..4]);
    u32::from_ne_bytes(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn str_same_agrees_with_eq_at_every_length() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789é🙂";
        for (end, _) in text.char_indices().chain([(text.len(), ' ')]) {
            let a = &text[..end];
            let owned = a.to_string();
            let same = |x: &str, y: &str| x.same(x.inline(), y.inline(), || y);
            assert!(same(a, &owned), "{a:?}");
            for (at, ch) in a.char_indices() {
                // one character changed at every position (a multi-byte one also changes the length)
                let other: String = a[..at].to_string() + if ch == 'x' { "y" } else { "x" } + &a[at + ch.len_utf8()..];
                assert_eq!(same(a, &other), a == other, "{a:?} vs {other:?}");
            }
        }
    }
}
