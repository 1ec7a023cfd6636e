//! Content keys: different ids that stand for the same content (the same text indexed twice, or
//! chunks of one document) fuse as one document when they share a key.

use std::collections::HashMap;

use crate::keys::FusionKey;

/// `ids` with every id replaced by the first id (in reading order: list by list, rank by rank) that
/// has the same key; `keys[j]` is the key of `ids[j]`. Fusing the result merges equal keys, and the
/// duplicate policy decides what a key repeated inside one list means.
///
/// # Panics
/// If `keys` and `ids` differ in length (`OwnedRuns::fuse_keyed` checks this first).
#[must_use]
pub fn canonical_ids<T: FusionKey, K: FusionKey>(ids: &[T], keys: &[K]) -> Vec<T> {
    assert_eq!(ids.len(), keys.len(), "one key per id");
    let mut first: HashMap<K, T, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(ids.len(), foldhash::fast::RandomState::default());
    ids.iter().zip(keys).map(|(&id, &key)| *first.entry(key).or_insert(id)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_take_the_first_id() {
        let ids = ["a", "b", "c", "d"];
        let keys = [1_i64, 2, 1, 3];
        assert_eq!(canonical_ids(&ids, &keys), ["a", "b", "a", "d"]);
    }
}
