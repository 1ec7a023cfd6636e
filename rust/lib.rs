//! fanfuse: the fusion core. Plain Rust; the Python binding lives in `python/` behind the `python` feature.

pub mod args;
pub mod arrow;
pub mod batch;
pub mod error;
pub mod eval;
pub mod fused;
pub mod fusion;
pub mod interrupt;
pub mod keys;
pub mod lists;
pub mod names;
pub mod output;
pub mod owned_ids;
pub mod published;
pub mod rrf;
pub mod runs;
pub mod train;

#[cfg(feature = "python")]
mod python;

/// The extension allocates through mimalloc (see Cargo.toml for why); plain Rust users keep their own.
#[cfg(feature = "python")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use error::FusionError;
pub use fusion::{fuse, Contribution, Duplicates, FuseParams, Fusion, Method, MethodParams, Norm, ScoredLists};
pub use keys::FusionKey;
pub use lists::RankedLists;
pub use rrf::{rrf, FusedEntry, RrfParams, TieBreak, DEFAULT_K};
