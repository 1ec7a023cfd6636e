//! Run files (TREC 6-column and MT-RAG retrieval JSONL, optionally gzipped) and qrels: streaming
//! readers that yield one query's hits at a time, ordering rules, and atomic writers.

pub mod columns;
pub mod fields;
pub mod fuse_query;
pub mod fuse_rows;
pub mod fused_text;
pub mod input;
mod mtrag;
pub mod qrels;
mod rank;
pub mod row_order;
pub mod rows;
pub mod source;
pub mod stream;
pub mod table;
pub mod train;
mod trec;
pub mod write;

use std::collections::HashMap;

use serde_json::value::RawValue;

use crate::error::FusionError;
pub use rank::{order_hits, ranked, trec_eval_order, RankFrom};
use source::LineSource;

/// Fields of an MT-RAG context other than `document_id` and `score`, as raw JSON in file order,
/// so that `text`, `title`, `source` and anything else pass through fusion byte for byte.
pub type Extra = Vec<(Box<str>, Box<RawValue>)>;

/// One retrieved document of one query.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Inline up to 24 bytes: most docids cost no allocation (measured: malloc/free were ~10% of `fuse`).
    pub docid: compact_str::CompactString,
    pub score: f64,
    /// The TREC rank column; for MT-RAG, the 1-based position of the context.
    pub rank: i64,
    /// Line of the input file the hit came from (for error messages).
    pub line: u64,
    pub extra: Option<Box<Extra>>,
}

/// One query of a run: its hits in rank order once [`order_hits`] has run.
#[derive(Debug, Clone)]
pub struct Query {
    pub qid: String,
    pub hits: Vec<Hit>,
}

/// A whole run in memory (the Python API and `eval`/`tune`; `fuse` streams instead).
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub name: String,
    pub collection: Option<String>,
    pub queries: Vec<Query>,
    /// What the `line` of every hit counts in, for errors: the file read, `<columns>` (rows), or
    /// `None` when hits come from several files (a fused run).
    pub source: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Trec,
    Mtrag,
}

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

impl RunReader {
    pub fn open(path: &str) -> Result<Self, FusionError> {
        let format = sniff_format(path)?;
        Self::over(path, LineSource::open(path)?, format)
    }

    /// Reads the lines that start in bytes `[start, end)` of the file ([`LineSource::open_block`]),
    /// in the format of the whole file; line numbers count from the block's first line, whose offset
    /// comes with the reader.
    pub fn open_block(path: &str, start: u64, end: u64) -> Result<(Self, u64), FusionError> {
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

impl Run {
    /// An error about a value of `hit` (or of its query), at the hit's line where the run has one source.
    fn value_error(&self, hit: Option<&Hit>, message: String) -> FusionError {
        match (&self.source, hit) {
            (Some(source), Some(hit)) => FusionError::input(source, hit.line, message),
            _ => FusionError::invalid(message),
        }
    }
}

/// The source of a run built from columns: its lines are rows.
const COLUMNS: &str = "<columns>";

impl Run {
    /// The queries of `qids` only, in this run's order: a fold of a cross-validation.
    #[must_use]
    pub fn subset(&self, qids: &[String]) -> Self {
        let keep: std::collections::HashSet<&str> = qids.iter().map(String::as_str).collect();
        let queries = self.queries.iter().filter(|q| keep.contains(q.qid.as_str())).cloned().collect();
        Self { name: self.name.clone(), collection: self.collection.clone(), queries, source: self.source.clone() }
    }
}

impl Run {
    /// Builds a run from aligned columns (a data frame): rows of one query need not be adjacent.
    /// Rows are numbered from 1 in error messages, as `<columns>:row`.
    pub fn from_columns(
        name: &str,
        qids: &[String],
        docids: &[String],
        scores: &[f64],
        rank_from: RankFrom,
    ) -> Result<Self, FusionError> {
        if qids.len() != docids.len() || qids.len() != scores.len() {
            return Err(FusionError::invalid(format!(
                "qid, docid and score columns must have equal lengths (got {}, {}, {})",
                qids.len(),
                docids.len(),
                scores.len()
            )));
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut queries: Vec<Query> = Vec::new();
        for (row, ((qid, docid), &score)) in qids.iter().zip(docids).zip(scores).enumerate() {
            let at_row = |message: String| FusionError::input(COLUMNS, row as u64 + 1, message);
            if !score.is_finite() {
                return Err(at_row(format!("score {score} is not finite")));
            }
            for (what, id) in [("query id", qid), ("document id", docid)] {
                if id.is_empty() {
                    return Err(at_row(format!("{what} is empty; ids are non-empty strings")));
                }
            }
            let at = *index.entry(qid).or_insert_with(|| {
                queries.push(Query { qid: qid.clone(), hits: Vec::new() });
                queries.len() - 1
            });
            let rank = i64::try_from(queries[at].hits.len()).unwrap_or(i64::MAX) + 1;
            queries[at].hits.push(Hit { docid: docid.as_str().into(), score, rank, line: row as u64 + 1, extra: None });
        }
        for query in &mut queries {
            order_hits(COLUMNS, &query.qid, &mut query.hits, rank_from)?;
        }
        Ok(Self { name: name.to_owned(), collection: None, queries, source: Some(COLUMNS.into()) })
    }

    /// Writes the run (as `crate::output` describes), hits in their current order with their own scores.
    pub fn write(
        &self,
        path: &str,
        format: write::OutFormat,
        tag: &str,
        collection: Option<&str>,
    ) -> Result<(), FusionError> {
        write::check_tag(format, tag)?;
        let lines = match format {
            write::OutFormat::Trec => self.queries.iter().map(|q| q.hits.len()).sum(),
            write::OutFormat::Mtrag => self.queries.len(),
        };
        if lines == 0 {
            return Err(write::nothing_written(format, self.queries.len() as u64));
        }
        let first = self.queries.iter().find(|q| !q.hits.is_empty());
        if let Some(message) = first.and_then(|q| write::first_trec_line_problem(format, &q.qid)) {
            return Err(self.value_error(first.and_then(|q| q.hits.first()), message));
        }
        let mut out = crate::output::OutputFile::create(path, &[])?;
        let collection = collection.or(self.collection.as_deref());
        for query in &self.queries {
            crate::interrupt::checkpoint()?;
            let hits: Vec<write::OutHit<'_>> = query
                .hits
                .iter()
                .map(|h| write::OutHit { docid: &h.docid, score: h.score, extra: h.extra.as_deref() })
                .collect();
            write::write_query(out.writer(), format, &query.qid, &hits, tag, collection).map_err(|e| match e {
                write::WriteError::Io(e) => out.io_error(&e),
                write::WriteError::Value { hit, message } => {
                    self.value_error(query.hits.get(hit.unwrap_or(0)), message)
                }
            })?;
        }
        out.commit()
    }
}
