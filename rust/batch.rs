//! Many queries in one call: serially, or on a rayon pool when asked for and there is enough work.
//!
//! Switchable: serial unless `threads` > 1 or `FANFUSE_NUM_THREADS` > 1 (see [`default_threads`]
//! for why serial is the default). Fork-safe: a forked child
//! has none of the parent's pool threads, so after `fork()` every batch runs serially in the child
//! (the same rule tokenizers follows) instead of deadlocking on a pool that no longer exists.
//!
//! Two ways onto the pool: [`map_queries`] over queries already in memory, and a [`Pipeline`] that
//! takes chunks one at a time while the caller fills the next.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
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

/// The threads a batch started now without `threads` runs on: [`default_threads`], but 1 in a
/// forked child (see [`pool_for`]).
#[must_use]
pub fn threads_in_effect() -> usize {
    if in_forked_child() {
        1
    } else {
        default_threads()
    }
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

/// A chunk handed back by a worker: its index, the chunk, and what the work returned (or its panic).
type Done<C, R> = (usize, C, std::thread::Result<R>);

/// The chunks of one batch, handed over one at a time and each worked on by the pool as soon as it
/// arrives, while the caller fills the next (the binding copies it out of Python, which needs the
/// GIL); [`Pipeline::wait`] gives them back in the order they were handed over.
pub struct Pipeline<C, R, F> {
    pool: Arc<rayon::ThreadPool>,
    work: Arc<F>,
    /// Kept while waiting, so that the channel never disconnects: every worker sends its chunk back.
    sender: Sender<Done<C, R>>,
    receiver: Receiver<Done<C, R>>,
    spawned: usize,
    abandoned: Abandon,
}

/// Set once the caller stops waiting (an interrupt, or an error filling a later chunk drops the
/// pipeline): chunks no worker has started yet are skipped instead of worked on for nobody.
struct Abandon(Arc<AtomicBool>);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl<C, R, F> Pipeline<C, R, F>
where
    C: Send + 'static,
    R: Send + 'static,
    F: Fn(&C) -> R + Send + Sync + 'static,
{
    /// A pipeline applying `work` to each chunk on `pool` (see [`pool_for`]).
    pub fn new(pool: Arc<rayon::ThreadPool>, work: F) -> Self {
        let (sender, receiver) = mpsc::channel();
        let abandoned = Abandon(Arc::new(AtomicBool::new(false)));
        Self { pool, work: Arc::new(work), sender, receiver, spawned: 0, abandoned }
    }

    /// Hands `chunk` over: a worker of the pool applies the work to it.
    pub fn spawn(&mut self, chunk: C) {
        let (index, sender, work) = (self.spawned, self.sender.clone(), Arc::clone(&self.work));
        let abandoned = Arc::clone(&self.abandoned.0);
        self.pool.spawn(move || {
            if abandoned.load(Ordering::Relaxed) {
                return;
            }
            // Caught here and resumed on the waiting thread, as `map_queries` carries a worker's panic.
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| work(&chunk)));
            drop(sender.send((index, chunk, result))); // fails only once the caller stopped waiting
        });
        self.spawned += 1;
    }

    /// Every chunk handed over with what the work returned for it, in the order handed over.
    /// Waits on the calling thread, calling [`crate::interrupt::checkpoint`] at least every
    /// [`crate::interrupt::POLL_INTERVAL`].
    ///
    /// # Errors
    /// Only [`crate::FusionError::Interrupted`]; the chunks not started by then are skipped.
    ///
    /// # Panics
    /// With the panic of the work on a chunk, resumed here.
    pub fn wait(self) -> Result<Vec<(C, R)>, crate::FusionError> {
        let mut slots: Vec<Option<(C, R)>> = (0..self.spawned).map(|_| None).collect();
        for _ in 0..self.spawned {
            let (index, chunk, result) = loop {
                crate::interrupt::checkpoint()?;
                // A timeout only: `self.sender` is alive, so the channel cannot disconnect.
                if let Ok(done) = self.receiver.recv_timeout(crate::interrupt::POLL_INTERVAL) {
                    break done;
                }
            };
            let result = result.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            slots[index] = Some((chunk, result));
        }
        Ok(slots.into_iter().flatten().collect())
    }
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

    fn pool_of_two() -> Arc<rayon::ThreadPool> {
        pool_for(Some(2), MIN_PARALLEL_QUERIES).expect("a pool of two threads")
    }

    #[test]
    fn a_pipeline_gives_the_chunks_back_in_order_with_an_error_in_its_place() {
        let mut pipeline = Pipeline::new(pool_of_two(), |chunk: &Vec<u64>| {
            if chunk.contains(&13) {
                Err(crate::FusionError::invalid("unlucky"))
            } else {
                Ok(chunk.iter().sum::<u64>())
            }
        });
        for c in 0..50 {
            pipeline.spawn((c * 4..c * 4 + 4).collect::<Vec<u64>>());
        }
        let done = pipeline.wait().unwrap();
        let firsts: Vec<u64> = done.iter().map(|(chunk, _)| chunk[0]).collect();
        assert_eq!(firsts, (0..50).map(|c| c * 4).collect::<Vec<u64>>());
        assert_eq!(done[0].1, Ok(6));
        assert_eq!(done[3].1, Err(crate::FusionError::invalid("unlucky"))); // 12..16 holds 13
        assert_eq!(done[4].1, Ok(16 + 17 + 18 + 19));
    }

    #[test]
    fn a_pipeline_with_no_chunk_gives_none_back() {
        let pipeline = Pipeline::new(pool_of_two(), |chunk: &u64| chunk + 1);
        assert_eq!(pipeline.wait(), Ok(vec![]));
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_waiting_thread() {
        let mut pipeline = Pipeline::new(pool_of_two(), |chunk: &u64| assert!(*chunk != 1, "chunk one"));
        pipeline.spawn(0);
        pipeline.spawn(1);
        let panic = std::panic::catch_unwind(AssertUnwindSafe(|| pipeline.wait())).unwrap_err();
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"chunk one"));
    }

    /// Waiting stops on a signal, and the chunks no worker started are then skipped.
    #[test]
    fn a_pipeline_stops_waiting_on_a_signal() {
        use crate::interrupt::run_polling;
        let (gate, opened) = mpsc::channel::<()>();
        let opened = Mutex::new(opened);
        let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&started);
        let mut pipeline = Pipeline::new(pool_of_two(), move |_: &u64| {
            counted.fetch_add(1, Ordering::SeqCst);
            opened.lock().unwrap().recv().unwrap_err(); // held until the wait gave up (nothing is sent)
        });
        for c in 0..10 {
            pipeline.spawn(c);
        }
        let waited = run_polling(Box::new(|| true), || pipeline.wait());
        assert_eq!(waited.err(), Some(crate::FusionError::Interrupted));
        // Release the workers: the chunks still queued find the pipeline abandoned. Jobs spawned from
        // outside the pool start in order, so once the marker ran every chunk was taken.
        drop(gate);
        let (marker, ran) = mpsc::channel();
        pool_of_two().spawn(move || marker.send(()).unwrap());
        ran.recv().unwrap();
        assert!(started.load(Ordering::SeqCst) <= 2, "only the chunks taken before the signal were worked on");
    }
}
