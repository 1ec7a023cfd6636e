//! Output files and directories that never destroy what is already there: the one guard of every
//! file fanfuse writes, the run writers of the core and the Python layer alike (through the binding).
//! What the path names decides how it is written (docs/run-files.md, "Output paths"):
//!
//! - nothing yet, or a regular file: written to a temporary file beside it and renamed over it only
//!   when complete, so a failed or interrupted run leaves the previous file as it was. A replaced
//!   file keeps its permission bits (and, where allowed, its owner); a read-only file is refused,
//!   and so is a file that is also an input (same device and inode, however the path is spelled).
//! - a symbolic link: followed to its final target, which is written as above; the link stays.
//! - `-`, or the file this process's stdout already writes to (`/dev/stdout`): written through stdout.
//! - a FIFO or a character device (`/dev/null`, a terminal): opened and written in place, streamed.
//! - a directory, a block device or a socket: refused.
//!
//! Directories are staged whole ([`directory`]); a command's paths are checked against each other
//! before anything is written ([`separate`]); an output a caller drives call by call is [`held`].
//! Temporaries are described in [`temps`].

pub mod directory;
pub mod held;
pub mod separate;
pub mod temps;

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, ErrorKind};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{io_reason, FusionError};
use crate::interrupt;

/// Symbolic links followed before giving up (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// An output being written; see the module documentation for what each kind of path means.
pub struct OutputFile {
    /// The path as the caller gave it, for messages.
    shown: String,
    writer: Option<BufWriter<File>>,
    replace: Option<Replace>,
    /// Written through this process's stdout.
    stdout: bool,
}

/// Where an atomically written output goes once complete.
struct Replace {
    target: PathBuf,
    temp: PathBuf,
}

impl OutputFile {
    /// Opens `path` for writing; `inputs` are files the caller reads while writing, which the output
    /// must not be.
    pub fn create(path: &str, inputs: &[String]) -> Result<Self, FusionError> {
        let fail = |message: String| FusionError::refused_output(path, message);
        if path == "-" {
            let stdout = std::io::stdout().as_fd_clone().map_err(|e| FusionError::output(path, &e))?;
            refuse_inputs(path, &stdout.metadata().map_err(|e| FusionError::output(path, &e))?, inputs)?;
            return Ok(Self::streaming(path, stdout, true));
        }
        let given = Path::new(path);
        let existing = match fs::metadata(given) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(FusionError::output(path, &e)),
        };
        if let Some(meta) = &existing {
            refuse_inputs(path, meta, inputs)?;
            if is_stdout(meta) {
                let stdout = std::io::stdout().as_fd_clone().map_err(|e| FusionError::output(path, &e))?;
                return Ok(Self::streaming(path, stdout, true));
            }
            let kind = meta.file_type();
            if kind.is_dir() {
                return Err(fail("is a directory; give the path of a file to write".into()));
            }
            if kind.is_fifo() || kind.is_char_device() {
                return Ok(Self::streaming(
                    path,
                    open_in_place(given, kind.is_fifo()).map_err(|e| fail(io_reason(&e)))?,
                    false,
                ));
            }
            if !kind.is_file() {
                let what = if kind.is_block_device() { "a block device" } else { "a socket" };
                return Err(fail(format!(
                    "is {what}; refusing to write a run into it (give a file, a FIFO or a character device)"
                )));
            }
        }
        let target =
            final_target(given).map_err(|e| fail(format!("cannot follow its symbolic links ({})", io_reason(&e))))?;
        if let Some(meta) = &existing {
            let resolved = fs::metadata(&target)
                .map_err(|e| fail(format!("cannot follow its symbolic links ({})", io_reason(&e))))?;
            if (resolved.dev(), resolved.ino()) != (meta.dev(), meta.ino()) {
                return Err(fail(format!("resolves to '{}', which is another file", target.display())));
            }
            if meta.permissions().readonly() || !writable(&target) {
                return Err(fail(
                    "is read-only; refusing to replace it (make it writable or choose another path)".into(),
                ));
            }
        }
        let (dir, name) = split(&target).map_err(fail)?;
        temps::remove_stale(&dir, &name);
        let temp = temps::temporary_path(&dir, &name);
        let file = OpenOptions::new().write(true).create_new(true).mode(0o666).open(&temp).map_err(|e| {
            fail(format!("cannot write in '{}' ({}); choose a writable place", dir.display(), io_reason(&e)))
        })?;
        let mut output =
            Self { shown: path.to_owned(), writer: None, replace: Some(Replace { target, temp }), stdout: false };
        temps::lock(&file);
        if let Some(meta) = &existing {
            keep_mode_and_owner(&file, meta).map_err(|e| output.io_error(&e))?;
        }
        output.writer = Some(BufWriter::with_capacity(1 << 20, file));
        Ok(output)
    }

    fn streaming(path: &str, file: File, stdout: bool) -> Self {
        Self { shown: path.to_owned(), writer: Some(BufWriter::with_capacity(1 << 20, file)), replace: None, stdout }
    }

    /// Whether the output goes through this process's stdout (a caller with its own buffer of
    /// stdout flushes it first).
    #[must_use]
    pub fn is_stdout(&self) -> bool {
        self.stdout
    }

    /// The open file (the temporary, the FIFO or device, or stdout), for a caller that writes it
    /// through a descriptor of its own instead of [`OutputFile::writer`]; the two must not be mixed.
    ///
    /// # Panics
    /// Never: the writer is only taken by `commit`, which consumes `self`.
    #[must_use]
    pub fn file(&self) -> &File {
        self.writer.as_ref().expect("writer is present until commit").get_ref()
    }

    /// # Panics
    /// Never: the writer is only taken by `commit`, which consumes `self`.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("writer is present until commit")
    }

    /// Asks the kernel to start writing out what has reached the file so far, without waiting, so
    /// that the `fsync` of [`OutputFile::commit`] finds little left to do: it was ~70 ms of wall time
    /// (no CPU) at the end of a 0.43 s `fanfuse fuse` of 10k queries. Durability is unchanged.
    pub fn start_writeback(&mut self) {
        #[cfg(target_os = "linux")]
        if let (Some(writer), Some(_)) = (&self.writer, &self.replace) {
            // SAFETY: the descriptor stays open while `writer` lives; the call takes no pointers.
            // A failure only means no early writeback: `commit` still syncs and reports errors.
            unsafe {
                libc::sync_file_range(writer.get_ref().as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
            }
        }
    }

    #[must_use]
    pub fn io_error(&self, error: &std::io::Error) -> FusionError {
        FusionError::output(&self.shown, error)
    }

    /// Flushes, and for a replaced file syncs it and renames it over the target.
    ///
    /// # Panics
    /// Never: `commit` consumes `self`, so it runs once.
    pub fn commit(mut self) -> Result<(), FusionError> {
        let writer = self.writer.take().expect("commit once");
        let file = writer.into_inner().map_err(|e| self.io_error(e.error()))?;
        let Some(replace) = &self.replace else { return Ok(()) };
        interrupt::checkpoint()?;
        file.sync_all().map_err(|e| self.io_error(&e))?;
        fs::rename(&replace.temp, &replace.target).map_err(|e| self.io_error(&e))?;
        self.replace = None;
        Ok(())
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        self.writer = None;
        if let Some(replace) = &self.replace {
            // Not committed: an error or an interrupt happened, so the partial output goes away.
            let _ = fs::remove_file(&replace.temp);
        }
    }
}

trait CloneFd {
    fn as_fd_clone(&self) -> std::io::Result<File>;
}

impl CloneFd for std::io::Stdout {
    /// A new descriptor of stdout, so that the output's offset and append mode are the shell's.
    fn as_fd_clone(&self) -> std::io::Result<File> {
        use std::os::fd::AsFd;
        Ok(File::from(self.as_fd().try_clone_to_owned()?))
    }
}

fn is_stdout(meta: &fs::Metadata) -> bool {
    std::io::stdout()
        .as_fd_clone()
        .and_then(|f| f.metadata())
        .is_ok_and(|out| (out.dev(), out.ino()) == (meta.dev(), meta.ino()))
}

/// Refuses a regular file that is one of `inputs` (writing it would replace what is being read).
fn refuse_inputs(path: &str, meta: &fs::Metadata, inputs: &[String]) -> Result<(), FusionError> {
    if !meta.file_type().is_file() {
        return Ok(());
    }
    match separate::is_one_of(meta, inputs) {
        Some(i) => Err(FusionError::colliding_outputs(format!(
            "the output '{path}' is the input '{}' (the same file); write the output to another path",
            inputs[i]
        ))),
        None => Ok(()),
    }
}

/// Opens a FIFO or a device without creating or truncating anything. A FIFO without a reader is
/// waited for in steps, so that an interrupt still stops the wait.
fn open_in_place(path: &Path, fifo: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true);
    if !fifo {
        return options.open(path);
    }
    options.custom_flags(libc::O_NONBLOCK);
    loop {
        match options.open(path) {
            Ok(file) => {
                // SAFETY: plain fcntl calls on a descriptor we own.
                unsafe {
                    let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
                    libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
                }
                return Ok(file);
            }
            // ENXIO: no reader has opened the FIFO yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if interrupt::checkpoint().is_err() {
                    return Err(ErrorKind::Interrupted.into());
                }
                std::thread::sleep(interrupt::POLL_INTERVAL / 5);
            }
            Err(e) => return Err(e),
        }
    }
}

/// The path `path` finally names after following symbolic links (itself when it is none); the
/// target of a dangling link is where a new file is created.
fn final_target(path: &Path) -> std::io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::from_raw_os_error(libc::ELOOP))
}

/// The existing directory and the file name of a file to create.
fn split(target: &Path) -> Result<(PathBuf, String), String> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| "the output path names a directory, not a file".to_owned())?;
    if !dir.is_dir() {
        return Err(format!("the output directory '{}' does not exist; create it first", dir.display()));
    }
    Ok((dir, name))
}

fn writable(path: &Path) -> bool {
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else { return false };
    // SAFETY: a valid NUL-terminated path.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
}

/// Gives the new file the permission bits (not set-id bits) and, where allowed, the owner of the
/// file it replaces.
fn keep_mode_and_owner(file: &File, previous: &fs::Metadata) -> std::io::Result<()> {
    file.set_permissions(fs::Permissions::from_mode(previous.mode() & 0o777))?;
    let own = file.metadata()?;
    if (own.uid(), own.gid()) != (previous.uid(), previous.gid()) {
        // SAFETY: plain fchown on a descriptor we own. Only root may give a file away: elsewhere the
        // call fails and the file keeps the writer's owner, as any rewritten file would.
        unsafe { libc::fchown(file.as_raw_fd(), previous.uid(), previous.gid()) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fanfuse-output-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn links_are_followed_to_the_final_target_even_when_it_is_missing() {
        let dir = scratch("links");
        fs::create_dir(dir.join("sub")).unwrap();
        symlink("sub/second", dir.join("first")).unwrap();
        symlink("../target", dir.join("sub/second")).unwrap();
        let target = final_target(&dir.join("first")).unwrap();
        assert_eq!(fs::canonicalize(target.parent().unwrap()).unwrap(), fs::canonicalize(&dir).unwrap());
        assert_eq!(target.file_name().unwrap(), "target");
        symlink("loop", dir.join("loop")).unwrap();
        assert_eq!(final_target(&dir.join("loop")).unwrap_err().raw_os_error(), Some(libc::ELOOP));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_uncommitted_output_leaves_the_previous_file_and_no_temporary() {
        let dir = scratch("uncommitted");
        let path = dir.join("out.txt");
        fs::write(&path, "previous").unwrap();
        let mut out = OutputFile::create(path.to_str().unwrap(), &[]).unwrap();
        out.writer().write_all(b"partial").unwrap();
        drop(out);
        assert_eq!(fs::read_to_string(&path).unwrap(), "previous");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        let mut out = OutputFile::create(path.to_str().unwrap(), &[]).unwrap();
        out.writer().write_all(b"complete").unwrap();
        out.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "complete");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_input_is_never_an_output() {
        let dir = scratch("input");
        let input = dir.join("in.trec");
        fs::write(&input, "q Q0 d 1 1 t\n").unwrap();
        fs::hard_link(&input, dir.join("alias")).unwrap();
        let inputs = [input.to_string_lossy().into_owned()];
        let Err(error) = OutputFile::create(dir.join("alias").to_str().unwrap(), &inputs) else {
            panic!("a hard link of the input was accepted as the output")
        };
        assert!(error.to_string().contains("is the input"), "{error}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_refusal_of_an_output_is_an_output_error_naming_it() {
        let dir = scratch("refused");
        fs::write(dir.join("regular"), "").unwrap();
        let input = dir.join("in.trec");
        fs::write(&input, "q Q0 d 1 1 t\n").unwrap();
        let inputs = [input.to_string_lossy().into_owned()];
        let refused = ["missing/out", "regular/out", ".", "in.trec"];
        for name in refused {
            let path = dir.join(name).to_string_lossy().into_owned();
            let Err(error) = OutputFile::create(&path, &inputs) else { panic!("{path} was accepted") };
            assert!(matches!(error, FusionError::Output { .. }), "{path}: {error:?}");
            assert!(error.to_string().contains(&path), "{error}");
        }
        let target = dir.join("regular").join("staged");
        for error in [
            directory::StagedDir::beside(&target).err().expect("staged under a regular file"),
            directory::sync_directory(&target).unwrap_err(),
            directory::retire_directory(&target).unwrap_err(),
        ] {
            assert!(matches!(error, FusionError::Output { path: Some(_), .. }), "{error:?}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
