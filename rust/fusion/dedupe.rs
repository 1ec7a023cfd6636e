//! Content keys: different ids that stand for the same content (the same text indexed twice, or
//! chunks of one document) fuse as one document when they share a key.

use std::collections::HashMap;

use crate::keys::FusionKey;

/// `ids` (lists cut at `bounds`) with every id replaced by the first id (in reading order: list by
/// list, rank by rank) that has the same key in a list that `counts`; `keys[j]` is the key of
/// `ids[j]`. Fusing the result merges equal keys, and the duplicate policy decides what a key
/// repeated inside one list means. A list that does not count (weight 0: ignored entirely) names no
/// key's id: its ids stay as they are.
///
/// # Panics
/// If `keys` and `ids` differ in length (`OwnedRuns::fuse_keyed` checks this first).
#[must_use]
pub fn canonical_ids<T: FusionKey, K: FusionKey>(
    ids: &[T],
    keys: &[K],
    bounds: &[usize],
    counts: impl Fn(usize) -> bool,
) -> Vec<T> {
    assert_eq!(ids.len(), keys.len(), "one key per id");
    let mut first: HashMap<K, T, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(ids.len(), foldhash::fast::RandomState::default());
    for (list, range) in bounds.windows(2).enumerate() {
        if counts(list) {
            for j in range[0]..range[1] {
                first.entry(keys[j]).or_insert(ids[j]);
            }
        }
    }
    ids.iter().zip(keys).map(|(&id, key)| first.get(key).copied().unwrap_or(id)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_take_the_first_id() {
        let ids = ["a", "b", "c", "d"];
        let keys = [1_i64, 2, 1, 3];
        assert_eq!(canonical_ids(&ids, &keys, &[0, 4], |_| true), ["a", "b", "a", "d"]);
    }

    #[test]
    fn a_list_that_does_not_count_names_no_key() {
        let (ids, keys) = (["z", "c", "a"], [1_i64, 2, 1]);
        assert_eq!(canonical_ids(&ids, &keys, &[0, 1, 2, 3], |list| list != 0), ["a", "c", "a"]);
    }
}
