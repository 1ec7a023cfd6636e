//! Temporary files and directories beside an output: `.NAME.PID.N.fanfuse-tmp`, locked (`flock`)
//! while in use. Creating one removes the leftovers of the same NAME whose process is gone (killed
//! with SIGKILL) and whose lock nobody holds (a PID reused by another program keeps its file).

use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub const TEMP_SUFFIX: &str = ".fanfuse-tmp";
/// Temporaries created by this process so far: two writers of one output never share a name.
static TEMPS: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary name for `name` in `dir` (unique per process and call).
#[must_use]
pub fn temporary_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}.{}.{}{TEMP_SUFFIX}", std::process::id(), TEMPS.fetch_add(1, Ordering::Relaxed)))
}

/// Marks an open temporary (file or directory) as in use for [`remove_stale`] of other processes;
/// released when the descriptor closes. A failure only means another process could take it for a
/// leftover once this one is gone, which is then true.
pub fn lock(file: &File) {
    // SAFETY: the descriptor is open; flock takes no pointers.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
}

/// Removes the `.NAME.PID.N.fanfuse-tmp` files and directories in `dir` left by processes that are gone.
pub fn remove_stale(dir: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let prefix = format!(".{name}.");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) =
            file_name.to_str().and_then(|n| n.strip_prefix(&prefix)).and_then(|n| n.strip_suffix(TEMP_SUFFIX))
        else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<libc::pid_t>().ok()) else { continue };
        let path = entry.path();
        if is_stale(&path, pid) {
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let _ = if is_dir { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
        }
    }
}

fn is_stale(path: &Path, pid: libc::pid_t) -> bool {
    if pid <= 0 || pid.unsigned_abs() == std::process::id() {
        return false;
    }
    // SAFETY: signal 0 only checks whether the process exists.
    let gone =
        unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    if !gone {
        return false;
    }
    // A directory opens read-only too, and takes a lock like a file.
    let Ok(file) = File::open(path) else { return false };
    // SAFETY: the descriptor is open; flock takes no pointers. The lock is released when `file` closes.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}
