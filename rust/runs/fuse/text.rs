//! Writing TREC text fused apart (by the engines that fuse rows in many places) into one run file:
//! the chunks come in the order of the file, each a batch of `qid` and `text` (one query's lines).

use std::io::Write;

use crate::arrow::column::{Column, Values};
use crate::arrow::TableSource;
use crate::error::FusionError;
use crate::output::OutputFile;
use crate::runs::write::{first_trec_line_problem, nothing_written, OutFormat};

/// The output file being filled chunk by chunk, through the output guard of `fanfuse fuse`.
pub struct FusedText {
    out: OutputFile,
    queries: u64,
    /// Nothing written yet (a query without hits has empty text).
    empty: bool,
}

impl FusedText {
    /// Opens `output` (refused if it is one of `inputs`).
    pub fn create(output: &str, inputs: &[String]) -> Result<Self, FusionError> {
        Ok(Self { out: OutputFile::create(output, inputs)?, queries: 0, empty: true })
    }

    /// Appends one chunk; `name` names it in errors.
    pub fn write(&mut self, chunk: TableSource, name: &str) -> Result<(), FusionError> {
        chunk.for_each_batch(name, |batch| {
            let column = |n: &str| {
                let (schema, array) = batch.column(n).ok_or_else(|| {
                    FusionError::invalid(format!("{name} has no column '{n}': chunks hold qid and text"))
                })?;
                Column::new(schema, array)
                    .ok()
                    .filter(|c| c.values() == Values::Text)
                    .ok_or_else(|| FusionError::invalid(format!("{name}: column '{n}' is not text")))
            };
            let (qids, texts) = (column("qid")?, column("text")?);
            let (mut a, mut b) = (itoa::Buffer::new(), itoa::Buffer::new());
            for row in batch.rows() {
                let at_row = |m: String| FusionError::invalid(format!("{name} row {row}: {m}"));
                let text = texts.text(row, &mut b).map_err(at_row)?;
                self.queries += 1;
                if self.empty && !text.is_empty() {
                    let qid = qids.text(row, &mut a).map_err(at_row)?;
                    if let Some(message) = first_trec_line_problem(OutFormat::Trec, qid) {
                        return Err(FusionError::invalid(message));
                    }
                    self.empty = false;
                }
                self.out.writer().write_all(text.as_bytes()).map_err(|e| self.out.io_error(&e))?;
            }
            Ok(())
        })
    }

    /// Puts the file in place; the number of queries written.
    pub fn commit(self) -> Result<u64, FusionError> {
        if self.empty {
            return Err(nothing_written(OutFormat::Trec, self.queries));
        }
        self.out.commit()?;
        Ok(self.queries)
    }
}
