//! Ranked lists as the kernel sees them: one flat slice of ids plus list boundaries, so that a call
//! (or a whole batch) is two allocations however many lists it has.

use std::hash::Hash;

/// What an id must be for fusion: cheap to copy, hashable, and totally ordered (for `tie_break="id"`).
/// Implemented for `i64` and `&str`; `&str` orders by bytes, which for UTF-8 is code-point order,
/// the same order Python uses for `str`.
pub trait FusionKey: Copy + Eq + Hash + Ord + Send + Sync {
    /// `self == other`; a key type may do it faster for the kernel's hot loop.
    #[inline]
    fn same(self, other: Self) -> bool {
        self == other
    }
}

impl FusionKey for i64 {}

impl FusionKey for &str {
    /// Ids are short (a few to a few dozen bytes): comparing 8 bytes at a time inline beats a call
    /// to `memcmp`, which took 11% of the str kernel.
    #[inline]
    fn same(self, other: Self) -> bool {
        let (a, b) = (self.as_bytes(), other.as_bytes());
        let n = a.len();
        if n != b.len() {
            return false;
        }
        if n < 8 {
            return a.iter().zip(b).all(|(x, y)| x == y);
        }
        // Whole words, then the last 8 bytes (overlapping the last word when n is not a multiple of 8).
        a.chunks_exact(8).zip(b.chunks_exact(8)).all(|(x, y)| word(x) == word(y))
            && word(&a[n - 8..]) == word(&b[n - 8..])
    }
}

/// The first 8 bytes of `bytes` as one machine word.
#[inline]
fn word(bytes: &[u8]) -> u64 {
    let mut out = [0; 8];
    out.copy_from_slice(&bytes[..8]);
    u64::from_ne_bytes(out)
}

/// `R` ranked lists stored back to back: list `i` is `items[bounds[i]..bounds[i + 1]]`, best first.
/// Bounds are absolute offsets into `items`, so a batch can keep every query's lists in one buffer
/// and hand the kernel a window of the bounds per query.
#[derive(Debug, Clone, Copy)]
pub struct RankedLists<'a, T> {
    items: &'a [T],
    bounds: &'a [usize],
}

impl<'a, T> RankedLists<'a, T> {
    /// `bounds` has one entry more than there are lists, never decreases and ends at most at
    /// `items.len()`. An empty `bounds` (or a single entry) means no lists.
    ///
    /// # Panics
    /// If `bounds` does not describe `items` as above (a bug in the caller, not bad user input).
    #[must_use]
    pub fn new(items: &'a [T], bounds: &'a [usize]) -> Self {
        assert!(bounds.last().is_none_or(|&end| end <= items.len()), "bounds must end within items");
        assert!(bounds.windows(2).all(|w| w[0] <= w[1]), "bounds must not decrease");
        Self { items, bounds }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.bounds.len().saturating_sub(1)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ids of list `i`, best first.
    #[must_use]
    pub fn list(&self, i: usize) -> &'a [T] {
        &self.items[self.bounds[i]..self.bounds[i + 1]]
    }

    /// Index in [`Self::items`] where list `i` starts.
    #[must_use]
    pub fn start(&self, i: usize) -> usize {
        self.bounds[i]
    }

    /// The flat slice the bounds index into.
    #[must_use]
    pub fn items(&self) -> &'a [T] {
        self.items
    }

    #[must_use]
    /// Number of ids in all lists together.
    pub fn total_len(&self) -> usize {
        match (self.bounds.first(), self.bounds.last()) {
            (Some(first), Some(last)) => last - first,
            _ => 0,
        }
    }
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
            assert!(a.same(&owned), "{a:?}");
            for (at, ch) in a.char_indices() {
                // one character changed at every position (a multi-byte one also changes the length)
                let other: String = a[..at].to_string() + if ch == 'x' { "y" } else { "x" } + &a[at + ch.len_utf8()..];
                assert_eq!(a.same(&other), a == other, "{a:?} vs {other:?}");
            }
        }
    }
}
