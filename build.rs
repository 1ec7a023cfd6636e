//! Passes PyO3's interpreter cfgs (`Py_GIL_DISABLED` on free-threaded Python) to the crate, so that
//! rust/python/ids.rs compiles its GIL-only fast paths out of free-threaded builds; and writes the
//! docstrings of the core's stubs (`python/fanfuse/_core.pyi`, `_core/_internal.pyi`) one file per
//! documented name into `OUT_DIR/stub_docs/`, where `stub_doc!` (rust/python/mod.rs) includes them:
//! the stub is the one source of what `help()` and an editor show.
fn main() {
    #[cfg(feature = "python")]
    {
        pyo3_build_config::use_pyo3_cfgs();
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("stub_docs");
        std::fs::create_dir_all(&out).expect("OUT_DIR is writable");
        let mut written = std::collections::HashSet::new();
        for stub in ["python/fanfuse/_core.pyi", "python/fanfuse/_core/_internal.pyi"] {
            println!("cargo:rerun-if-changed={stub}");
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(stub);
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{stub}: {e}"));
            for (name, doc) in stub_docs(stub, &text) {
                assert!(written.insert(name.clone()), "{stub}: {name} is documented twice");
                std::fs::write(out.join(format!("{name}.txt")), doc).expect("OUT_DIR is writable");
            }
        }
    }
}

/// The docstring of each function, class and method of a stub, by name (`fuse`, `Run`, `Run.write`),
/// cleaned as `inspect.cleandoc` cleans it: the first line after a header (which may span lines, up to
/// the one ending in `:`) when it opens a docstring. A malformed docstring stops the build naming
/// `stub:line`.
#[cfg(feature = "python")]
fn stub_docs(stub: &str, text: &str) -> Vec<(String, String)> {
    let mut docs = Vec::new();
    // The class whose body the lines are in, and the name of the header being read (or just read).
    let (mut class, mut header): (Option<String>, Option<(String, bool)>) = (None, None);
    let mut lines = text.lines().zip(1..);
    while let Some((line, number)) = lines.next() {
        let body = line.trim_start();
        let indent = line.len() - body.len();
        match header.take() {
            Some((name, true)) if body.starts_with("\"\"\"") => {
                let mut doc = body["\"\"\"".len()..].to_owned();
                while !doc.contains("\"\"\"") {
                    doc.push('\n');
                    let (next, _) =
                        lines.next().unwrap_or_else(|| panic!("{stub}:{number}: {name}'s docstring is not closed"));
                    doc.push_str(next);
                }
                let doc = &doc[..doc.find("\"\"\"").unwrap_or(doc.len())];
                assert!(
                    !doc.replace("\\\\", "").contains('\\'),
                    "{stub}:{number}: {name}'s docstring escapes more than `\\\\`"
                );
                // The one escape the stubs' docstrings use, read as Python reads it.
                let doc = doc.replace("\\\\", "\\");
                docs.push((name, clean(&doc)));
                continue;
            }
            Some((name, false)) => header = opened(body).map(|open| (name, open)),
            _ => {}
        }
        let Some(name) = body.strip_prefix("def ").or_else(|| body.strip_prefix("class ")) else { continue };
        let name = name.split(['(', ':']).next().unwrap_or(name);
        if indent == 0 {
            class = body.starts_with("class ").then(|| name.to_owned());
        }
        let name = match (&class, indent) {
            (Some(class), 4) => format!("{class}.{name}"),
            _ => name.to_owned(),
        };
        header = opened(body).map(|open| (name, open));
    }
    docs
}

/// Whether a line of a header opens its body (it ends in `:`), or, None, ends the header without one
/// (`: ...`, so no docstring); a signature spanning lines goes on until one of the two.
#[cfg(feature = "python")]
fn opened(line: &str) -> Option<bool> {
    let line = line.trim_end();
    (!line.ends_with("...")).then(|| line.ends_with(':'))
}

/// A docstring cleaned as `inspect.cleandoc` does: the first line stripped, the common indentation of
/// the others removed, blank lines at either end dropped.
#[cfg(feature = "python")]
fn clean(doc: &str) -> String {
    let lines: Vec<&str> = doc.lines().collect();
    let margin = lines.iter().skip(1).filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min();
    let mut cleaned: Vec<&str> = lines.iter().take(1).map(|l| l.trim()).collect();
    cleaned.extend(lines.iter().skip(1).map(|l| l.get(margin.unwrap_or(0)..).unwrap_or("")));
    let first = cleaned.iter().position(|l| !l.is_empty()).unwrap_or(cleaned.len());
    let last = cleaned.iter().rposition(|l| !l.is_empty()).map_or(first, |i| i + 1);
    cleaned[first..last].join("\n")
}
