//! Reading a run file as a stream of query groups ([`RunReader`]), or whole ([`read_run`]).

use std::collections::HashMap;

use super::source::LineSource;
use super::{fields, mtrag, order_hits, trec, RankFrom};
use crate::error::FusionError;
use crate::runs::{Format, Hit, Query, Run};

/// Reads one run file as a stream of query groups: consecutive lines of the same query form one
/// group. An unsorted file yields the same query more than once; callers merge.
pub struct RunReader {
    path: String,
    pub source: LineSource,
    pub format: Format,
    /// `Collection` of the first MT-RAG line, to carry over to fused output.
    pub collection: Option<String>,
    next: Option<(String, Vec<Hit>)>,
    done: bool,
    /// Emptied hit lists handed back by the consumer (see [`RunReader::recycle`]).
    spare: Vec<Vec<Hit>>,
}

/// Spare hit lists a reader keeps at most (beyond that they are freed).
const MAX_SPARE: usize = 1024;

/// Whether a line holds no record: blank, or a TREC comment (`#` first, as trec_eval skips them).
/// Decided on the first byte for the usual line that starts with a printable non-`#` (~1% of `fuse`
/// when every line was scanned). The error is for a comment that other readers would not skip.
fn is_skipped(format: Format, line: &str) -> Result<bool, String> {
    match line.as_bytes().first() {
        Some(&b) if b.is_ascii_graphic() && b != b'#' => Ok(false),
        _ if fields::is_blank(line) => Ok(true),
        _ if format == Format::Trec && fields::is_comment(line) => fields::comment_problem(line).map_or(Ok(true), Err),
        _ => Ok(false),
    }
}

/// An empty hit list with room for at least `capacity` hits, a spare one if there is one. (A function
/// of the field, not a method, so that it can run while the current line borrows the source.)
fn hit_list(spare: &mut Vec<Vec<Hit>>, capacity: usize) -> Vec<Hit> {
    let mut hits = spare.pop().unwrap_or_default();
    hits.reserve(capacity);
    hits
}

/// Capacity of the first group's hit list (later groups take the size of the one before).
const FIRST_GROUP_CAPACITY: usize = 128;

/// The format of a run file, from its first line that is neither blank nor a comment (JSON objects
/// start with '{'). The file is reopened afterwards, which is cheaper than buffering a gzip stream.
fn sniff_format(path: &str) -> Result<Format, FusionError> {
    let mut probe = LineSource::open(path)?;
    while let Some(line) = probe.next_line()? {
        if !is_skipped(Format::Trec, line).unwrap_or(true) {
            let mtrag = line.bytes().find(|&b| !fields::is_separator(b)) == Some(b'{');
            return Ok(if mtrag { Format::Mtrag } else { Format::Trec });
        }
    }
    Err(FusionError::input(
        path,
        0,
        "the file is empty; expected TREC run lines `qid Q0 docid rank score tag` or MT-RAG JSONL \
         (blank lines and `#` comments do not count)",
    ))
}

/// A run is read more than once (its format first, then its lines; again when the runs' query orders
/// differ), which a pipe cannot give: it is refused, saying what to do instead.
fn check_rereadable(path: &str) -> Result<(), FusionError> {
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::metadata(path).map_err(|e| FusionError::io(path, &e))?.file_type();
    let what = if kind.is_fifo() { "pipe" } else { "socket" };
    if kind.is_fifo() || kind.is_socket() {
        return Err(FusionError::input(
            path,
            0,
            format!(
                "is a {what}; a run is read more than once (its format, then its lines), which a {what} \
                 cannot give: write it to a file and give the file"
            ),
        ));
    }
    Ok(())
}

impl RunReader {
    pub fn open(path: &str) -> Result<Self, FusionError> {
        check_rereadable(path)?;
        let format = sniff_format(path)?;
        Self::over(path, LineSource::open(path)?, format)
    }

    /// Reads the lines that start in bytes `[start, end)` of the file ([`LineSource::open_block`]),
    /// in the format of the whole file; line numbers count from the block's first line, whose offset
    /// comes with the reader.
    pub fn open_block(path: &str, start: u64, end: u64) -> Result<(Self, u64), FusionError> {
        check_rereadable(path)?;
        let format = sniff_format(path)?;
        let (source, first) = LineSource::open_block(path, start, end)?;
        Ok((Self::over(path, source, format)?, first))
    }

    fn over(path: &str, source: LineSource, format: Format) -> Result<Self, FusionError> {
        let mut reader = Self {
            path: path.to_owned(),
            source,
            format,
            collection: None,
            next: None,
            done: false,
            spare: Vec::new(),
        };
        reader.next = reader.read_record()?;
        Ok(reader)
    }

    /// Takes back an emptied hit list for later groups. Reusing the lists of fused queries keeps the
    /// same memory hot: fresh allocations for every group made the allocator fault in and zero new
    /// pages (`clear_page_erms`, ~13% of `fanfuse fuse`).
    pub fn recycle(&mut self, mut hits: Vec<Hit>) {
        if self.spare.len() < MAX_SPARE {
            hits.clear();
            self.spare.push(hits);
        }
    }

    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// One line's worth of hits, skipping blank lines.
    fn read_record(&mut self) -> Result<Option<(String, Vec<Hit>)>, FusionError> {
        loop {
            let line_no = self.source.line + 1;
            let Some(line) = self.source.next_line()? else { return Ok(None) };
            if is_skipped(self.format, line).map_err(|m| FusionError::input(&self.path, line_no, m))? {
                continue;
            }
            return match self.format {
                Format::Trec => {
                    let mut hits = hit_list(&mut self.spare, FIRST_GROUP_CAPACITY);
                    let qid = trec::parse_line_into(line, line_no, &mut hits)
                        .map_err(|m| FusionError::input(&self.path, line_no, m))?;
                    Ok(Some((qid.to_owned(), hits)))
                }
                Format::Mtrag => {
                    let record =
                        mtrag::parse_line(line, line_no).map_err(|m| FusionError::input(&self.path, line_no, m))?;
                    if self.collection.is_none() {
                        self.collection = record.collection;
                    }
                    Ok(Some((record.qid, record.hits)))
                }
            };
        }
    }

    /// The next group of consecutive lines that share a query id, or `None` at the end.
    ///
    /// # Panics
    /// Never: a hit is popped only right after `parse_line_into` pushed one.
    pub fn next_group(&mut self) -> Result<Option<(String, Vec<Hit>)>, FusionError> {
        if self.done {
            return Ok(None);
        }
        let Some((qid, mut hits)) = self.next.take() else {
            self.done = true;
            return Ok(None);
        };
        if self.format == Format::Trec {
            // TREC: one hit per line, so read on while the query id repeats (no allocation per line).
            loop {
                let line_no = self.source.line + 1;
                let Some(line) = self.source.next_line()? else { break };
                if is_skipped(Format::Trec, line).map_err(|m| FusionError::input(&self.path, line_no, m))? {
                    continue;
                }
                let line_qid = trec::parse_line_into(line, line_no, &mut hits)
                    .map_err(|m| FusionError::input(&self.path, line_no, m))?;
                if line_qid != qid {
                    // The first line of the next query: move its hit over (once per group).
                    let hit = hits.pop().expect("parse_line_into pushed a hit");
                    // Sized like this group: runs list about as many hits per query (no regrowth copies).
                    let mut next = hit_list(&mut self.spare, hits.len() + 1);
                    next.push(hit);
                    self.next = Some((line_qid.to_owned(), next));
                    break;
                }
            }
        } else {
            while let Some((next_qid, next_hits)) = self.read_record()? {
                if next_qid == qid {
                    hits.extend(next_hits);
                } else {
                    self.next = Some((next_qid, next_hits));
                    break;
                }
            }
        }
        Ok(Some((qid, hits)))
    }
}

/// Reads a whole run into memory: queries in order of first appearance, hits in rank order.
pub fn read_run(path: &str, rank_from: RankFrom) -> Result<Run, FusionError> {
    let mut reader = RunReader::open(path)?;
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut queries: Vec<Query> = Vec::new();
    while let Some((qid, hits)) = reader.next_group()? {
        crate::interrupt::checkpoint()?;
        if let Some(&at) = index.get(&qid) {
            queries[at].hits.extend(hits);
        } else {
            index.insert(qid.clone(), queries.len());
            queries.push(Query { qid, hits });
        }
    }
    for query in &mut queries {
        order_hits(path, &query.qid, &mut query.hits, rank_from)?;
    }
    let name =
        std::path::Path::new(path).file_name().map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned());
    Ok(Run { name, collection: reader.collection, queries, source: Some(path.to_owned()) })
}
