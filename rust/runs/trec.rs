//! One line of a TREC run: `qid Q0 docid rank score tag`, separated by any whitespace.

use super::Hit;

const SHAPE: &str = "expected 6 whitespace-separated fields `qid Q0 docid rank score tag`";

/// Parses a run line into its query id and hit. The error is the message only; the caller adds file:line.
pub fn parse_line(line: &str, line_no: u64) -> Result<(&str, Hit), String> {
    let mut fields = line.split_ascii_whitespace();
    let mut next = |seen: usize| fields.next().ok_or_else(|| format!("{SHAPE}, found {seen}"));
    let qid = next(0)?;
    let _q0 = next(1)?;
    let docid = next(2)?;
    let rank_text = next(3)?;
    let score_text = next(4)?;
    let _tag = next(5)?;
    let extra = fields.count();
    if extra > 0 {
        return Err(format!("{SHAPE}, found {}", 6 + extra));
    }
    let rank: i64 =
        rank_text.parse().map_err(|_| format!("rank '{rank_text}' is not an integer (field 4 of `{SHAPE_SHORT}`)"))?;
    let score: f64 = score_text
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite())
        .ok_or_else(|| format!("score '{score_text}' is not a finite number (field 5 of `{SHAPE_SHORT}`)"))?;
    Ok((qid, Hit { docid: docid.into(), score, rank, line: line_no, extra: None }))
}

const SHAPE_SHORT: &str = "qid Q0 docid rank score tag";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tabs_and_spaces() {
        let (qid, hit) = parse_line("q1\tQ0  d7 3 1.5e0 run", 9).unwrap();
        assert_eq!((qid, &*hit.docid, hit.rank, hit.line), ("q1", "d7", 3, 9));
        assert!((hit.score - 1.5).abs() < f64::EPSILON);
    }

    #[test]
    fn names_what_is_wrong() {
        assert!(parse_line("q1 Q0 d7 3", 1).unwrap_err().contains("found 4"));
        assert!(parse_line("q1 Q0 d7 3 1 run x", 1).unwrap_err().contains("found 7"));
        assert!(parse_line("q1 Q0 d7 x 1 run", 1).unwrap_err().contains("rank 'x'"));
        assert!(parse_line("q1 Q0 d7 1 nan run", 1).unwrap_err().contains("score 'nan'"));
    }
}
