//! Relevance judgments: TREC qrels (`qid iter docid rel`) or BEIR TSV (`query-id corpus-id score`,
//! with a header on the first line). Relevance is an integer; graded values are kept for nDCG.
//! Fields split as in run files ([`super::fields`]); `#` lines are comments, as for trec_eval.

use std::collections::HashMap;

use super::fields;
use super::source::LineSource;
use crate::error::FusionError;

/// Judgments per query: docid -> relevance, plus the query ids in file order.
#[derive(Debug, Clone, Default)]
pub struct Qrels {
    pub judged: HashMap<String, HashMap<String, i64>>,
    pub order: Vec<String>,
}

impl Qrels {
    /// Adds one judgment; a pair judged twice is an error (the message; the caller adds where).
    pub fn judge(&mut self, qid: &str, docid: &str, rel: i64) -> Result<(), String> {
        let docs = self.judged.entry(qid.to_owned()).or_insert_with(|| {
            self.order.push(qid.to_owned());
            HashMap::new()
        });
        if docs.insert(docid.to_owned(), rel).is_some() {
            return Err(format!("document '{docid}' is judged twice for query '{qid}'; judge each pair once"));
        }
        Ok(())
    }
}

impl Qrels {
    /// The judgments of the queries in `qids` only, in file order: what a training fold may see.
    #[must_use]
    pub fn subset(&self, qids: &[String]) -> Self {
        let keep: std::collections::HashSet<&str> = qids.iter().map(String::as_str).collect();
        let order: Vec<String> = self.order.iter().filter(|q| keep.contains(q.as_str())).cloned().collect();
        let judged = order.iter().map(|q| (q.clone(), self.judged[q].clone())).collect();
        Self { judged, order }
    }
}

const ACCEPTED: &str = "qrels lines are `qid iter docid rel` (TREC) or `query-id corpus-id score` (BEIR TSV, \
                        a header first), with an integer relevance";

pub fn read_qrels(path: &str) -> Result<Qrels, FusionError> {
    let mut source = LineSource::open(path)?;
    let mut qrels = Qrels::default();
    let mut data_lines = 0_u64;
    let mut beir = false;
    // The fields of the file's first line (the header's or the first judgment's) and its number: every
    // line keeps that shape, so a judgment that lost a field is refused, not read as the other shape.
    let mut shape: Option<(usize, u64)> = None;
    let mut line_no = 0_u64;
    while let Some(line) = source.next_line()? {
        line_no += 1;
        if fields::is_blank(line) {
            continue;
        }
        if fields::is_comment(line) {
            match fields::comment_problem(line) {
                Some(problem) => return Err(FusionError::input(path, line_no, problem)),
                None => continue,
            }
        }
        let fields = fields::split(line).map_err(|m| FusionError::input(path, line_no, m))?;
        if beir {
            reject_split_beir_id(line, fields.len()).map_err(|m| FusionError::input(path, line_no, m))?;
        }
        match shape {
            None => shape = Some((fields.len(), line_no)),
            Some((first, at)) if first != fields.len() && matches!(fields.len(), 3 | 4) => {
                let what = if beir { "the BEIR header" } else { "a judgment" };
                return Err(FusionError::input(
                    path,
                    line_no,
                    format!(
                        "found {} fields where line {at}, {what}, has {first}; a file keeps one shape: {ACCEPTED}",
                        fields.len()
                    ),
                ));
            }
            Some(_) => {}
        }
        let (qid, docid, rel_text) = match fields[..] {
            [qid, _iteration, docid, rel] => (qid, docid, rel),
            [qid, docid, rel] => (qid, docid, rel),
            _ => return Err(FusionError::input(path, line_no, format!("found {} fields; {ACCEPTED}", fields.len()))),
        };
        let Ok(rel) = rel_text.parse::<i64>() else {
            // The BEIR header (comments may come before it) names its columns: a number where its
            // third name goes is a judgment, refused below, never a header dropped unread.
            if data_lines == 0 && !beir && fields.len() == 3 && rel_text.parse::<f64>().is_err() {
                beir = true;
                continue;
            }
            return Err(FusionError::input(path, line_no, bad_relevance(rel_text, fields.len())));
        };
        data_lines += 1;
        qrels.judge(qid, docid, rel).map_err(|m| FusionError::input(path, line_no, m))?;
    }
    if data_lines == 0 {
        return Err(FusionError::input(path, 0, format!("the file holds no judgments; {ACCEPTED}")));
    }
    Ok(qrels)
}

/// Why `text` is no relevance: a number that is no integer, an integer beyond `i64`, or a word
/// (a header goes before the first judgment only).
fn bad_relevance(text: &str, n_fields: usize) -> String {
    let numeric = text.parse::<f64>().is_ok();
    let hint = if n_fields == 3 && !numeric { " (a header is only accepted before the first judgment)" } else { "" };
    format!("relevance '{text}' {}{hint}; {ACCEPTED}", fields::not_an_int(text))
}

/// In a BEIR file (tab-separated, so a space belongs to an id for BEIR's own reader), a line whose
/// tabs make 3 fields must make 3 when split on all whitespace too: else an id holds a space, and
/// the line would read as the 4-field TREC shape with another query or document.
fn reject_split_beir_id(line: &str, fields: usize) -> Result<(), String> {
    let tab_fields = line.split('\t').filter(|f| !fields::is_blank(f)).count();
    if line.contains('\t') && tab_fields == 3 && fields != 3 {
        return Err(format!(
            "the line has 3 tab-separated fields but {fields} separated by whitespace: an id holds a space; \
             {}",
            fields::FIELD_RULE
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, text: &str) -> Result<Qrels, String> {
        let path = std::env::temp_dir().join(format!("fanfuse-qrels-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let qrels = read_qrels(&path.to_string_lossy()).map_err(|e| e.to_string());
        std::fs::remove_file(&path).unwrap();
        qrels
    }

    #[test]
    fn comments_and_every_separator_are_read_as_trec_eval_reads_them() {
        let qrels = read("comments", "# judged\nq1\u{b}0 d1\u{c}1\n  #q2 0 d1 1\nq3\t0\td2\t2\n").unwrap();
        assert_eq!(qrels.order, ["q1", "q3"]);
        assert_eq!(qrels.judged["q3"]["d2"], 2);
    }

    #[test]
    fn a_space_inside_a_beir_id_is_refused() {
        let error = read("beir", "query-id\tcorpus-id\tscore\nq1\td 1\t1\n").unwrap_err();
        assert!(error.contains(":2: the line has 3 tab-separated fields but 4"), "{error}");
        // Without the BEIR header, mixed separators are the TREC shape.
        assert_eq!(read("mixed", "q1\t0 d1\t1\n").unwrap().order, ["q1"]);
    }

    #[test]
    fn a_file_keeps_the_shape_of_its_first_line() {
        // A TREC judgment that lost its relevance is no BEIR header for the TREC lines after it.
        let error = read("lost", "q1 0 a\nq1 0 b 1\n").unwrap_err();
        assert!(error.contains(":2: found 4 fields where line 1, the BEIR header, has 3"), "{error}");
        let error = read("mixed", "q1 0 a 1\nq2 b 1\n").unwrap_err();
        assert!(error.contains(":2: found 3 fields where line 1, a judgment, has 4"), "{error}");
        assert_eq!(read("beir", "query-id corpus-id score\nq1 a 1\nq2 b 0\n").unwrap().order, ["q1", "q2"]);
    }

    #[test]
    fn a_subset_keeps_only_the_named_queries_in_file_order() {
        let qrels = read("subset", "q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 2\n").unwrap();
        let fold = qrels.subset(&["q3".into(), "q1".into(), "q9".into()]);
        assert_eq!(fold.order, ["q1", "q3"]);
        assert_eq!(fold.judged.len(), 2);
        assert_eq!(fold.judged["q3"]["d3"], 2);
    }
}
