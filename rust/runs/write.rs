//! Writing runs: the TREC and MT-RAG line formats. Where the bytes go (atomically) is `crate::output`.

use std::io::Write;

use serde_json::value::RawValue;

use super::read::fields::{self, shown};
use super::{Extra, Hit};
use crate::error::FusionError;

/// Output formats of a fused run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutFormat {
    Trec,
    Mtrag,
}

impl OutFormat {
    /// The names `format=` accepts.
    pub const BY_NAME: &'static [(&'static str, Self)] = &[("trec", Self::Trec), ("mtrag", Self::Mtrag)];
    pub const NAMES: [&'static str; Self::BY_NAME.len()] = crate::names::names(Self::BY_NAME);
}

impl std::str::FromStr for OutFormat {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::names::parse(Self::BY_NAME, "format", s).map_err(FusionError::of_setting)
    }
}

/// One output hit: the docid, its (fused) score and the passthrough fields of its best occurrence.
pub struct OutHit<'a> {
    pub docid: &'a str,
    pub score: f64,
    pub extra: Option<&'a Extra>,
}

/// A query that could not be written.
#[derive(Debug)]
pub enum WriteError {
    Io(std::io::Error),
    /// A value of the query (`hit: None`: its id) or of `hits[hit]` that the format cannot hold.
    Value {
        hit: Option<usize>,
        message: String,
    },
}

impl From<std::io::Error> for WriteError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

impl From<serde_json::Error> for WriteError {
    fn from(error: serde_json::Error) -> Self {
        Self::Io(error.into())
    }
}

const WRITE_MTRAG: &str = "write MT-RAG JSONL instead (format 'mtrag'), which holds any id";
const TREC_IDS: &str = "TREC ids are one field: non-empty, no whitespace or control characters";

/// Why a TREC line cannot hold `qid` or one of the docids: the first such value, or `Ok`.
fn check_trec_ids(qid: &str, hits: &[OutHit<'_>]) -> Result<(), WriteError> {
    let problem = fields::problem(qid)
        .or_else(|| qid.starts_with('#').then(|| "starts with '#', which makes the line a comment".into()));
    if let Some(problem) = problem {
        return Err(WriteError::Value {
            hit: None,
            message: format!("query id {} {problem}; {TREC_IDS}; {WRITE_MTRAG}", shown(qid)),
        });
    }
    // The usual docid is printable ASCII: one vectorised pass each, no per-character decoding.
    for (i, hit) in hits.iter().enumerate() {
        if hit.docid.is_empty() || hit.docid.len() > fields::MAX_FIELD_BYTES || !fields::is_plain(hit.docid) {
            if let Some(problem) = fields::problem(hit.docid) {
                let message = format!(
                    "document id {} (query {}) {problem}; {TREC_IDS}; {WRITE_MTRAG}",
                    shown(hit.docid),
                    shown(qid)
                );
                return Err(WriteError::Value { hit: Some(i), message });
            }
        }
    }
    Ok(())
}

/// Refuses a tag that cannot be the sixth field of a TREC line (MT-RAG output has no tag).
pub fn check_tag(format: OutFormat, tag: &str) -> Result<(), FusionError> {
    match fields::problem(tag) {
        Some(problem) if format == OutFormat::Trec => Err(FusionError::setting(format!(
            "tag {} {problem}; the tag is the last field of every TREC line: non-empty, no whitespace or control \
             characters",
            shown(tag)
        ))),
        _ => Ok(()),
    }
}

/// Why a TREC output cannot start with the lines of query `qid`, if it cannot: a first line that
/// starts with `{` makes the readers take the file for MT-RAG JSONL.
#[must_use]
pub fn first_trec_line_problem(format: OutFormat, qid: &str) -> Option<String> {
    (format == OutFormat::Trec && qid.starts_with('{')).then(|| {
        format!(
            "query id {} would start the output with '{{', which the readers take for MT-RAG JSONL; {WRITE_MTRAG}",
            shown(qid)
        )
    })
}

/// The error for an output that would hold no line (no query, or for TREC no hit): the readers
/// take an empty file for a mistake, so it would not read back as the run it is.
#[must_use]
pub fn nothing_written(format: OutFormat, queries: u64) -> FusionError {
    let why = match format {
        OutFormat::Trec if queries > 0 => format!(
            "none of its {queries} queries has a hit (a TREC file has no line for a query without hits); \
             write MT-RAG JSONL (format 'mtrag'), which keeps them"
        ),
        _ => "the run has no queries".to_owned(),
    };
    FusionError::invalid(format!("nothing to write: {why}"))
}

/// Where the value of a failed [`write_query`] came from, for the error: the input file and line of
/// `hit` (of any hit of the query for its id), found among `lists[r]`, the hits read from `inputs[r]`.
#[must_use]
pub fn value_error_at<L: AsRef<[Hit]>>(
    inputs: &[String],
    lists: &[L],
    hit: Option<&Hit>,
    message: String,
) -> FusionError {
    let found = match hit {
        Some(hit) => lists.iter().position(|list| list.as_ref().iter().any(|h| std::ptr::eq(h, hit))),
        None => lists.iter().position(|list| !list.as_ref().is_empty()),
    };
    match found {
        Some(r) => FusionError::input(&inputs[r], hit.unwrap_or(&lists[r].as_ref()[0]).line, message),
        None => FusionError::invalid(message),
    }
}

/// One fused query's lines in `format` (each hit with its fused score and its passthrough fields),
/// with [`write_query`]'s checks: a value the format cannot hold is an error at the input line it came
/// from ([`value_error_at`]: `lists[r]` holds run r's hits, `inputs[r]` names it).
pub fn fused_query_text<L: AsRef<[Hit]>>(
    format: OutFormat,
    qid: &str,
    fused: &[(&Hit, f64)],
    tag: &str,
    collection: Option<&str>,
    inputs: &[String],
    lists: &[L],
) -> Result<Vec<u8>, FusionError> {
    let hits: Vec<OutHit<'_>> =
        fused.iter().map(|&(hit, score)| OutHit { docid: &hit.docid, score, extra: hit.extra.as_deref() }).collect();
    let mut text = Vec::with_capacity(hits.len() * 64);
    write_query(&mut text, format, qid, &hits, tag, collection).map_err(|e| match e {
        WriteError::Io(e) => FusionError::output("<memory>", &e),
        WriteError::Value { hit, message } => value_error_at(inputs, lists, hit.map(|i| fused[i].0), message),
    })?;
    Ok(text)
}

/// Writes one query. Scores print in the shortest form that reads back exactly (ryu). A TREC line
/// is written only if the run readers read it back as the same values ([`fields`]).
pub fn write_query(
    out: &mut impl Write,
    format: OutFormat,
    qid: &str,
    hits: &[OutHit<'_>],
    tag: &str,
    collection: Option<&str>,
) -> Result<(), WriteError> {
    // Neither format has a way to write inf or NaN (ryu would print a finite-looking number).
    if let Some(i) = hits.iter().position(|hit| !hit.score.is_finite()) {
        let (docid, score) = (hits[i].docid, hits[i].score);
        let message = format!(
            "the score to write for document {} (query {}) is {score}; a run file holds finite scores only \
             (a score method summing huge scores overflows)",
            shown(docid),
            shown(qid)
        );
        return Err(WriteError::Value { hit: Some(i), message });
    }
    match format {
        OutFormat::Trec => {
            check_trec_ids(qid, hits)?;
            // `writeln!` with float formatting was 11% of `fanfuse fuse`; ryu/itoa print the same digits.
            let (mut ranks, mut scores) = (itoa::Buffer::new(), ryu::Buffer::new());
            for (i, hit) in hits.iter().enumerate() {
                out.write_all(qid.as_bytes())?;
                out.write_all(b" Q0 ")?;
                out.write_all(hit.docid.as_bytes())?;
                out.write_all(b" ")?;
                out.write_all(ranks.format(i + 1).as_bytes())?;
                out.write_all(b" ")?;
                out.write_all(scores.format_finite(hit.score).as_bytes())?;
                out.write_all(b" ")?;
                out.write_all(tag.as_bytes())?;
                out.write_all(b"\n")?;
            }
        }
        OutFormat::Mtrag => {
            out.write_all(b"{\"task_id\": ")?;
            serde_json::to_writer(&mut *out, qid)?;
            out.write_all(b", \"Collection\": ")?;
            serde_json::to_writer(&mut *out, &collection)?;
            out.write_all(b", \"contexts\": [")?;
            for (i, hit) in hits.iter().enumerate() {
                if i > 0 {
                    out.write_all(b", ")?;
                }
                out.write_all(b"{\"document_id\": ")?;
                serde_json::to_writer(&mut *out, hit.docid)?;
                out.write_all(b", \"score\": ")?;
                out.write_all(ryu::Buffer::new().format_finite(hit.score).as_bytes())?;
                for (key, value) in hit.extra.into_iter().flatten() {
                    out.write_all(b", ")?;
                    serde_json::to_writer(&mut *out, &**key)?;
                    out.write_all(b": ")?;
                    out.write_all(RawValue::get(value).as_bytes())?;
                }
                out.write_all(b"}")?;
            }
            out.write_all(b"]}\n")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trec(qid: &str, docids: &[&str], tag: &str) -> Result<String, String> {
        check_tag(OutFormat::Trec, tag).map_err(|e| e.to_string())?;
        let hits: Vec<OutHit<'_>> = docids.iter().map(|d| OutHit { docid: d, score: 1.0, extra: None }).collect();
        let mut out = Vec::new();
        match write_query(&mut out, OutFormat::Trec, qid, &hits, tag, None) {
            Ok(()) => Ok(String::from_utf8(out).unwrap()),
            Err(WriteError::Value { hit, message }) => Err(format!("{hit:?}: {message}")),
            Err(WriteError::Io(e)) => panic!("{e}"),
        }
    }

    #[test]
    fn writes_only_lines_that_read_back() {
        assert_eq!(trec("q1", &["d1", "é"], "t").unwrap(), "q1 Q0 d1 1 1.0 t\nq1 Q0 é 2 1.0 t\n");
        assert!(trec("a b", &["d"], "t").unwrap_err().starts_with("None: query id 'a b' contains whitespace (U+0020)"));
        assert!(trec("#q", &["d"], "t").unwrap_err().contains("starts with '#'"));
        assert!(trec("", &["d"], "t").unwrap_err().contains("query id '' is empty"));
        let error = trec("q", &["d", "d\n2"], "t").unwrap_err();
        assert!(error.starts_with(r"Some(1): document id 'd\n2' (query 'q') contains a line end"), "{error}");
        assert!(trec("q", &["d"], "my tag").unwrap_err().starts_with("tag 'my tag' contains whitespace"));
        assert!(trec("q", &["d"], "").unwrap_err().starts_with("tag '' is empty"));
        let hits = [OutHit { docid: "d", score: f64::INFINITY, extra: None }];
        for format in [OutFormat::Trec, OutFormat::Mtrag] {
            match write_query(&mut Vec::new(), format, "q", &hits, "t", None) {
                Err(WriteError::Value { hit: Some(0), message }) => assert!(message.contains("is inf"), "{message}"),
                other => panic!("{other:?}"),
            }
        }
        // MT-RAG output holds any id, and has no tag.
        check_tag(OutFormat::Mtrag, "").unwrap();
        let hits = [OutHit { docid: "d 1\n", score: 0.5, extra: None }];
        let mut out = Vec::new();
        write_query(&mut out, OutFormat::Mtrag, "a b", &hits, "", Some("c")).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"task_id\": \"a b\", \"Collection\": \"c\", \"contexts\": [{\"document_id\": \"d 1\\n\", \"score\": 0.5}]}\n"
        );
    }
}
