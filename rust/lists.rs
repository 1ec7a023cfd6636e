//! Ranked lists as the kernel sees them: one flat slice of ids plus list boundaries, so that a call
//! (or a whole batch) is two allocations however many lists it has.

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
