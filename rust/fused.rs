//! The result of one fusion, owned: its ids copied out of the call's ids, their scores, and (when
//! asked) each hit's contributions. It borrows nothing, so it outlives the call's buffers.

use crate::batch::{pool_for, Pipeline};
use crate::error::FusionError;
use crate::fusion::{Contribution, FuseParams, Fusion};
use crate::owned_ids::{IdKind, OwnedBatch, OwnedIds, OwnedRuns, Texts};

/// One id of a result: str or int, like the call's ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Id<'a> {
    Str(&'a str),
    Int(i64),
}

/// The ids of a result, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FusedIds {
    Str(Texts),
    Int(Vec<i64>),
}

impl FusedIds {
    /// The ids of `ids` at `items`, in that order. A call without ids has no kind: its (empty)
    /// result counts as int.
    fn gather(ids: &OwnedIds, items: impl ExactSizeIterator<Item = usize>) -> Self {
        if ids.kind_is(IdKind::Str) {
            let mut texts = Texts::with_capacity(items.len());
            for item in items {
                texts.push(ids.str_at(item));
            }
            Self::Str(texts)
        } else {
            Self::Int(items.map(|item| ids.ints[item]).collect())
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Self::Str(texts) => texts.len(),
            Self::Int(ints) => ints.len(),
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[must_use]
    pub fn get(&self, i: usize) -> Id<'_> {
        match self {
            Self::Str(texts) => Id::Str(texts.get(i)),
            Self::Int(ints) => Id::Int(ints[i]),
        }
    }
}

/// Per hit, its contributions; a contribution's `item` indexes `ids`, which holds the id each one
/// had in its list, in order (with content keys it may differ from the fused id).
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    pub ids: FusedIds,
    pub hits: Vec<Vec<Contribution>>,
}

/// Fused ids and their scores, aligned, best first; with `explain`, why each hit scored what it did.
#[derive(Clone, Debug)]
pub struct FusedList {
    pub ids: FusedIds,
    pub scores: Vec<f64>,
    pub explain: Option<Explanation>,
}

impl FusedList {
    /// The result of `fusion`, whose entries index the ids of `ids`.
    #[must_use]
    pub fn new(ids: &OwnedIds, fusion: &Fusion) -> Self {
        let explain = fusion.explain.as_ref().map(|hits| {
            // The ids of the contributions that have one, in order; each `item` becomes its position there.
            let items = hits.iter().flatten().filter_map(|c| c.item).collect::<Vec<_>>();
            let mut position = 0..;
            let mut renumber = |c: &Contribution| Contribution { item: c.item.and_then(|_| position.next()), ..*c };
            let hits = hits.iter().map(|parts| parts.iter().map(&mut renumber).collect()).collect();
            Explanation { ids: FusedIds::gather(ids, items.into_iter()), hits }
        });
        Self {
            ids: FusedIds::gather(ids, fusion.hits.iter().map(|e| e.item)),
            scores: fusion.hits.iter().map(|e| e.score).collect(),
            explain,
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The hit at Python index `index` (negative counts from the end), if there is one; `None` for
    /// an index beyond the machine's ints, which is out of range as for a list.
    #[must_use]
    pub fn position(&self, index: Option<isize>) -> Option<usize> {
        let at = match index? {
            i if i < 0 => self.len().checked_sub(i.unsigned_abs())?,
            i => i.unsigned_abs(),
        };
        (at < self.len()).then_some(at)
    }

    /// `Fused([(id, score), ...])` with the first five hits and how many more, each id as `repr_id`
    /// shows it.
    pub fn repr<E>(&self, mut repr_id: impl FnMut(Id<'_>) -> Result<String, E>) -> Result<String, E> {
        let shown = self.len().min(5);
        let mut pairs = Vec::with_capacity(shown);
        for i in 0..shown {
            pairs.push(format!("({}, {:.6})", repr_id(self.ids.get(i))?, self.scores[i]));
        }
        let more = self.len() - shown;
        let tail = if more > 0 { format!(", … {more} more") } else { String::new() };
        Ok(format!("Fused([{}{tail}])", pairs.join(", ")))
    }
}

/// An index of a result that is no int.
#[must_use]
pub fn index_not_an_int(type_name: &str) -> FusionError {
    FusionError::wrong_type(format!("Fused indices must be integers, not {type_name}"))
}

/// The message of Python's `IndexError` for `index`, past the `len` hits of a result.
#[must_use]
pub fn index_out_of_range(index: impl std::fmt::Display, len: usize) -> String {
    format!("Fused index {index} out of range for {len} hits")
}

/// Two results are equal when they hold the same ids with the same scores: the explanation says
/// how a result came about, not what it is (`fuse(lists, explain=True) == rrf(lists)`).
impl PartialEq for FusedList {
    #[allow(clippy::float_cmp)] // equal results have bit-identical scores (the contract sums in one order)
    fn eq(&self, other: &Self) -> bool {
        // An empty result has no id kind: [] == [] whatever the input was.
        self.scores == other.scores && (self.is_empty() || self.ids == other.ids)
    }
}

impl OwnedRuns {
    /// The runs of one query fused; with `keys` (one per id), the ids of equal key fused as one.
    /// The lists are called `noun`s in a refusal of the weights (`fuse`'s are runs).
    pub fn fuse_list(
        &self,
        keys: Option<&OwnedIds>,
        params: &FuseParams,
        noun: &str,
    ) -> Result<FusedList, FusionError> {
        params.validate_weights(self.ids.bounds.len() - 1, noun)?;
        let fusion = match keys {
            Some(keys) => self.fuse_keyed(keys, params)?,
            None => self.ids.fuse(&self.ids.bounds, self.scores(), params)?,
        };
        Ok(FusedList::new(&self.ids, &fusion))
    }
}

impl OwnedBatch {
    /// Fuses every query of the chunk and copies each result out of the chunk's buffers, so that the
    /// chunk can be refilled while its results live on: all of it without Python, on any thread.
    pub fn fuse_lists(&self, params: &FuseParams) -> Result<Vec<FusedList>, FusionError> {
        let fused = self.fuse(params, Some(1))?;
        Ok(fused.iter().map(|fusion| FusedList::new(&self.runs.ids, fusion)).collect())
    }
}

/// The work of a pool on one chunk of a batch.
type ChunkWork = Box<dyn Fn(&OwnedBatch) -> Result<Vec<FusedList>, FusionError> + Send + Sync>;

/// The results of a batch fused a chunk at a time as the caller fills the chunks (copying the ids
/// out of Python, say): serially, each chunk as it is handed over, so that its ids are fused while
/// still in cache; or on a pool, which fuses each chunk while the caller fills the next.
pub struct ChunkFusion {
    params: FuseParams,
    pipeline: Option<Pipeline<OwnedBatch, Result<Vec<FusedList>, FusionError>, ChunkWork>>,
    fused: Vec<FusedList>,
}

impl ChunkFusion {
    /// The fusion of a batch of `n_queries` on `threads` threads (serial unless `pool_for` gives a pool).
    #[must_use]
    pub fn new(params: &FuseParams, threads: Option<usize>, n_queries: usize) -> Self {
        let pipeline = pool_for(threads, n_queries).map(|pool| {
            let chunk_params = params.clone();
            let work: ChunkWork = Box::new(move |chunk: &OwnedBatch| chunk.fuse_lists(&chunk_params));
            Pipeline::new(pool, work)
        });
        Self { params: params.clone(), pipeline, fused: Vec::with_capacity(n_queries) }
    }

    /// Takes the filled `chunk`: fuses it now, or hands it to the pool and leaves in its place an
    /// empty chunk that continues it (the same id kind is required).
    pub fn take(&mut self, chunk: &mut OwnedBatch) -> Result<(), FusionError> {
        match &mut self.pipeline {
            Some(pipeline) => {
                let next = chunk.next_chunk();
                pipeline.spawn(std::mem::replace(chunk, next));
            }
            None => self.fused.extend(chunk.fuse_lists(&self.params)?),
        }
        Ok(())
    }

    /// Every query's result, in order, once the pool (if any) fused every chunk.
    pub fn finish(self) -> Result<Vec<FusedList>, FusionError> {
        let mut fused = self.fused;
        if let Some(pipeline) = self.pipeline {
            for (_, lists) in pipeline.wait()? {
                fused.extend(lists?);
            }
        }
        Ok(fused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::FuseParams;

    fn str_ids(lists: &[&[&str]]) -> OwnedIds {
        let mut ids = OwnedIds::new();
        ids.set_kind(IdKind::Str, || "lists[0][0]".into()).unwrap();
        for list in lists {
            for id in *list {
                ids.push_str(id);
            }
            ids.bounds.push(ids.len());
        }
        ids
    }

    fn fused(ids: &OwnedIds, explain: bool) -> FusedList {
        let params = FuseParams { explain, ..FuseParams::default() };
        FusedList::new(ids, &ids.fuse(&ids.bounds, None, &params).unwrap())
    }

    #[test]
    fn str_ids_are_copied_out_best_first_with_their_scores() {
        let ids = str_ids(&[&["a", "bé"], &["bé", ""]]);
        let result = fused(&ids, false);
        let FusedIds::Str(texts) = &result.ids else { panic!("str ids give str ids") };
        assert_eq!(texts.iter().collect::<Vec<_>>(), ["bé", "a", ""]);
        assert_eq!(result.ids.get(2), Id::Str(""));
        assert_eq!(result.scores, [1.0 / 62.0 + 1.0 / 61.0, 1.0 / 61.0, 1.0 / 62.0]);
        assert!(result.explain.is_none());
    }

    #[test]
    fn int_ids_are_copied_out() {
        let mut ids = OwnedIds::new();
        ids.set_kind(IdKind::Int, || "lists[0][0]".into()).unwrap();
        ids.ints.extend([7, 8, 8]);
        ids.bounds.extend([2, 3]);
        let result = fused(&ids, false);
        assert_eq!(result.ids, FusedIds::Int(vec![8, 7]));
        assert_eq!(result.ids.get(1), Id::Int(7));
    }

    #[test]
    fn each_contribution_resolves_to_the_id_its_list_had() {
        let ids = str_ids(&[&["a", "b"], &["b"]]);
        let result = fused(&ids, true);
        let explain = result.explain.as_ref().unwrap();
        let resolved = |c: &Contribution| (c.list, c.rank, c.item.map(|i| explain.ids.get(i)));
        let per_hit: Vec<Vec<_>> = explain.hits.iter().map(|parts| parts.iter().map(resolved).collect()).collect();
        let b = Some(Id::Str("b"));
        assert_eq!(per_hit, [vec![(0, Some(2), b), (1, Some(1), b)], vec![(0, Some(1), Some(Id::Str("a")))]]);
    }

    #[test]
    fn an_index_counts_from_either_end_within_the_hits() {
        let result = fused(&str_ids(&[&["a", "b", "c"]]), false);
        let at = |i| result.position(i);
        assert_eq!([at(Some(0)), at(Some(2)), at(Some(-1)), at(Some(-3))], [Some(0), Some(2), Some(2), Some(0)]);
        assert_eq!([at(Some(3)), at(Some(-4)), at(Some(isize::MIN)), at(None)], [None; 4]);
    }

    #[test]
    fn the_repr_shows_five_hits_and_counts_the_rest() {
        let many: Vec<String> = (0..7).map(|i| i.to_string()).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let show = |id: Id<'_>| Ok::<_, ()>(format!("{id:?}"));
        let repr = fused(&str_ids(&[&many]), false).repr(show).unwrap();
        assert!(repr.starts_with("Fused([(Str(\"0\"), 0.016393), ") && repr.ends_with(", … 2 more])"), "{repr}");
        assert_eq!(fused(&str_ids(&[&[]]), false).repr(show), Ok("Fused([])".into()));
    }

    #[test]
    fn a_batch_fused_on_a_pool_equals_the_batch_fused_serially() {
        use crate::owned_ids::ListPath;
        let n_queries = crate::batch::MIN_PARALLEL_QUERIES;
        let fuse_on = |threads| {
            let mut fusion = ChunkFusion::new(&FuseParams::default(), Some(threads), n_queries);
            let mut chunk = OwnedBatch::new();
            for q in 0..n_queries {
                if q % crate::batch::CHUNK == 0 {
                    fusion.take(&mut chunk).unwrap();
                    chunk.restart(q);
                }
                let q = i64::try_from(q).unwrap();
                for list in [[q, q + 1], [q + 2, q]] {
                    chunk.runs.ids.push_ints(&list, ListPath::of_query(0, 0)).unwrap();
                    chunk.runs.ids.bounds.push(chunk.runs.ids.len());
                }
                chunk.end_query();
            }
            fusion.take(&mut chunk).unwrap();
            fusion.finish().unwrap()
        };
        let serial = fuse_on(1);
        assert_eq!(serial.len(), n_queries);
        assert_eq!(serial[7].ids, FusedIds::Int(vec![7, 9, 8])); // 9 is first in its list, 8 second
        assert_eq!(fuse_on(2), serial);
    }

    #[test]
    fn equality_is_ids_and_scores() {
        let ids = str_ids(&[&["a", "b"], &["b"]]);
        assert_eq!(fused(&ids, true), fused(&ids, false)); // the explanation is not compared
        assert_ne!(fused(&ids, false), fused(&str_ids(&[&["a", "c"], &["c"]]), false));
        let mut scaled = fused(&ids, false);
        scaled.scores[1] = f64::from_bits(scaled.scores[1].to_bits() + 1);
        assert_ne!(scaled, fused(&ids, false));
        // Empty results are equal whatever their id kind.
        let empty_int = FusedList { ids: FusedIds::Int(Vec::new()), scores: Vec::new(), explain: None };
        assert_eq!(fused(&str_ids(&[&[]]), false), empty_int);
        assert_ne!(fused(&ids, false), empty_int);
    }
}
