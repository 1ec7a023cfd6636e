//! How far a streaming fusion ([`super::stream`]) has got, for a progress display: the core only
//! counts; the caller draws.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::runs::read::input::{GroupReader, RunInput};

/// How far a run of [`super::stream::fuse_files`] has got, readable from any thread while it runs:
/// bytes of the inputs read (compressed bytes for gzip) out of their total size, and queries fused.
/// The caller draws it (the Python CLI's one progress bar).
#[derive(Debug, Default)]
pub struct FuseProgress {
    pub bytes_read: AtomicU64,
    pub bytes_total: AtomicU64,
    pub queries: AtomicU64,
}

impl FuseProgress {
    /// `(bytes_read, bytes_total, queries)` as they stand.
    #[must_use]
    pub fn snapshot(&self) -> (u64, u64, u64) {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        (load(&self.bytes_read), load(&self.bytes_total), load(&self.queries))
    }
}

/// A progress callback that cannot be called (`got`: its type), refused before any work.
#[must_use]
pub fn not_a_callback(got: &str) -> crate::FusionError {
    crate::FusionError::wrong_type(format!(
        "progress must be None or a callable progress(bytes_read, bytes_total, queries) (got {got})"
    ))
}

/// Keeps a [`FuseProgress`] (if the caller asked for one) up to date from the readers' byte counters.
pub(super) struct ProgressCounters {
    shared: Option<Arc<FuseProgress>>,
    readers: Vec<Arc<AtomicU64>>,
}

impl ProgressCounters {
    pub(super) fn new(inputs: &[RunInput], readers: &[GroupReader], shared: Option<Arc<FuseProgress>>) -> Self {
        if let Some(progress) = &shared {
            let files = inputs.iter().filter_map(|input| match input {
                RunInput::File(path) => std::fs::metadata(path).ok(),
                RunInput::Table(_) => None,
            });
            let total = files.map(|m| m.len()).sum();
            progress.bytes_total.store(total, Ordering::Relaxed);
        }
        Self { shared, readers: readers.iter().map(GroupReader::consumed).collect() }
    }

    pub(super) fn update(&self, queries: u64) {
        if let Some(progress) = &self.shared {
            let read = self.readers.iter().map(|c| c.load(Ordering::Relaxed)).sum();
            progress.bytes_read.store(read, Ordering::Relaxed);
            progress.queries.store(queries, Ordering::Relaxed);
        }
    }
}
