//! A chunk of a batch: the runs of many queries in one set of buffers, each query a window of them.

use super::OwnedRuns;
use crate::error::FusionError;
use crate::fusion::{FuseParams, Fusion};

/// A chunk of a batch: its runs, and per query the window of `runs.ids.bounds` holding its lists.
pub struct OwnedBatch {
    pub runs: OwnedRuns,
    /// Query q's lists are delimited by `runs.ids.bounds[query_lists[q]..=query_lists[q + 1]]`.
    pub query_lists: Vec<usize>,
    /// The number of the chunk's first query in the batch, for messages.
    pub first: usize,
}

impl Default for OwnedBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl OwnedBatch {
    #[must_use]
    pub fn new() -> Self {
        Self { runs: OwnedRuns::new(), query_lists: vec![0], first: 0 }
    }

    /// Empties the chunk for the queries from number `first` on, keeping its buffers (fresh ones per
    /// chunk cost a page fault every 4 KiB).
    pub fn restart(&mut self, first: usize) {
        self.runs.clear();
        self.query_lists.clear();
        self.query_lists.push(0);
        self.first = first;
    }

    /// Closes the query whose lists were pushed since the previous one closed.
    pub fn end_query(&mut self) {
        self.query_lists.push(self.runs.ids.bounds.len() - 1);
    }

    /// An empty chunk that continues this one: the same id kind is required.
    #[must_use]
    pub fn next_chunk(&self) -> Self {
        let mut next = Self::new();
        next.runs.ids.kind.clone_from(&self.runs.ids.kind);
        next
    }

    /// Every query fused, in order (on `threads` threads; the binding runs it with the GIL released).
    pub fn fuse(&self, params: &FuseParams, threads: Option<usize>) -> Result<Vec<Fusion>, FusionError> {
        let queries: Vec<usize> = (0..self.query_lists.len() - 1).collect();
        let scores = self.runs.scores();
        let one = |&q: &usize| {
            let bounds = &self.runs.ids.bounds[self.query_lists[q]..=self.query_lists[q + 1]];
            // Name the query in the message: the core only knows the list's index within it.
            let named = |e: FusionError| FusionError::invalid(format!("queries[{}]: {e}", self.first + q));
            self.runs.ids.fuse(bounds, scores, params).map_err(named)
        };
        crate::batch::map_queries(&queries, threads, one)?.into_iter().collect()
    }

    /// Seconds [`Self::fuse`] takes on one thread, the best of `repeat` runs (so with warm caches,
    /// as a batch sees its chunk just copied): the bare kernel, for the benchmarks to compare with.
    pub fn fuse_seconds(&self, params: &FuseParams, repeat: usize) -> Result<f64, FusionError> {
        let mut best = f64::INFINITY;
        for _ in 0..repeat.max(1) {
            let start = std::time::Instant::now();
            let fused = self.fuse(params, Some(1))?;
            best = best.min(start.elapsed().as_secs_f64());
            drop(std::hint::black_box(fused));
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owned_ids::{IdKind, ListPath};

    #[test]
    fn a_batch_fuses_each_query_over_its_own_lists() {
        let mut batch = OwnedBatch::new();
        batch.runs.ids.set_kind(IdKind::Int, || "queries[0][0][0]".into()).unwrap();
        // Query 0: [1, 2] and [2]; query 1: [7].
        for (list, ends_query) in [(&[1, 2][..], false), (&[2], true), (&[7], true)] {
            batch.runs.ids.push_ints(list, ListPath::of_query(0, 0)).unwrap();
            batch.runs.ids.bounds.push(batch.runs.ids.len());
            if ends_query {
                batch.end_query();
            }
        }
        assert_eq!(batch.query_lists, [0, 2, 3]);
        let fused = batch.fuse(&FuseParams::default(), Some(1)).unwrap();
        let ids = &batch.runs.ids.ints;
        let fused_ids: Vec<Vec<i64>> = fused.iter().map(|f| f.hits.iter().map(|h| ids[h.item]).collect()).collect();
        assert_eq!(fused_ids, [vec![2, 1], vec![7]]);
        assert!(batch.next_chunk().runs.ids.kind_is(IdKind::Int));
        batch.restart(64);
        assert!(batch.runs.ids.is_empty() && batch.query_lists == [0] && batch.first == 64);
    }
}
