//! Runs from Arrow tables: one run per table, or several runs in one table told apart by a run
//! label column. The column convention is in docs/run-files.md ("Tables and Parquet").

use std::collections::HashMap;

use super::{order_hits, RankFrom};
use crate::arrow::column::{Column, Values};
use crate::arrow::{type_name, Batch, TableSource};
use crate::error::FusionError;
use crate::runs::{Hit, Query, Run};

/// The accepted names of each column, first the one fanfuse writes. `q_id` and `doc_id` are ranx's
/// (`Run.to_parquet` / `from_parquet`), `query-id` / `corpus-id` BEIR's.
pub const QID_NAMES: &[&str] = &["qid", "q_id", "query-id"];
pub const DOCID_NAMES: &[&str] = &["docid", "doc_id", "corpus-id"];
pub const RANK_NAMES: &[&str] = &["rank"];
pub const SCORE_NAMES: &[&str] = &["score"];
/// Relevance of a qrels table (`score` as in ranx's and BEIR's qrels).
pub const RELEVANCE_NAMES: &[&str] = &["relevance", "score"];

const IDS: &str = "utf8, large_utf8, string_view or an integer type (dictionary-encoded too)";
const NUMBERS: &str = "an integer or floating-point type";

/// How to read a run table.
#[derive(Debug, Clone)]
pub struct TableSpec<'a> {
    /// The table in errors (`runs.parquet`, `tables[1]`); rows are its "lines", from 1.
    pub name: &'a str,
    /// The column holding each row's run label, when the table holds several runs.
    pub run_column: Option<&'a str>,
    /// The run labels, in fusion order (required with `run_column`).
    pub runs: &'a [String],
    pub rank_from: RankFrom,
    /// Rows before the table's first (a part of a larger table): row numbers in errors start after it.
    pub first_row: u64,
}

/// Which of `names` the table has: exactly one, or the error naming them and the table's columns.
pub fn find_column<'b>(
    batch: &Batch<'b>,
    table: &str,
    what: &str,
    names: &[&'b str],
) -> Result<Option<&'b str>, FusionError> {
    let present: Vec<&str> = names.iter().copied().filter(|n| batch.column(n).is_some()).collect();
    match present[..] {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        _ => Err(FusionError::invalid(format!(
            "{table} has {} columns {}; keep one",
            what,
            present.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(" and ")
        ))),
    }
}

/// The error for a missing column.
#[must_use]
pub fn missing_column(table: &str, what: &str, names: &[&str], batch: &Batch<'_>) -> FusionError {
    let alternatives = names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(" or ");
    FusionError::invalid(format!(
        "{table} has no {what} column: name it {alternatives} (its columns: {})",
        batch.names().join(", ")
    ))
}

/// The column `name` of `batch`, checked to hold `accepted` values.
///
/// # Panics
/// If `batch` has no column `name` (callers find it first).
pub fn typed_column<'a>(
    batch: &Batch<'a>,
    table: &str,
    name: &str,
    accepted: &[Values],
) -> Result<Column<'a>, FusionError> {
    let (schema, array) = batch.column(name).expect("found by name before");
    let expected = if accepted.contains(&Values::Text) { IDS } else { NUMBERS };
    let refuse = |format: &str| {
        FusionError::invalid(format!(
            "{table}: column '{name}' has Arrow type {}; accepted: {expected}",
            type_name(format)
        ))
    };
    let column = Column::new(schema, array).map_err(|format| refuse(&format))?;
    if accepted.contains(&column.values()) {
        Ok(column)
    } else {
        Err(refuse(schema.dictionary().map_or_else(|| schema.format(), |values| values.format())))
    }
}

/// One run being built: its queries in order of first appearance.
#[derive(Default)]
struct Building {
    queries: Vec<Query>,
    index: HashMap<String, usize>,
    /// The query of the previous row of this run: consecutive rows usually share it (no lookup).
    last: Option<usize>,
}

impl Building {
    fn query(&mut self, qid: &str) -> usize {
        if let Some(at) = self.last.filter(|&at| self.queries[at].qid == qid) {
            return at;
        }
        let at = *self.index.entry(qid.to_owned()).or_insert_with(|| {
            self.queries.push(Query { qid: qid.to_owned(), hits: Vec::new() });
            self.queries.len() - 1
        });
        self.last = Some(at);
        at
    }
}

/// The columns of one batch, read once per batch.
struct Columns<'a> {
    qid: (&'a str, Column<'a>),
    docid: (&'a str, Column<'a>),
    rank: Option<(&'a str, Column<'a>)>,
    score: Option<(&'a str, Column<'a>)>,
    run: Option<(&'a str, Column<'a>)>,
}

fn columns<'a>(batch: &Batch<'a>, spec: &TableSpec<'a>) -> Result<Columns<'a>, FusionError> {
    let table = spec.name;
    let id_types = [Values::Text, Values::Integer];
    let number_types = [Values::Integer, Values::Float];
    let required = |what: &str, names: &[&'a str]| {
        find_column(batch, table, what, names)?.ok_or_else(|| missing_column(table, what, names, batch))
    };
    let typed = |name: &'a str, accepted: &[Values]| typed_column(batch, table, name, accepted).map(|c| (name, c));
    let qid = typed(required("query id", QID_NAMES)?, &id_types)?;
    let docid = typed(required("document id", DOCID_NAMES)?, &id_types)?;
    let rank = find_column(batch, table, "rank", RANK_NAMES)?.map(|n| typed(n, &number_types)).transpose()?;
    let score = find_column(batch, table, "score", SCORE_NAMES)?.map(|n| typed(n, &number_types)).transpose()?;
    let run = match spec.run_column {
        Some(name) if batch.column(name).is_none() => {
            return Err(missing_column(table, "run label", &[name], batch));
        }
        Some(name) => Some(typed(name, &id_types)?),
        None => None,
    };
    if score.is_none() && spec.rank_from == RankFrom::Score {
        return Err(FusionError::invalid(format!(
            "{table} has no score column ('score'); ranks come from the scores (rank_from='score', as trec_eval \
             reads a run): add the scores, or read ranks from the rank column or the row order (rank_from='rank' or 'file')"
        )));
    }
    if rank.is_none() && spec.rank_from == RankFrom::Rank {
        return Err(missing_column(table, "rank", RANK_NAMES, batch));
    }
    Ok(Columns { qid, docid, rank, score, run })
}

/// One row of a run table, checked: its run (index into `spec.runs`, 0 without a run column), ids,
/// score (NaN without a score column), rank (`None` without a rank column) and row number (from
/// `spec.first_row + 1`, across batches).
pub struct TableRow<'r> {
    pub run: usize,
    pub qid: &'r str,
    pub docid: &'r str,
    pub score: f64,
    pub rank: Option<i64>,
    pub row: u64,
}

/// Refuses names that are not one per table (`fuse_tables` names each table in its errors).
pub fn check_table_names(tables: usize, names: &[String]) -> Result<(), FusionError> {
    if tables != names.len() {
        return Err(FusionError::invalid(format!(
            "{tables} tables and {} names: give one name per table",
            names.len()
        )));
    }
    Ok(())
}

/// Reads the rows of `source` in order, checked as [`runs_from_table`] describes, and hands each to `visit`.
pub fn for_each_row(
    source: TableSource,
    spec: &TableSpec<'_>,
    mut visit: impl FnMut(TableRow<'_>) -> Result<(), FusionError>,
) -> Result<(), FusionError> {
    let table = spec.name;
    if spec.run_column.is_none() && !spec.runs.is_empty() {
        return Err(FusionError::invalid(
            "runs= names the labels of a run column: give run_column= too (a table without one is one run)",
        ));
    }
    if spec.run_column.is_some() && spec.runs.is_empty() {
        return Err(FusionError::invalid(format!(
            "{table}: with a run column, give the run labels in fusion order (runs=[...]): the order decides \
             weights and the summation order of the scores"
        )));
    }
    let labels: HashMap<&str, usize> = spec.runs.iter().enumerate().map(|(i, l)| (l.as_str(), i)).collect();
    if labels.len() != spec.runs.len() {
        return Err(FusionError::invalid(format!("{table}: runs lists a label twice ({:?})", spec.runs)));
    }
    let mut row_number = spec.first_row;
    source.for_each_batch(table, |batch| {
        let columns = columns(batch, spec)?;
        let (mut a, mut b) = (itoa::Buffer::new(), itoa::Buffer::new());
        for row in batch.rows() {
            row_number += 1;
            if row_number % 65_536 == 0 {
                crate::interrupt::checkpoint()?;
            }
            let at_row = |(name, message): (&str, String)| {
                FusionError::input(table, row_number, format!("column '{name}' {message}"))
            };
            let run = match &columns.run {
                Some((name, column)) => {
                    let label = column.text(row, &mut a).map_err(|m| at_row((name, m)))?;
                    *labels.get(label).ok_or_else(|| {
                        at_row((name, format!("holds run label '{label}', which is not in runs={:?}", spec.runs)))
                    })?
                }
                None => 0,
            };
            let (qid_name, qid_column) = &columns.qid;
            let qid = qid_column.text(row, &mut a).map_err(|m| at_row((qid_name, m)))?;
            let (docid_name, docid_column) = &columns.docid;
            let docid = docid_column.text(row, &mut b).map_err(|m| at_row((docid_name, m)))?;
            for (name, id) in [(qid_name, qid), (docid_name, docid)] {
                if id.is_empty() {
                    return Err(at_row((name, "is empty; ids are non-empty strings".into())));
                }
            }
            let score = match &columns.score {
                Some((name, column)) => {
                    let score = column.float(row).map_err(|m| at_row((name, m)))?;
                    if !score.is_finite() {
                        return Err(at_row((name, format!("holds {score}; scores are finite numbers"))));
                    }
                    score
                }
                None => f64::NAN,
            };
            let rank = match &columns.rank {
                Some((name, column)) => Some(column.integer(row).map_err(|m| at_row((name, m)))?),
                None => None,
            };
            visit(TableRow { run, qid, docid, score, rank, row: row_number })?;
        }
        Ok(())
    })
}

/// Reads the runs of `source`: one, or one per label of `spec.runs` (in that order) when
/// `spec.run_column` is given. Queries are in order of first appearance, hits in rank order
/// (`spec.rank_from`); a hit's `line` is its row in the table (from 1, across batches). Without a
/// score column, scores are NaN: the rank methods fuse such a table, the score methods refuse it.
pub fn runs_from_table(source: TableSource, spec: &TableSpec<'_>) -> Result<Vec<Run>, FusionError> {
    let table = spec.name;
    let mut building: Vec<Building> = (0..spec.runs.len().max(1)).map(|_| Building::default()).collect();
    for_each_row(source, spec, |row| {
        let target = &mut building[row.run];
        let query = target.query(row.qid);
        let hits = &mut target.queries[query].hits;
        let rank = row.rank.unwrap_or_else(|| i64::try_from(hits.len()).unwrap_or(i64::MAX) + 1);
        hits.push(Hit { docid: row.docid.into(), score: row.score, rank, line: row.row, extra: None });
        Ok(())
    })?;
    let names: Vec<&str> =
        if spec.runs.is_empty() { vec![table] } else { spec.runs.iter().map(String::as_str).collect() };
    building
        .into_iter()
        .zip(names)
        .map(|(mut run, name)| {
            for query in &mut run.queries {
                order_hits(table, &query.qid, &mut query.hits, spec.rank_from)?;
            }
            Ok(Run { name: name.to_owned(), collection: None, queries: run.queries, source: Some(table.to_owned()) })
        })
        .collect()
}

/// Reads relevance judgments from a table: query id, document id and an integer relevance column
/// (`relevance`, or `score` as in ranx's and BEIR's qrels). Rows are `name:row` in errors.
pub fn qrels_from_table(source: TableSource, name: &str) -> Result<super::qrels::Qrels, FusionError> {
    let mut qrels = super::qrels::Qrels::default();
    let mut row_number = 0_u64;
    source.for_each_batch(name, |batch| {
        let required = |what: &str, names: &[&'static str]| {
            find_column(batch, name, what, names)?.ok_or_else(|| missing_column(name, what, names, batch))
        };
        let id_types = [Values::Text, Values::Integer];
        let (qid_name, docid_name) = (required("query id", QID_NAMES)?, required("document id", DOCID_NAMES)?);
        let relevance_name = required("relevance", RELEVANCE_NAMES)?;
        let qid_column = typed_column(batch, name, qid_name, &id_types)?;
        let docid_column = typed_column(batch, name, docid_name, &id_types)?;
        let relevance = typed_column(batch, name, relevance_name, &[Values::Integer, Values::Float])?;
        let (mut a, mut b) = (itoa::Buffer::new(), itoa::Buffer::new());
        for row in batch.rows() {
            row_number += 1;
            let at_row = |column: &str, message: String| {
                FusionError::input(name, row_number, format!("column '{column}' {message}"))
            };
            let qid = qid_column.text(row, &mut a).map_err(|m| at_row(qid_name, m))?;
            let docid = docid_column.text(row, &mut b).map_err(|m| at_row(docid_name, m))?;
            let rel = relevance.integer(row).map_err(|m| at_row(relevance_name, m))?;
            for (column, id) in [(qid_name, qid), (docid_name, docid)] {
                if id.is_empty() {
                    return Err(at_row(column, "is empty; ids are non-empty strings".into()));
                }
            }
            qrels.judge(qid, docid, rel).map_err(|m| FusionError::input(name, row_number, m))?;
        }
        Ok(())
    })?;
    Ok(qrels)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{runs_from_table, TableSpec};
    use crate::runs::{RankFrom, Run};

    #[test]
    fn run_labels_and_their_column_go_together() {
        let run = Run::from_columns("run", &["q".into()], &["d".into()], &[1.0], RankFrom::Score).unwrap();
        let batch = Arc::new(run.batch());
        let labels = ["a".to_owned()];
        let refused = |run_column, runs| {
            let spec = TableSpec { name: "t", run_column, runs, rank_from: RankFrom::Score, first_row: 0 };
            runs_from_table(batch.source(), &spec).err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert!(refused(None, &labels).starts_with("runs= names the labels of a run column"));
        assert!(refused(Some("qid"), &[]).starts_with("t: with a run column, give the run labels"));
        assert_eq!(refused(None, &[]), "");
        assert_eq!(refused(Some("qid"), &["q".to_owned()]), "");
    }
}
