//! Content keys (`content_keys=`): one key list per run, one key per id, aligned with the runs;
//! the ids of equal key are fused as one.

use super::{IdsView, OwnedIds, OwnedRuns};
use crate::error::FusionError;
use crate::fusion::{self, FuseParams, Fusion, ScoredLists};
use crate::keys::FusionKey;
use crate::lists::RankedLists;

impl OwnedRuns {
    /// The runs: how many.
    #[must_use]
    pub fn n_runs(&self) -> usize {
        self.ids.bounds.len() - 1
    }

    /// Checks the number of key lists: one per run.
    pub fn check_key_lists(&self, n_lists: usize) -> Result<(), FusionError> {
        let n_runs = self.n_runs();
        if n_lists == n_runs {
            return Ok(());
        }
        Err(FusionError::invalid(format!(
            "content_keys has {n_lists} lists but there are {n_runs} runs; give one key list per run, aligned with its ids"
        )))
    }

    /// Checks key list `i` of `keys` (read so far): one key per id of run `i`.
    pub fn check_key_list(&self, keys: &OwnedIds, i: usize) -> Result<(), FusionError> {
        let length = |bounds: &[usize]| bounds[i + 1] - bounds[i];
        let (want, got) = (length(&self.ids.bounds), length(&keys.bounds));
        if want == got {
            return Ok(());
        }
        Err(FusionError::invalid(format!(
            "content_keys[{i}] has {got} keys but runs[{i}] has {want} ids; give one key per id"
        )))
    }

    /// Fuses the runs after merging the ids of equal key: each takes the first id with its key in a
    /// list of weight other than 0.
    pub fn fuse_keyed(&self, keys: &OwnedIds, params: &FuseParams) -> Result<Fusion, FusionError> {
        fn keyed<T: FusionKey>(
            ids: &[T],
            keys: &IdsView<'_>,
            runs: &OwnedRuns,
            params: &FuseParams,
        ) -> Result<Fusion, FusionError> {
            let fuse = |canonical: &[T]| {
                fusion::fuse(
                    &ScoredLists { ids: RankedLists::new(canonical, &runs.ids.bounds), scores: runs.scores() },
                    params,
                )
            };
            // A weight-0 list is ignored entirely: it names no key's id either.
            let counts = |list: usize| params.weights.as_ref().is_none_or(|w| w.get(list) != Some(&0.0));
            let bounds = &runs.ids.bounds;
            match keys {
                IdsView::Str(k) => fuse(&fusion::canonical_ids(ids, k, bounds, counts)),
                IdsView::Int(k) => fuse(&fusion::canonical_ids(ids, k, bounds, counts)),
            }
        }
        self.check_key_lists(keys.bounds.len() - 1)?;
        (0..self.n_runs()).try_for_each(|i| self.check_key_list(keys, i))?;
        let keys = keys.view();
        match self.ids.view() {
            IdsView::Str(ids) => keyed(&ids, &keys, self, params),
            IdsView::Int(ids) => keyed(ids, &keys, self, params),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owned_ids::IdKind;

    fn int_runs(lists: &[&[i64]]) -> OwnedRuns {
        let mut runs = OwnedRuns::new();
        runs.ids.set_kind(IdKind::Int, || "runs[0][0]".into()).unwrap();
        for list in lists {
            runs.ids.ints.extend_from_slice(list);
            runs.ids.bounds.push(runs.ids.len());
        }
        runs
    }

    #[test]
    fn content_keys_merge_the_ids_of_equal_key_into_the_first() {
        let runs = int_runs(&[&[1, 2], &[3]]);
        let mut keys = OwnedIds::new();
        keys.set_kind(IdKind::Str, || "content_keys[0][0]".into()).unwrap();
        for (key, end) in [("x", false), ("y", true), ("x", true)] {
            keys.push_str(key);
            if end {
                keys.bounds.push(keys.len());
            }
        }
        let fused = runs.fuse_keyed(&keys, &FuseParams::default()).unwrap();
        let ids: Vec<i64> = fused.hits.iter().map(|h| runs.ids.ints[h.item]).collect();
        assert_eq!(ids, [1, 2]); // 3 has the key of 1: one hit, in both runs
    }

    #[test]
    fn content_keys_of_the_wrong_count_are_refused_by_name() {
        let runs = int_runs(&[&[1, 2], &[3]]);
        let keys = int_runs(&[&[7, 8]]).ids;
        let message = |e: FusionError| e.to_string();
        assert_eq!(
            runs.fuse_keyed(&keys, &FuseParams::default()).map_err(message).unwrap_err(),
            "content_keys has 1 lists but there are 2 runs; give one key list per run, aligned with its ids"
        );
        let keys = int_runs(&[&[7], &[8]]).ids;
        assert_eq!(
            runs.fuse_keyed(&keys, &FuseParams::default()).map_err(message).unwrap_err(),
            "content_keys[0] has 1 keys but runs[0] has 2 ids; give one key per id"
        );
        assert_eq!(runs.check_key_list(&keys, 1), Ok(()));
    }
}
