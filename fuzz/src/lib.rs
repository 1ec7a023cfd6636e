//! The properties the fuzz targets check, on the public API of the core:
//!
//! - every file is read without a panic, and a file read as a TREC run or qrels is read into the
//!   same fields as trec_eval (C `isspace`, stops at NUL) and Python readers (`str.split()` on lines
//!   cut by universal newlines) would read it;
//! - a run read from any file is written as MT-RAG JSONL and as TREC, and what is written reads back
//!   the same (TREC refuses only values a TREC line cannot hold); `fuse_files` never finishes with
//!   an output the readers reject.

use std::path::PathBuf;

use fanfuse::runs::fuse::stream::{fuse_files, FuseFilesOptions};
use fanfuse::runs::read::qrels::read_qrels;
use fanfuse::runs::write::OutFormat;
use fanfuse::runs::{read_run, RankFrom, Run};
use fanfuse::FuseParams;

/// A scratch directory of this process (in memory where the system has one: every case writes files).
fn scratch() -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let dir = base.join(format!("fanfuse-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// A path in the scratch directory, with no file there yet (an earlier case may have left one).
fn path_in(name: &str) -> String {
    let path = scratch().join(name);
    let _ = std::fs::remove_file(&path);
    path.to_string_lossy().into_owned()
}

/// Writes `data` to a scratch file, gzip-compressed when `packed`, and returns its path.
fn input_file(name: &str, data: &[u8], packed: bool) -> String {
    use std::io::Write;
    let path = path_in(name);
    let bytes = if packed {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).expect("in memory");
        encoder.finish().expect("in memory")
    } else {
        data.to_vec()
    };
    std::fs::write(&path, bytes).expect("scratch file");
    path
}

/// Fields as trec_eval splits a line: at C's `isspace` bytes.
fn trec_eval_fields(line: &str) -> Vec<&str> {
    line.split([' ', '\t', '\n', '\u{b}', '\u{c}', '\r']).filter(|f| !f.is_empty()).collect()
}

/// Fields as Python's `str.split()` splits a line (`str.isspace`: Unicode whitespace and U+001C..U+001F).
fn python_fields(line: &str) -> Vec<&str> {
    line.split(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)).filter(|f| !f.is_empty()).collect()
}

/// The records of an accepted TREC run or qrels file as trec_eval and a Python reader would read
/// them, after asserting that the two agree: the fields of every line that is not blank or a comment.
fn records_both_tools_read(data: &[u8]) -> Vec<Vec<String>> {
    let text = std::str::from_utf8(data).expect("an accepted file is UTF-8");
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    assert!(!text.contains('\0'), "accepted a NUL, where trec_eval stops reading");
    let trec_eval: Vec<Vec<&str>> = text
        .split('\n')
        .map(trec_eval_fields)
        .filter(|f| f.first().is_some_and(|first| !first.starts_with('#')))
        .collect();
    // Universal newlines: \r\n, \r and \n end a line.
    let python: Vec<Vec<&str>> = text
        .split("\r\n")
        .flat_map(|l| l.split(['\r', '\n']))
        .map(python_fields)
        .filter(|f| f.first().is_some_and(|first| !first.starts_with('#')))
        .collect();
    assert_eq!(trec_eval, python, "trec_eval and Python would read this accepted file differently");
    trec_eval.into_iter().map(|f| f.into_iter().map(str::to_owned).collect()).collect()
}

/// `(qid, docid, score bits)` of every hit, queries in run order, hits in their order.
fn hits(run: &Run) -> Vec<(String, String, u64)> {
    run.queries
        .iter()
        .flat_map(|q| q.hits.iter().map(|h| (q.qid.clone(), h.docid.to_string(), h.score.to_bits())))
        .collect()
}

/// The passthrough fields of every hit, as raw JSON.
fn extras(run: &Run) -> Vec<Vec<(String, String)>> {
    let raw = |h: &fanfuse::runs::Hit| {
        h.extra.iter().flat_map(|e| e.iter()).map(|(k, v)| (k.to_string(), v.get().to_owned())).collect()
    };
    run.queries.iter().flat_map(|q| q.hits.iter().map(raw)).collect()
}

/// Whether a file would be read as MT-RAG JSONL: its first line that is not blank or a comment
/// starts with `{` (the readers' sniffing, written again from its description).
fn is_mtrag(data: &[u8]) -> bool {
    let data = data.strip_prefix("\u{feff}".as_bytes()).unwrap_or(data);
    data.split(|&b| b == b'\n')
        .filter_map(|line| line.iter().copied().find(|b| !b" \t\x0b\x0c\r".contains(b)))
        .find(|&b| b != b'#')
        == Some(b'{')
}

fn read_back(path: &str) -> Run {
    read_run(path, RankFrom::File).unwrap_or_else(|e| panic!("a written run does not read back: {e}"))
}

/// Writes `run` in both formats and reads it back: MT-RAG always (unless the run has no query: an
/// empty file does not read back; or a hit has no score, as an MT-RAG context read in context order
/// may not: a written run holds scores), TREC whenever the writer accepts it (queries without hits
/// have no TREC line). Returns whether TREC accepted it.
fn round_trip(run: &Run, tag: &str) -> bool {
    let out = path_in("written.jsonl");
    if let Err(error) = run.write(&out, OutFormat::Mtrag, tag, None) {
        let unscored = run.queries.iter().any(|q| q.hits.iter().any(|h| h.score.is_nan()));
        assert!(run.queries.is_empty() || unscored, "MT-RAG refused a run: {error}");
        assert!(!std::path::Path::new(&out).exists(), "a refused write left {out}: {error}");
        return false;
    }
    let back = read_back(&out);
    assert_eq!(hits(&back), hits(run), "MT-RAG round trip");
    assert_eq!(extras(&back), extras(run), "MT-RAG round trip of the passthrough fields");
    assert_eq!(back.collection, run.collection, "MT-RAG round trip of the collection");
    let queries: Vec<&str> = run.queries.iter().map(|q| q.qid.as_str()).collect();
    assert_eq!(back.queries.iter().map(|q| q.qid.as_str()).collect::<Vec<_>>(), queries);
    let out = path_in("written.trec");
    match run.write(&out, OutFormat::Trec, tag, None) {
        Ok(()) => {
            assert_eq!(hits(&read_back(&out)), hits(run), "TREC round trip");
            true
        }
        Err(error) => {
            assert!(!std::path::Path::new(&out).exists(), "a refused write left {out}: {error}");
            false
        }
    }
}

/// Whether trec_eval and Python would both read `value` back as one field of a TREC line.
fn one_field_for_both(value: &str) -> bool {
    trec_eval_fields(value) == [value]
        && python_fields(value) == [value]
        && !value.contains(['\0', '\u{feff}'])
        && !value.chars().any(char::is_control)
}

/// A run or qrels file: no panic, and if accepted, read as both tools read it and written back.
pub fn check_run_file(data: &[u8]) {
    let Some((&flags, data)) = data.split_first() else { return };
    let path = input_file("input", data, flags & 1 == 1);
    let Ok(run) = read_run(&path, RankFrom::File) else { return };
    let trec = !is_mtrag(data);
    if trec {
        let records = records_both_tools_read(data);
        assert!(records.iter().all(|r| r.len() == 6), "accepted a line of other than 6 fields");
        let mut expected: Vec<(String, String, u64)> = Vec::new();
        let mut order: Vec<&str> = Vec::new();
        for r in &records {
            if !order.contains(&r[0].as_str()) {
                order.push(&r[0]);
            }
        }
        for qid in order {
            for r in records.iter().filter(|r| r[0] == qid) {
                expected.push((r[0].clone(), r[2].clone(), r[4].parse::<f64>().expect("accepted score").to_bits()));
            }
        }
        assert_eq!(hits(&run), expected, "the run differs from what trec_eval and Python read");
    }
    let written = round_trip(&run, "t");
    assert!(written || !trec, "a run read from TREC could not be written as TREC");
    let out = path_in("fused.trec");
    let options = FuseFilesOptions {
        params: FuseParams::default(),
        rank_from: RankFrom::File,
        format: OutFormat::Trec,
        collection: None,
        tag: "fuzz".into(),
        threads: Some(1),
        progress: None,
    };
    if fuse_files(&[path], &out, &options).is_ok() {
        read_run(&out, RankFrom::Score).unwrap_or_else(|e| panic!("fuse_files wrote a file the readers reject: {e}"));
    }
}

/// A qrels file: no panic, and if accepted, every judgment is one both tools read.
pub fn check_qrels_file(data: &[u8]) {
    let Some((&flags, data)) = data.split_first() else { return };
    let path = input_file("qrels", data, flags & 1 == 1);
    let Ok(qrels) = read_qrels(&path) else { return };
    let records = records_both_tools_read(data);
    assert!(records.iter().all(|r| r.len() == records[0].len()), "accepted a qrels file of two shapes");
    let mut judged = 0;
    for (i, r) in records.iter().enumerate() {
        let (qid, docid, rel) = match &r[..] {
            [qid, _, docid, rel] | [qid, docid, rel] => (qid, docid, rel),
            _ => panic!("accepted a qrels line of {} fields", r.len()),
        };
        match rel.parse::<i64>() {
            Ok(rel) => {
                assert_eq!(qrels.judged[qid][docid], rel);
                judged += 1;
            }
            // A header names its columns: a number there is a judgment, never a header.
            Err(_) => assert!(
                i == 0 && r.len() == 3 && rel.parse::<f64>().is_err(),
                "accepted a non-integer relevance past the header, or a number as the header"
            ),
        }
    }
    assert_eq!(qrels.judged.values().map(std::collections::HashMap::len).sum::<usize>(), judged);
}

/// A run built from columns: both formats hold it or TREC refuses it, and TREC refuses exactly the
/// runs with a value that trec_eval or Python would not read back as one field.
pub fn check_columns(rows: &[(String, String, f64)], tag: &str) {
    let qids: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    let docids: Vec<String> = rows.iter().map(|r| r.1.clone()).collect();
    let scores: Vec<f64> = rows.iter().map(|r| r.2).collect();
    let Ok(run) = Run::from_columns("fuzz", &qids, &docids, &scores, RankFrom::File) else { return };
    // A first line starting with `{` would be read as MT-RAG JSONL.
    let holdable = one_field_for_both(tag)
        && run.queries.first().is_some_and(|q| !q.qid.starts_with('{'))
        && run.queries.iter().all(|q| {
            one_field_for_both(&q.qid) && !q.qid.starts_with('#') && q.hits.iter().all(|h| one_field_for_both(&h.docid))
        });
    assert_eq!(
        round_trip(&run, tag),
        holdable,
        "TREC output refused a run both tools read back, or wrote one they do not"
    );
}
