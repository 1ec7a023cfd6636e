//! One line of a TREC run: `qid Q0 docid rank score tag`, fields as [`super::fields`] splits them.

use super::fields;
use crate::runs::Hit;

const SHAPE: &str = "expected 6 whitespace-separated fields `qid Q0 docid rank score tag`";

/// Parses a run line, appends its hit to `hits` and returns its query id. The error is the message
/// only; the caller adds file:line.
///
/// The common shape (6 fields, a plain integer rank, a plain decimal score) is parsed by hand, in half
/// the CPU time of `split_ascii_whitespace` + `str::parse` (~20% of `fanfuse fuse` with those);
/// anything else goes through the general parser below, which also words the errors. The hit is
/// built in place in `hits`: returning `(qid, Hit)` by value cost ~10% of `fuse` in stack copies.
pub fn parse_line_into<'l>(line: &'l str, line_no: u64, hits: &mut Vec<Hit>) -> Result<&'l str, String> {
    if let Some([qid, docid, rank, score]) = split_fields(line) {
        if let (Some(rank), Some(score)) = (parse_rank(rank), parse_score(score)) {
            hits.push(Hit { docid: docid.into(), score, rank, line: line_no, extra: None });
            return Ok(qid);
        }
    }
    let (qid, hit) = parse_line_general(line, line_no)?;
    hits.push(hit);
    Ok(qid)
}

#[cfg(test)]
fn parse_line(line: &str, line_no: u64) -> Result<(&str, Hit), String> {
    let mut hits = Vec::new();
    let qid = parse_line_into(line, line_no, &mut hits)?;
    Ok((qid, hits.pop().expect("one hit per line")))
}

/// Fields 1, 3, 4, 5 of a line of exactly 6 printable-ASCII fields, or `None`.
fn split_fields(line: &str) -> Option<[&str; 4]> {
    let (bounds, count) = fields::split_plain::<6>(line)?;
    // Splitting at ASCII bytes keeps every field on UTF-8 boundaries.
    let field = |k: usize| line.get(bounds[k].0..bounds[k].1);
    (count == 6).then_some(())?;
    Some([field(0)?, field(2)?, field(3)?, field(4)?])
}

/// A rank of 1 to 18 decimal digits, optionally negative (cannot overflow i64); else `None`.
fn parse_rank(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        all => (false, all),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut value = 0_i64;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(b - b'0');
    }
    Some(if negative { -value } else { value })
}

/// Powers of ten that f64 holds exactly.
const EXACT_POWERS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];

/// A plain decimal `[-]digits[.digits]` whose digits form an integer below 2^53, with at most 22
/// decimals: then `mantissa / 10^decimals` divides two exact f64s, and IEEE division rounds
/// correctly, so the result is bit-identical to `str::parse::<f64>` (Clinger's fast path).
/// Anything else (exponents, long mantissas, inf/nan) returns `None` for the general parser.
fn parse_score(text: &str) -> Option<f64> {
    let (negative, rest) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        all => (false, all),
    };
    let mut mantissa = 0_u64;
    let mut digits = 0_u32;
    let mut decimals: Option<usize> = None;
    for &b in rest {
        if b.is_ascii_digit() {
            digits += 1;
            if digits > 16 {
                return None;
            }
            mantissa = mantissa * 10 + u64::from(b - b'0');
            if let Some(d) = decimals.as_mut() {
                *d += 1;
            }
        } else if b == b'.' && decimals.is_none() {
            decimals = Some(0);
        } else {
            return None;
        }
    }
    let decimals = decimals.unwrap_or(0);
    if digits == 0 || mantissa >= 1 << 53 || decimals >= EXACT_POWERS.len() {
        return None;
    }
    let value = mantissa as f64 / EXACT_POWERS[decimals];
    Some(if negative { -value } else { value })
}

fn parse_line_general(line: &str, line_no: u64) -> Result<(&str, Hit), String> {
    let fields = fields::split(line)?;
    let [qid, _q0, docid, rank_text, score_text, _tag] = fields[..] else {
        return Err(format!("{SHAPE}, found {}", fields.len()));
    };
    let rank: i64 = rank_text
        .parse()
        .map_err(|_| format!("rank '{rank_text}' {} (field 4 of `{SHAPE_SHORT}`)", fields::not_an_int(rank_text)))?;
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
    fn fast_path_is_bit_identical_to_the_general_parser() {
        for text in [
            "0",
            "-0",
            "-0.0",
            "100.0",
            "99.5",
            "0.1",
            "0.3",
            "1.",
            ".5",
            "123456789012345.6",
            "9007199254740991",
            "9007199254740993",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            "1e5",
            "-17.25",
            "12345678901234567",
            "1.2.3",
            "-",
            ".",
            "",
            "+1",
            "inf",
        ] {
            let general = text.parse::<f64>().ok();
            if let Some(fast) = parse_score(text) {
                assert_eq!(Some(fast.to_bits()), general.map(f64::to_bits), "{text}");
            }
        }
        for text in ["0", "-0", "7", "-12", "999999999999999999", "9999999999999999999", "+3", "1x", "", "-"] {
            if let Some(fast) = parse_rank(text) {
                assert_eq!(Some(fast), text.parse::<i64>().ok(), "{text}");
            }
        }
        // Ranks and scores outside the fast path still parse.
        let (_, hit) = parse_line("q Q0 d +3 1e2 t", 1).unwrap();
        assert_eq!((hit.rank, hit.score.to_bits()), (3, 100.0_f64.to_bits()));
    }

    #[test]
    fn fast_path_matches_the_general_parser_on_many_scores() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let decimals = (state % 12) as usize;
            let text = format!("{:.decimals$}", (state >> 20) as f64 / 1e6 - 5e6);
            let line = format!("q Q0 d 1 {text} t");
            let (_, hit) = parse_line(&line, 1).unwrap();
            assert_eq!(hit.score.to_bits(), text.parse::<f64>().unwrap().to_bits(), "{text}");
        }
    }

    #[test]
    fn vertical_tabs_separate_and_odd_characters_are_refused() {
        let (qid, hit) = parse_line("q1\u{b} Q0\u{c}d1 1 2 t", 1).unwrap();
        assert_eq!((qid, &*hit.docid), ("q1", "d1"));
        let (qid, hit) = parse_line("é Q0 d🙂 1 2 t", 1).unwrap();
        assert_eq!((qid, &*hit.docid), ("é", "d🙂"));
        assert!(parse_line("q1 Q0 d\u{a0}1 1 2 t", 1)
            .unwrap_err()
            .contains("field 3 'd\\u{a0}1' contains whitespace (U+00A0)"));
        assert!(parse_line("q1 Q0 d1 1 2 t\r", 1).unwrap_err().contains("carriage return"));
    }

    #[test]
    fn names_what_is_wrong() {
        assert!(parse_line("q1 Q0 d7 3", 1).unwrap_err().contains("found 4"));
        assert!(parse_line("q1 Q0 d7 3 1 run x", 1).unwrap_err().contains("found 7"));
        assert!(parse_line("q1 Q0 d7 x 1 run", 1).unwrap_err().contains("rank 'x'"));
        assert!(parse_line("q1 Q0 d7 1 nan run", 1).unwrap_err().contains("score 'nan'"));
    }
}
