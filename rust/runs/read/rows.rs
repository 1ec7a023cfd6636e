//! Runs as Arrow rows, for engines that spread the work over many processes (Dask, Spark, Ray): the
//! core's own readers read one block of a run (a byte range of a TREC or MT-RAG file, a batch of a
//! table) into record batches, split by query id so that a shuffle brings each query's rows of every
//! run to one place, where [`super::fuse_rows`] fuses them.
//!
//! A row is one hit: `qid`, `docid`, `score` (NaN for a table without scores), `rank` (the rank
//! column; an MT-RAG context's position; 0 for a table without ranks), `line` (the line, or row, in
//! the block, from 1) and `group` (the index in the block of the group of consecutive lines of one
//! query it belongs to, which is how one process takes turns between runs). A group without hits
//! (an MT-RAG record with no contexts) still takes its turn: it is one row with an empty `docid`,
//! which no hit has. What the block's rows cannot say alone (the lines and groups before it) is in
//! its [`BlockSummary`].

use super::table::{for_each_row, TableSpec};
use super::RunReader;
use crate::arrow::export::{ExportBatch, ExportColumn, TextColumn};
use crate::arrow::TableSource;
use crate::error::FusionError;
use crate::runs::Hit;
use std::collections::HashMap;

/// The columns of a row batch, in order.
pub const ROW_COLUMNS: [&str; 6] = ["qid", "docid", "score", "rank", "line", "group"];

/// What the rows of one block leave out: the block's run, how many lines (rows) and groups it
/// holds, and the query ids of its first and last group (a group that continues across a block
/// boundary is one group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSummary {
    pub run: usize,
    pub lines: u64,
    pub groups: u64,
    pub first: Option<String>,
    pub last: Option<String>,
}

/// What a sequence of [`BlockSummary`] holds, as messages name it: the summary's fields, in the
/// order the engines hold them between calls (a tuple).
pub const SUMMARIES: &str = "block summaries (run, lines, groups, first, last)";

impl BlockSummary {
    /// `blocks[at]` is not a summary as the readers return it.
    #[must_use]
    pub fn refused(at: usize) -> FusionError {
        FusionError::wrong_type(format!(
            "blocks[{at}] must be a block summary (run, lines, groups, first, last) as the readers return it"
        ))
    }
}

/// Rows being collected for one batch.
#[derive(Default)]
struct Rows {
    qid: TextColumn,
    docid: TextColumn,
    score: Vec<f64>,
    rank: Vec<i64>,
    line: Vec<i64>,
    group: Vec<i64>,
}

impl Rows {
    /// Room for `rows` more rows whose ids are about `qid` and `docid` bytes long: growing the
    /// columns row by row copied them and had the kernel clear fresh pages for a third of the time.
    fn reserve(&mut self, rows: usize, qid: usize, docid: usize) {
        self.qid.reserve(rows, rows * qid);
        self.docid.reserve(rows, rows * docid);
        for column in [&mut self.rank, &mut self.line, &mut self.group] {
            column.reserve(rows);
        }
        self.score.reserve(rows);
    }

    fn push(&mut self, qid: &str, docid: &str, score: f64, rank: i64, line: u64, group: u64) {
        self.qid.push(qid);
        self.docid.push(docid);
        self.score.push(score);
        self.rank.push(rank);
        self.line.push(i64::try_from(line).unwrap_or(i64::MAX));
        self.group.push(i64::try_from(group).unwrap_or(i64::MAX));
    }

    fn finish(self) -> ExportBatch {
        ExportBatch::new(vec![
            (ROW_COLUMNS[0], ExportColumn::Text(self.qid)),
            (ROW_COLUMNS[1], ExportColumn::Text(self.docid)),
            (ROW_COLUMNS[2], ExportColumn::Float64(self.score)),
            (ROW_COLUMNS[3], ExportColumn::Int64(self.rank)),
            (ROW_COLUMNS[4], ExportColumn::Int64(self.line)),
            (ROW_COLUMNS[5], ExportColumn::Int64(self.group)),
        ])
    }
}

/// The index (below `partitions`) of the batch that takes the rows of query `qid`: FNV-1a of its
/// bytes, the same on every machine, so that every block of every run sends a query to one place.
#[must_use]
pub fn partition_of(qid: &str, partitions: usize) -> usize {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for &byte in qid.as_bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    (hash % partitions as u64) as usize
}

/// The most partitions a block is split into: past any useful shuffle (a partition holds whole
/// queries), and a bound on the one slot per partition that a block's batches take.
pub const MAX_PARTITIONS: usize = 100_000;

/// A block's summary and its batches, one per partition (None: the partition received no rows).
pub type BlockRows = (BlockSummary, Vec<Option<ExportBatch>>);

/// A block's rows as they are read: groups numbered in order, each sent to its query's batch. Only
/// the partitions that receive rows hold a batch, so a block costs its rows, whatever the partitions.
struct Blocks {
    run: usize,
    partitions: usize,
    pieces: HashMap<usize, Rows>,
    /// Rows a batch makes room for when it is started, and the bytes of their ids (see `expect`).
    expected: (usize, usize, usize),
    groups: u64,
    first: Option<String>,
    last: Option<String>,
    /// The batch of the group under way.
    piece: usize,
}

impl Blocks {
    fn new(run: usize, partitions: usize) -> Result<Self, FusionError> {
        if partitions == 0 || partitions > MAX_PARTITIONS {
            return Err(FusionError::invalid(format!(
                "partitions must be an int from 1 to {MAX_PARTITIONS} (got {partitions})"
            )));
        }
        let pieces = HashMap::new();
        Ok(Self { run, partitions, pieces, expected: (0, 0, 0), groups: 0, first: None, last: None, piece: 0 })
    }

    /// Starts a group of query `qid`, unless `qid` continues the group under way (`same`); the
    /// index of the group (from 0).
    fn group(&mut self, qid: &str, same: bool) -> u64 {
        if !same {
            self.groups += 1;
            self.piece = partition_of(qid, self.partitions);
            if self.first.is_none() {
                self.first = Some(qid.to_owned());
            }
        }
        self.groups - 1
    }

    fn rows(&mut self) -> &mut Rows {
        let (share, qid, docid) = self.expected;
        self.pieces.entry(self.piece).or_insert_with(|| {
            let mut rows = Rows::default();
            rows.reserve(share, qid, docid);
            rows
        })
    }

    /// Room in each batch, once it is started, for its share of about `rows` rows like `hits` of
    /// query `qid` (a query's rows all go to one batch, so the shares vary: a quarter more than even,
    /// with a small floor that does not grow with the partitions).
    fn expect(&mut self, rows: usize, qid: &str, hits: &[Hit]) {
        let docid = hits.iter().map(|h| h.docid.len()).sum::<usize>() / hits.len().max(1) + 1;
        let share = (rows / self.partitions * 5 / 4 + 16).min(rows.max(1));
        self.expected = (share, qid.len(), docid);
    }

    /// The summary and one batch per partition, None where no rows came.
    fn finish(mut self, lines: u64, last: Option<String>) -> BlockRows {
        self.last = last;
        let summary = BlockSummary { run: self.run, lines, groups: self.groups, first: self.first, last: self.last };
        let mut batches: Vec<Option<ExportBatch>> = (0..self.partitions).map(|_| None).collect();
        for (partition, rows) in self.pieces {
            batches[partition] = Some(rows.finish());
        }
        (summary, batches)
    }
}

/// The batch of a partition that received no rows: the row columns, empty.
#[must_use]
pub fn empty_rows() -> ExportBatch {
    Rows::default().finish()
}

/// The byte ranges `[start, end)` of about `block_bytes` each that cover run file `path`, for
/// [`read_file_block`]: one range for a gzip file, which cannot be split, and for an empty one.
pub fn file_blocks(path: &str, block_bytes: u64) -> Result<Vec<(u64, u64)>, FusionError> {
    if block_bytes == 0 {
        return Err(FusionError::invalid("block_bytes must be at least 1"));
    }
    let gzip = super::source::LineSource::open(path)?.is_gzip();
    let size = std::fs::metadata(path).map_err(|e| FusionError::io(path, &e))?.len();
    if gzip || size == 0 {
        return Ok(vec![(0, size)]);
    }
    Ok((0..size)
        .step_by(usize::try_from(block_bytes).unwrap_or(usize::MAX))
        .map(|s| (s, size.min(s + block_bytes)))
        .collect())
}

/// Reads the lines of run file `path` that start in bytes `[start, end)` (the whole file for gzip;
/// see [`super::source::LineSource::open_block`]) with the reader of `read_run`: the same formats,
/// checks and messages, which name the line in the whole file. The rows go to `partitions` batches
/// by query id ([`partition_of`]); a partition that receives none has no batch (None).
pub fn read_file_block(
    path: &str,
    start: u64,
    end: u64,
    run: usize,
    partitions: usize,
) -> Result<BlockRows, FusionError> {
    let mut blocks = Blocks::new(run, partitions)?;
    let result = (|| {
        let (mut reader, first) = RunReader::open_block(path, start, end)?;
        let mut last: Option<String> = None;
        while let Some((qid, hits)) = reader.next_group()? {
            crate::interrupt::checkpoint()?;
            if last.is_none() && !reader.source.is_gzip() {
                // No run line is shorter than this (`q Q0 d 1 1 t` and its line end); most are longer.
                let rows = usize::try_from(end.saturating_sub(first).min(reader_size(path))).unwrap_or(0) / 14;
                blocks.expect(rows, &qid, &hits);
            }
            let group = blocks.group(&qid, false);
            push_hits(blocks.rows(), &qid, &hits, group);
            reader.recycle(hits);
            last = Some(qid);
        }
        Ok((reader.source.line, last))
    })();
    match result {
        Ok((lines, last)) => Ok(blocks.finish(lines, last)),
        Err(error) => Err(in_whole_file(error, path, start)),
    }
}

/// The size of the file (a block's end may lie past it).
fn reader_size(path: &str) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn push_hits(rows: &mut Rows, qid: &str, hits: &[Hit], group: u64) {
    if hits.is_empty() {
        rows.push(qid, "", f64::NAN, 0, 0, group);
    }
    for hit in hits {
        rows.push(qid, &hit.docid, hit.score, hit.rank, hit.line, group);
    }
}

/// An error at line N of the block that starts at byte `start` of `path`, as the error at its line
/// in the whole file (the lines before the block are counted only when there is an error).
fn in_whole_file(error: FusionError, path: &str, start: u64) -> FusionError {
    match error {
        FusionError::Input { path: at, line, message } if at == path && line > 0 && start > 0 => {
            match super::source::block_start(path, start).and_then(|first| lines_before(path, first)) {
                Ok(before) => FusionError::Input { path: at, line: before + line, message },
                Err(e) => FusionError::io(path, &e),
            }
        }
        other => other,
    }
}

/// The number of line ends in the first `offset` bytes of the file.
fn lines_before(path: &str, offset: u64) -> std::io::Result<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?.take(offset);
    let mut chunk = vec![0; 1 << 20];
    let mut count = 0;
    loop {
        let n = file.read(&mut chunk)?;
        if n == 0 {
            return Ok(count);
        }
        count += memchr::memchr_iter(b'\n', &chunk[..n]).count() as u64;
    }
}

/// Reads a run table (or a part of one) into rows with the table reader of `runs_from_table`: the
/// same columns, checks and messages, rows numbered after `spec.first_row`. One block per run: the
/// table's run, numbered `run`, or with `spec.run_column` one per label of `spec.runs`, numbered
/// from `run` in that order. A row's line is its row in the table, and a group is consecutive rows
/// of one query among the rows of its run (how a table is replayed in its row order).
pub fn read_table_block(
    source: TableSource,
    spec: &TableSpec<'_>,
    run: usize,
    partitions: usize,
) -> Result<Vec<BlockRows>, FusionError> {
    let runs = spec.runs.len().max(1);
    let mut blocks = (run..run + runs).map(|r| Blocks::new(r, partitions)).collect::<Result<Vec<_>, _>>()?;
    let mut last: Vec<Option<String>> = vec![None; runs];
    let mut lines = 0;
    for_each_row(source, spec, |row| {
        lines = row.row - spec.first_row;
        let same = last[row.run].as_deref() == Some(row.qid);
        let block = &mut blocks[row.run];
        let group = block.group(row.qid, same);
        if !same {
            last[row.run] = Some(row.qid.to_owned());
        }
        block.rows().push(row.qid, row.docid, row.score, row.rank.unwrap_or(0), lines, group);
        Ok(())
    })?;
    Ok(blocks.into_iter().zip(last).map(|(block, last)| block.finish(lines, last)).collect())
}

/// [`read_table_block`] for a table of one run (`spec`'s run column and labels are not read): its
/// one block.
///
/// # Panics
/// Never: a table without a run column is one block.
pub fn read_run_table_block(
    source: TableSource,
    spec: &TableSpec<'_>,
    run: usize,
    partitions: usize,
) -> Result<BlockRows, FusionError> {
    let spec = TableSpec { run_column: None, runs: &[], ..spec.clone() };
    Ok(read_table_block(source, &spec, run, partitions)?.pop().expect("one block for a table without a run column"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_goes_to_one_partition_everywhere() {
        assert_eq!(partition_of("q1", 1), 0);
        let spread: std::collections::HashSet<usize> = (0..200).map(|i| partition_of(&format!("q{i}"), 7)).collect();
        assert_eq!(spread.len(), 7);
        // Fixed values: a change of the hash would split a query between machines of two versions.
        assert_eq!(partition_of("", 1000), (0xcbf2_9ce4_8422_2325_u64 % 1000) as usize);
        assert_eq!(partition_of("a", 1 << 40), (0xaf63_dc4c_8601_ec8c_u64 % (1 << 40)) as usize);
    }

    #[test]
    fn only_the_partitions_that_receive_rows_hold_a_batch() {
        let path = std::env::temp_dir().join(format!("fanfuse-rows-{}.trec", std::process::id()));
        std::fs::write(&path, "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq2 Q0 c 1 1.0 t\n").unwrap();
        let path = path.to_str().unwrap();
        let (summary, batches) = read_file_block(path, 0, u64::MAX, 0, MAX_PARTITIONS).unwrap();
        assert_eq!((summary.lines, summary.groups, batches.len()), (3, 2, MAX_PARTITIONS));
        let held: Vec<usize> = (0..MAX_PARTITIONS).filter(|&p| batches[p].is_some()).collect();
        let mut expected = vec![partition_of("q1", MAX_PARTITIONS), partition_of("q2", MAX_PARTITIONS)];
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(held, expected);
        for refused in [0, MAX_PARTITIONS + 1] {
            let error = read_file_block(path, 0, u64::MAX, 0, refused).err().expect("refused").to_string();
            assert!(error.contains(&format!("partitions must be an int from 1 to {MAX_PARTITIONS}")), "{error}");
        }
        std::fs::remove_file(path).unwrap();
    }
}
