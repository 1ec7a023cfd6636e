//! Writing runs: the TREC and MT-RAG line formats. Where the bytes go (atomically) is `crate::output`.

use std::io::Write;

use serde_json::value::RawValue;

use super::Extra;
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
        crate::names::parse(Self::BY_NAME, "format", s)
    }
}

/// One output hit: the docid, its (fused) score and the passthrough fields of its best occurrence.
pub struct OutHit<'a> {
    pub docid: &'a str,
    pub score: f64,
    pub extra: Option<&'a Extra>,
}

/// Writes one query. Scores print in the shortest form that reads back exactly (ryu).
pub fn write_query(
    out: &mut impl Write,
    format: OutFormat,
    qid: &str,
    hits: &[OutHit<'_>],
    tag: &str,
    collection: Option<&str>,
) -> std::io::Result<()> {
    match format {
        OutFormat::Trec => {
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
