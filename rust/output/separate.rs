//! Which paths of one command name the same file, however they are spelled (`./a`, `../dir/a`, a
//! symbolic or hard link, `-` for stdout): an output may be neither an input nor another output of
//! the same command, and an output directory (replaced as a whole) may not hold an input. Checked
//! for all of a command's paths before anything is read or written, so that no order of writes can
//! lose a file.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::final_target;
use crate::error::FusionError;

/// One path of a command and the option (or argument) that gave it, for messages: `("-o", "out")`.
#[derive(Debug, Clone, Copy)]
pub struct Named<'a> {
    pub option: &'a str,
    pub path: &'a str,
}

impl Named<'_> {
    fn shown(&self) -> String {
        if self.option.is_empty() {
            format!("'{}'", self.path)
        } else {
            format!("{} '{}'", self.option, self.path)
        }
    }
}

/// What a path names: an existing file (after symbolic links), or the place a new one will take.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Existing {
        dev: u64,
        ino: u64,
    },
    /// Character devices (`/dev/null`, a terminal): writing or reading one loses no file, so any
    /// number of a command's paths may name one.
    Device,
    Planned(PathBuf),
}

fn identity(path: &str) -> Identity {
    let meta = if path == "-" { stdout_metadata() } else { fs::metadata(path).ok() };
    match meta {
        Some(meta) if meta.file_type().is_char_device() => Identity::Device,
        Some(meta) => Identity::Existing { dev: meta.dev(), ino: meta.ino() },
        None => Identity::Planned(location(path)),
    }
}

fn stdout_metadata() -> Option<fs::Metadata> {
    use std::os::fd::AsFd;
    let stdout = std::io::stdout();
    let fd = stdout.as_fd().try_clone_to_owned().ok()?;
    fs::File::from(fd).metadata().ok()
}

/// The absolute place `path` names once its symbolic links are followed: the canonical path of an
/// existing file, else the canonical directory of the final target joined with its name.
fn location(path: &str) -> PathBuf {
    if let Ok(canonical) = fs::canonicalize(path) {
        return canonical;
    }
    let target = final_target(Path::new(path)).unwrap_or_else(|_| PathBuf::from(path));
    let parent = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = fs::canonicalize(&parent).unwrap_or_else(|_| std::path::absolute(&parent).unwrap_or(parent));
    target.file_name().map_or(dir.clone(), |name| dir.join(name))
}

fn same(a: &Identity, b: &Identity) -> bool {
    *a != Identity::Device && a == b
}

/// Refuses a command's paths when an output (file or directory) is one of its inputs, two outputs
/// are one file, or an input or another output lies inside an output directory. Inputs may repeat.
///
/// # Errors
/// `Output` naming both paths and their options, and what to do instead.
pub fn check_separate(
    outputs: &[Named<'_>],
    directories: &[Named<'_>],
    inputs: &[Named<'_>],
) -> Result<(), FusionError> {
    let all_outputs: Vec<(&Named<'_>, Identity)> =
        outputs.iter().chain(directories).map(|named| (named, identity(named.path))).collect();
    let inputs: Vec<(&Named<'_>, Identity)> = inputs.iter().map(|named| (named, identity(named.path))).collect();
    for (i, (output, id)) in all_outputs.iter().enumerate() {
        if let Some((input, _)) = inputs.iter().find(|(_, other)| same(id, other)) {
            return Err(FusionError::colliding_outputs(format!(
                "the output {} is the input {} (the same file); write the output to another path",
                output.shown(),
                input.shown()
            )));
        }
        if let Some((other, _)) = all_outputs[i + 1..].iter().find(|(_, other)| same(id, other)) {
            return Err(FusionError::colliding_outputs(format!(
                "the outputs {} and {} are the same file; give each output its own path",
                output.shown(),
                other.shown()
            )));
        }
    }
    for directory in directories {
        let replaced = location(directory.path);
        let inside = |named: &Named<'_>| named.path != "-" && location(named.path).starts_with(&replaced);
        if let Some((input, _)) = inputs.iter().find(|(named, _)| inside(named)) {
            return Err(FusionError::colliding_outputs(format!(
                "the input {} is inside the output directory {}, which the command replaces; move the \
                 input out of it or write the output elsewhere",
                input.shown(),
                directory.shown()
            )));
        }
        if let Some(other) = outputs.iter().find(|named| inside(named)) {
            return Err(FusionError::colliding_outputs(format!(
                "the output {} is inside the output directory {}, which the command replaces; write it elsewhere",
                other.shown(),
                directory.shown()
            )));
        }
    }
    Ok(())
}

/// Whether the file `meta` describes is one of `inputs` (same device and inode).
pub(super) fn is_one_of(meta: &fs::Metadata, inputs: &[String]) -> Option<usize> {
    inputs.iter().position(|input| fs::metadata(input).is_ok_and(|m| (m.dev(), m.ino()) == (meta.dev(), meta.ino())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn named<'a>(option: &'a str, path: &'a str) -> Named<'a> {
        Named { option, path }
    }

    #[test]
    fn every_spelling_of_a_file_is_the_same_and_devices_are_free() {
        let dir = std::env::temp_dir().join(format!("fanfuse-separate-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub")).unwrap();
        let run = dir.join("a.trec");
        fs::write(&run, "q Q0 d 1 1 t\n").unwrap();
        symlink(&run, dir.join("link")).unwrap();
        fs::hard_link(&run, dir.join("hard")).unwrap();
        symlink("sub/new", dir.join("dangling")).unwrap();
        let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
        let run_path = p("a.trec");
        let inputs = [named("RUN", &run_path)];
        for alias in [p("link"), p("hard"), format!("{}/sub/../a.trec", dir.display())] {
            let error = check_separate(&[named("-o", &alias)], &[], &inputs).unwrap_err().to_string();
            assert!(error.starts_with(&format!("the output -o '{alias}' is the input RUN")), "{error}");
        }
        let (new, through_link) = (p("sub/new"), p("dangling"));
        let error =
            check_separate(&[named("-o", &new), named("--save-model", &through_link)], &[], &inputs).unwrap_err();
        assert!(error.to_string().starts_with("the outputs -o"), "{error}");
        assert!(matches!(error, FusionError::Output { path: None, .. }), "{error:?}");
        let null = [named("-o", "/dev/null"), named("--plot", "/dev/null")];
        assert_eq!(check_separate(&null, &[], &[named("RUN", "/dev/null")]), Ok(()));
        let (sub, inside, other) = (p("sub"), p("sub/../sub/x"), p("other"));
        let error = check_separate(&[], &[named("--index", &sub)], &[named("CORPUS", &inside)]);
        assert!(error.unwrap_err().to_string().contains("is inside the output directory --index"));
        assert_eq!(check_separate(&[named("-o", &other)], &[], &[named("RUN", &run_path); 2]), Ok(()));
        fs::remove_dir_all(&dir).unwrap();
    }
}
