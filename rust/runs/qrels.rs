//! Relevance judgments: TREC qrels (`qid iter docid rel`) or BEIR TSV (`query-id corpus-id score`,
//! with a header on the first line). Relevance is an integer; graded values are kept for nDCG.

use std::collections::HashMap;

use super::source::LineSource;
use crate::error::FusionError;

/// Judgments per query: docid -> relevance, plus the query ids in file order.
#[derive(Debug, Clone, Default)]
pub struct Qrels {
    pub judged: HashMap<String, HashMap<String, i64>>,
    pub order: Vec<String>,
}

const ACCEPTED: &str = "qrels lines are `qid iter docid rel` (TREC) or `query-id corpus-id score` (BEIR TSV, \
                        header on line 1 only), with an integer relevance";

pub fn read_qrels(path: &str) -> Result<Qrels, FusionError> {
    let mut source = LineSource::open(path)?;
    let mut qrels = Qrels::default();
    let mut data_lines = 0_u64;
    let mut line_no = 0_u64;
    while let Some(line) = source.next_line()? {
        line_no += 1;
        if line_no % 1024 == 0 {
            crate::interrupt::checkpoint()?;
        }
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        let (qid, docid, rel_text) = match fields[..] {
            [qid, _iteration, docid, rel] => (qid, docid, rel),
            [qid, docid, rel] => (qid, docid, rel),
            _ => return Err(FusionError::input(path, line_no, format!("found {} fields; {ACCEPTED}", fields.len()))),
        };
        let Ok(rel) = rel_text.parse::<i64>() else {
            if line_no == 1 && fields.len() == 3 {
                continue; // the BEIR header
            }
            let hint = if data_lines > 0 && fields.len() == 3 { " (a header is only accepted on line 1)" } else { "" };
            return Err(FusionError::input(
                path,
                line_no,
                format!("relevance '{rel_text}' is not an integer{hint}; {ACCEPTED}"),
            ));
        };
        data_lines += 1;
        let docs = qrels.judged.entry(qid.to_owned()).or_insert_with(|| {
            qrels.order.push(qid.to_owned());
            HashMap::new()
        });
        if docs.insert(docid.to_owned(), rel).is_some() {
            return Err(FusionError::input(
                path,
                line_no,
                format!("document '{docid}' is judged twice for query '{qid}'; judge each pair once"),
            ));
        }
    }
    if data_lines == 0 {
        return Err(FusionError::input(path, 0, format!("the file holds no judgments; {ACCEPTED}")));
    }
    Ok(qrels)
}
