//! Outputs held for a caller that drives them call by call from elsewhere, from any thread (the
//! Python faces `fanfuse.OutputFile` and `StagedDirectory`): each call finds the output under a
//! lock, one call finishes it (a file committed or discarded, a folder discarded), and a call that
//! needs it after that is refused, naming the path.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::directory::StagedDir;
use super::OutputFile;
use crate::error::FusionError;

/// An output file or a staged folder, held until finished.
pub struct Held<T> {
    /// The path a refusal names: the output as given, or the folder's target.
    path: String,
    slot: Mutex<Option<T>>,
}

/// What became of a finished output, as a refusal says it after the path.
pub trait Finished {
    const GONE: &'static str;
}

impl Finished for OutputFile {
    const GONE: &'static str = "already written";
}

impl Finished for StagedDir {
    const GONE: &'static str = "already published";
}

impl<T: Finished> Held<T> {
    #[must_use]
    pub fn new(path: &str, output: T) -> Self {
        Self { path: path.to_owned(), slot: Mutex::new(Some(output)) }
    }

    /// The output, or None once finished. A call that panicked left it as it was: still usable.
    fn slot(&self) -> MutexGuard<'_, Option<T>> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `f` gives for the output; once it is finished, the refusal naming `path` (a call
    /// that names a path of its own, such as the target of a publication) or the held path.
    pub fn with<R>(
        &self,
        path: Option<&str>,
        f: impl FnOnce(&mut T) -> Result<R, FusionError>,
    ) -> Result<R, FusionError> {
        let gone = || FusionError::refused_output(path.unwrap_or(&self.path), T::GONE);
        self.slot().as_mut().map_or_else(|| Err(gone()), f)
    }

    /// The output, taken out to be finished: later calls are refused.
    pub fn take(&self) -> Result<T, FusionError> {
        self.slot().take().ok_or_else(|| FusionError::refused_output(&self.path, T::GONE))
    }

    /// Whether `test` holds for the output, or true once it is finished.
    pub fn finished_or(&self, test: impl FnOnce(&T) -> bool) -> bool {
        self.slot().as_ref().is_none_or(test)
    }

    /// Drops the output unless finished: a file's temporary goes (the previous file stays), and so
    /// does an unpublished folder.
    pub fn discard(&self) {
        drop(self.slot().take());
    }
}

impl OutputFile {
    /// A descriptor of the output of its own (the writes of `OutputFile` are the caller's, through
    /// it, not buffered here), which the caller closes.
    pub fn descriptor(&self) -> Result<OwnedFd, FusionError> {
        self.file().as_fd().try_clone_to_owned().map_err(|e| self.io_error(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_output_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("fanfuse-held-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.txt").to_string_lossy().into_owned();
        let held = Held::new(&path, OutputFile::create(&path, &[]).unwrap());
        assert!(!held.with(None, |output| Ok(output.is_stdout())).unwrap());
        held.take().unwrap().commit().unwrap();
        let refused = FusionError::refused_output(&path, "already written");
        assert_eq!(held.take().err(), Some(refused.clone()));
        assert_eq!(held.with(None, |_| Ok(())).err(), Some(refused));
        assert!(held.finished_or(|_| false));
        held.discard();
        assert!(std::path::Path::new(&path).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
