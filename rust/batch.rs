//! Many queries in one call: serially, or on a rayon pool when asked for and there is enough work.
//!
//! Switchable: serial unless `threads` > 1 or `FANFUSE_NUM_THREADS` > 1 (see [`default_threads`]
//! for why serial is the default). Fork-safe: a forked child
//! has none of the parent's pool threads, so after `fork()` every batch runs serially in the child
//! (the same rule tokenizers follows) instead of deadlocking on a pool that no longer exists.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock};

use rayon::prelude::*;

/// Below this many queries, dispatching to the pool costs more than it saves (measured: a pool
/// round trip is ~10–20 µs; one 4 × 100 RRF query is ~5 µs).
pub const MIN_PARALLEL_QUERIES: usize = 256;
/// Queries per chunk: one pool task, and in `rrf_batch` the unit copied out of Python at a time
/// (small enough that its ids are still in cache when fused: 64 x 400 ids is ~0.5 MB).
pub const CHUNK: usize = 64;

static FORKED: AtomicBool = AtomicBool::new(false);
static AT_FORK: Once = Once::new();
static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();

extern "C" fn mark_forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// The environment variable that sets the default number of threads.
pub const THREADS_VARIABLE: &str = "FANFUSE_NUM_THREADS";

/// More threads than any machine this runs on has cores; a pool asked for millions would try to
/// start them all. The bound of `threads=` and of `FANFUSE_NUM_THREADS`.
pub const MAX_THREADS: usize = 1024;

/// Threads a batch uses when the caller does not say: `FANFUSE_NUM_THREADS`, else 1. A value that
/// is not an int from 1 to [`MAX_THREADS`] counts as unset (see [`threads_from_env`]).
///
/// Serial by default because the pool did not win where we measured (2 shared cores): a batch copies
/// every id out of Python under the GIL, and on a busy machine the pipeline ran no faster than the
/// serial loop (3000 queries: 20.2 vs 20.4 µs per query, 2 threads faster in 6 of 12 rounds). A
/// service calling `rrf_batch` from many threads is parallel already. Opt in with `threads=` or
/// `FANFUSE_NUM_THREADS` where a benchmark on your machine shows a gain (`make compare`).
#[must_use]
pub fn default_threads() -> usize {
    threads_from_env().ok().flatten().unwrap_or(1)
}

/// What `threads` accepts, for the message refusing another value.
#[must_use]
pub fn threads_accepted() -> String {
    format!("None ({THREADS_VARIABLE}, else 1) or an int from 1 to {MAX_THREADS}")
}

/// What `FANFUSE_NUM_THREADS` asks for: `None` when it is unset or blank, else an int from 1 to
/// [`MAX_THREADS`] (surrounding spaces allowed). Anything else is an error naming the variable,
/// which the binding reports as a warning before falling back to 1.
pub fn threads_from_env() -> Result<Option<usize>, String> {
    let Some(value) = std::env::var_os(THREADS_VARIABLE) else { return Ok(None) };
    let text = value.to_string_lossy();
    if text.trim().is_empty() {
        return Ok(None);
    }
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(Some(n)),
        _ => Err(format!(
            "{THREADS_VARIABLE} must be an int from 1 to {MAX_THREADS} (got '{}'); using 1 thread",
            text.escape_debug()
        )),
    }
}

/// True in a child process forked after this library was loaded.
#[must_use]
pub fn in_forked_child() -> bool {
    FORKED.load(Ordering::Relaxed)
}

fn pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    AT_FORK.call_once(|| {
        // SAFETY: registers a handler that only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::pthread_atfork(None, None, Some(mark_forked_child));
        }
    });
    let pools = POOLS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut pools = pools.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(pool) = pools.get(&threads) {
        return Some(Arc::clone(pool));
    }
    let pool =
        rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("fanfuse-{i}")).build().ok()?;
    let pool = Arc::new(pool);
    pools.insert(threads, Arc::clone(&pool));
    Some(pool)
}

/// The pool a batch of `n_queries` should run on, or `None` to run serially: one thread asked for,
/// too small a batch, or a forked child.
#[must_use]
pub fn pool_for(threads: Option<usize>, n_queries: usize) -> Option<Arc<rayon::ThreadPool>> {
    let threads = threads.unwrap_or_else(default_threads);
    if threads > 1 && n_queries >= MIN_PARALLEL_QUERIES && !in_forked_child() {
        pool(threads)
    } else {
        None
    }
}

/// Queries between two interrupt checks of [`map_queries`] (on the calling thread; see
/// `crate::interrupt`): a few milliseconds of fusion, and enough to keep every thread of a pool busy.
const QUERIES_PER_CHECK: usize = 1 << 14;

/// Applies `work` to every query, in order, on `threads` threads (`None`: [`default_threads`]).
///
/// # Errors
/// Only [`FusionError::Interrupted`], checked between slices of [`QUERIES_PER_CHECK`] queries.
pub fn map_queries<Q, R, F>(queries: &[Q], threads: Option<usize>, work: F) -> Result<Vec<R>, crate::FusionError>
where
    Q: Sync,
    R: Send,
    F: Fn(&Q) -> R + Sync + Send,
{
    let pool = pool_for(threads, queries.len());
    let mut results = Vec::with_capacity(queries.len());
    for slice in queries.chunks(QUERIES_PER_CHECK) {
        crate::interrupt::checkpoint()?;
        match &pool {
            Some(pool) => pool.install(|| results.par_extend(slice.par_iter().with_min_len(CHUNK).map(&work))),
            None => results.extend(slice.iter().map(&work)),
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of many queries stops on the first poll.
    #[test]
    fn a_batch_stops_on_a_signal() {
        use crate::error::FusionError;
        use crate::interrupt::{run_polling, POLL_INTERVAL};
        let queries: Vec<u64> = (0..1 << 20).collect();
        let batch = run_polling(Box::new(|| true), || {
            std::thread::sleep(POLL_INTERVAL);
            map_queries(&queries, Some(1), |q| q + 1)
        });
        assert_eq!(batch, Err(FusionError::Interrupted));
    }

    #[test]
    fn parallel_equals_serial_in_order() {
        let queries: Vec<u64> = (0..5_000).collect();
        let serial = map_queries(&queries, Some(1), |q| q * q).unwrap();
        let parallel = map_queries(&queries, Some(2), |q| q * q).unwrap();
        assert_eq!(serial, parallel);
        assert_eq!(serial[4_999], 4_999 * 4_999);
    }
}
