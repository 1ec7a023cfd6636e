//! Directories that appear complete or not at all (an index, its versions, its stored vectors): the
//! content is written into a locked temporary directory beside the target, which then takes the
//! target's place by rename. A directory already there is retired (renamed away, then deleted), and
//! put back if the second rename fails, so the target is never missing a complete version.

use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::temps::{lock, remove_stale, temporary_path};
use crate::error::{io_reason, FusionError};

/// A temporary directory being filled; removed on drop unless published.
pub struct StagedDir {
    path: PathBuf,
    /// Holds the lock that tells other processes it is in use.
    _lock: File,
    published: bool,
}

impl StagedDir {
    /// A new empty directory `.NAME.PID.N.fanfuse-tmp` beside `target` (its parents are created),
    /// where NAME is `target`'s name. Leftovers of NAME from killed processes are removed first.
    ///
    /// # Errors
    /// `Output` naming `target` when its directory cannot be created or written (read-only, no permission).
    pub fn beside(target: &Path) -> Result<Self, FusionError> {
        let shown = target.to_string_lossy();
        let (parent, name) = parent_and_name(target)
            .ok_or_else(|| FusionError::refused_output(&shown, "names no directory to write"))?;
        fs::create_dir_all(&parent).map_err(|e| cannot_write(&shown, &parent, &e))?;
        remove_stale(&parent, &name);
        let path = temporary_path(&parent, &name);
        fs::create_dir(&path).map_err(|e| cannot_write(&shown, &parent, &e))?;
        let opened = File::open(&path).map_err(|e| cannot_write(&shown, &parent, &e))?;
        lock(&opened);
        Ok(Self { path, _lock: opened, published: false })
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    #[must_use]
    pub fn is_published(&self) -> bool {
        self.published
    }

    /// Puts the finished directory at `target` (in the same parent directory as the staging):
    /// renamed over a missing or empty directory; a full one is retired first and removed after.
    ///
    /// # Errors
    /// `Output` when a rename fails; the previous `target` is then where it was.
    pub fn publish(&mut self, target: &Path) -> Result<(), FusionError> {
        let shown = target.to_string_lossy();
        let failed = |e: &std::io::Error| FusionError::output(&shown, e);
        match fs::rename(&self.path, target) {
            Ok(()) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTEMPTY | libc::EEXIST)) => {
                let (parent, name) = parent_and_name(target).ok_or_else(|| failed(&e))?;
                let retired = temporary_path(&parent, &name);
                fs::rename(target, &retired).map_err(|e| failed(&e))?;
                if let Err(e) = fs::rename(&self.path, target) {
                    let _ = fs::rename(&retired, target);
                    return Err(failed(&e));
                }
                let _ = fs::remove_dir_all(&retired);
            }
            Err(e) => return Err(failed(&e)),
        }
        self.published = true;
        sync_directory(target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Removes a directory so that a reader opening it finds it whole or not at all: it is renamed to
/// a temporary name first, then deleted.
///
/// # Errors
/// `Output` when the rename fails (the directory is then untouched).
pub fn retire_directory(path: &Path) -> Result<(), FusionError> {
    let shown = path.to_string_lossy();
    let (parent, name) =
        parent_and_name(path).ok_or_else(|| FusionError::refused_output(&shown, "names no directory"))?;
    let retired = temporary_path(&parent, &name);
    match fs::rename(path, &retired) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(FusionError::output(&shown, &e)),
    }
    let _ = fs::remove_dir_all(&retired);
    Ok(())
}

/// Makes the renames inside `dir` durable.
///
/// # Errors
/// `Output` when the directory cannot be opened or synced.
pub fn sync_directory(dir: &Path) -> Result<(), FusionError> {
    let shown = dir.to_string_lossy();
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| FusionError::output(&shown, &e))
}

fn parent_and_name(path: &Path) -> Option<(PathBuf, String)> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Some((parent, name))
}

fn cannot_write(shown: &str, dir: &Path, error: &std::io::Error) -> FusionError {
    FusionError::refused_output(
        shown,
        format!("cannot write in '{}' ({}); choose a writable place", dir.display(), io_reason(error)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_appears_complete_or_not_at_all() {
        let root = std::env::temp_dir().join(format!("fanfuse-staged-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let target = root.join("deep").join("store");
        {
            let staged = StagedDir::beside(&target).unwrap();
            fs::write(staged.path().join("half"), "1").unwrap();
        }
        assert_eq!(fs::read_dir(root.join("deep")).unwrap().count(), 0, "a dropped staging is removed");
        for content in ["old", "new"] {
            let mut staged = StagedDir::beside(&target).unwrap();
            fs::write(staged.path().join(content), content).unwrap();
            staged.publish(&target).unwrap();
            let names: Vec<_> = fs::read_dir(&target).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, [content], "the previous content is replaced whole");
        }
        assert_eq!(fs::read_dir(root.join("deep")).unwrap().count(), 1, "no retired copy stays");
        retire_directory(&target).unwrap();
        assert!(!target.exists());
        fs::remove_dir_all(&root).unwrap();
    }
}
