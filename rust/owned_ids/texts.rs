//! Str ids held as one text buffer: the ids a call copies out of Python, and a result's ids.

/// Str ids as one text buffer and the end of each id in it: one allocation for all of them, and a
/// slice per id without re-validating its UTF-8.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Texts {
    /// Filled only with whole `&str`s, each followed by its end in `ends` ([`Self::get`] relies on it).
    text: String,
    ends: Vec<usize>,
}

impl Texts {
    #[must_use]
    pub fn with_capacity(ids: usize) -> Self {
        Self { text: String::new(), ends: Vec::with_capacity(ids) }
    }

    #[inline]
    pub fn push(&mut self, id: &str) {
        self.text.push_str(id);
        self.ends.push(self.text.len());
    }

    /// Id number `i`.
    #[must_use]
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        // SAFETY: the buffer holds whole `&str`s back to back and `ends` marks their boundaries, so
        // every slice is on char boundaries (checking them cost 15% of a call).
        unsafe { self.text.get_unchecked(start..self.ends[i]) }
    }

    #[must_use]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> {
        (0..self.ends.len()).map(|i| self.get(i))
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }
}
