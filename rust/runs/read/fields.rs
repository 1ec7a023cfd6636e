//! What a field of a TREC run or qrels line is: the one rule shared by the readers and the writer,
//! chosen so that trec_eval and Python readers (pytrec_eval, ranx: `line.split()`) read every
//! accepted line into the same fields.
//!
//! Fields are separated by runs of space, tab, vertical tab and form feed: C's `isspace`, which
//! trec_eval splits on, less the line ends, and all of them whitespace to Python too. A field holds
//! no character the two would read differently: other Unicode whitespace (Python splits there,
//! trec_eval does not), control characters (NUL ends trec_eval's reading; a carriage return is a
//! space to trec_eval and a line end to Python), nor a byte-order mark past the start of the file.

/// Accepted fields, for error messages.
pub const FIELD_RULE: &str =
    "fields are separated by spaces or tabs and hold no other whitespace or control characters";

/// The longest field (and MT-RAG id) the readers accept, 64 KiB: ids are held for every hit of a
/// run, and a longer "id" is a file read with the wrong reader, not an id.
pub const MAX_FIELD_BYTES: usize = 64 << 10;

/// Why an id of `len` bytes is too long, or `None`.
#[must_use]
pub fn length_problem(len: usize) -> Option<String> {
    (len > MAX_FIELD_BYTES)
        .then(|| format!("is {len} bytes long, over the {} KiB a field may hold", MAX_FIELD_BYTES >> 10))
}

/// A field separator: space, tab, vertical tab, form feed.
#[must_use]
pub fn is_separator(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | 0x0b | 0x0c)
}

/// Printable ASCII (`!` to `~`): a byte that is part of a field as it stands.
fn is_printable(b: u8) -> bool {
    b.wrapping_sub(0x21) < 0x7f - 0x21
}

/// Whether every byte is printable ASCII: then `text` is a field as it stands (if not empty).
/// Eight bytes at a time, as the writer checks every docid (a byte loop was ~2% of `fanfuse fuse`).
#[must_use]
pub fn is_plain(text: &str) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = text.as_bytes().chunks_exact(8);
    for chunk in &mut chunks {
        let x = u64::from_le_bytes(std::array::from_fn(|k| chunk[k]));
        // The high bit of a byte below 0x21 survives in `below` (exactly, for some byte: a borrow
        // only follows one); a byte of 0x7f or more sets it in `above` (a carry only adds false alarms).
        let below = x.wrapping_sub(ONES * 0x21) & !x & HIGH;
        let above = (x.wrapping_add(ONES) | x) & HIGH;
        if below | above != 0 {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| is_printable(b))
}

/// Bounds of the fields of a line, for the parsers' fast path: `Some` only when every field is
/// printable ASCII and there are at most `N` (the count is returned); `None` sends the line to the
/// general, checking split ([`split`]).
#[must_use]
pub fn split_plain<const N: usize>(line: &str) -> Option<([(usize, usize); N], usize)> {
    let bytes = line.as_bytes();
    let mut bounds = [(0_usize, 0_usize); N];
    let mut count = 0;
    let mut i = 0;
    loop {
        while i < bytes.len() && is_separator(bytes[i]) {
            i += 1;
        }
        if i == bytes.len() {
            return Some((bounds, count));
        }
        let from = i;
        while i < bytes.len() && is_printable(bytes[i]) {
            i += 1;
        }
        if i < bytes.len() && !is_separator(bytes[i]) || count == N || i - from > MAX_FIELD_BYTES {
            return None;
        }
        bounds[count] = (from, i);
        count += 1;
    }
}

/// The fields of a line, or why one of them would be read differently by another reader.
pub fn split(line: &str) -> Result<Vec<&str>, String> {
    let fields: Vec<&str> =
        line.split(|c: char| c.is_ascii() && is_separator(c as u8)).filter(|f| !f.is_empty()).collect();
    for (k, field) in fields.iter().enumerate() {
        if let Some(problem) = problem(field) {
            return Err(format!("field {} {} {problem}; {FIELD_RULE}", k + 1, shown(field)));
        }
    }
    Ok(fields)
}

/// Why a field that must be an `i64` is none: written as an integer but beyond the type, or no
/// integer at all (`2.5`, `x`).
#[must_use]
pub fn not_an_int(text: &str) -> String {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        format!("is out of range (from {} to {})", i64::MIN, i64::MAX)
    } else {
        "is not an integer".to_owned()
    }
}

/// Whether a line holds nothing but separators.
#[must_use]
pub fn is_blank(line: &str) -> bool {
    first_content(line).is_none()
}

/// Whether a line is a comment: its first character after any separators is `#` (trec_eval skips
/// such lines in runs and qrels).
#[must_use]
pub fn is_comment(line: &str) -> bool {
    first_content(line) == Some(b'#')
}

/// Why a comment line cannot be skipped as one, or `None`: trec_eval stops reading at a NUL, and
/// Python readers end the line at a carriage return, reading what follows as a record.
#[must_use]
pub fn comment_problem(line: &str) -> Option<String> {
    let c = line.chars().find(|&c| matches!(c, '\0' | '\r'))?;
    describe(c).map(|problem| format!("the comment {problem}"))
}

fn first_content(line: &str) -> Option<u8> {
    line.bytes().find(|&b| !is_separator(b))
}

/// Why `text` cannot be one field of a TREC line (`"contains whitespace (U+0020), ..."`), or `None`.
#[must_use]
pub fn problem(text: &str) -> Option<String> {
    if text.is_empty() {
        return Some("is empty".into());
    }
    if let Some(problem) = length_problem(text.len()) {
        return Some(problem);
    }
    if is_plain(text) {
        return None;
    }
    text.chars().find_map(describe)
}

/// What is wrong with `c` inside a field, or `None` if nothing is.
fn describe(c: char) -> Option<String> {
    let (what, why) = match c {
        ' ' | '\t' | '\u{b}' | '\u{c}' => ("whitespace", ", which separates fields"),
        '\n' => ("a line end", ""),
        '\r' => ("a carriage return", ": a space to trec_eval, a line end to Python; lines end in \\n or \\r\\n"),
        '\0' => ("NUL", ", where trec_eval stops reading (a UTF-16 file?)"),
        '\u{1c}'..='\u{1f}' => ("a control character", " that Python's split() splits on and trec_eval does not"),
        '\u{feff}' => {
            ("a byte-order mark", ", allowed only at the start of a file (a marked file appended to another?)")
        }
        c if c.is_whitespace() => ("whitespace", " that Python's split() splits on and trec_eval does not"),
        c if c.is_control() => ("a control character", ""),
        _ => return None,
    };
    Some(format!("contains {what} (U+{:04X}){why}", u32::from(c)))
}

/// A value quoted for a message, with invisible characters escaped (`'a\u{a0}b'`); a long one is
/// cut after 60 characters (`'xxx…' (70000 bytes)`), so a message stays one readable line.
#[must_use]
pub fn shown(text: &str) -> String {
    const SHOWN: usize = 60;
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("'{}…' ({} bytes)", text[..cut].escape_debug(), text.len()),
        None => format!("'{}'", text.escape_debug()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_where_c_isspace_and_python_split_agree() {
        assert_eq!(split("q1\u{b}Q0\u{c}d1\t 1  2.0 t").unwrap(), ["q1", "Q0", "d1", "1", "2.0", "t"]);
        assert_eq!(split("  é  ").unwrap(), ["é"]);
        let (bounds, count) = split_plain::<6>("a\u{b}bc d").unwrap();
        assert_eq!((count, &bounds[..count]), (3, &[(0, 1), (2, 4), (5, 6)][..]));
        assert!(split_plain::<2>("a b c").is_none());
        assert!(split_plain::<6>("a é").is_none());
        assert!(split_plain::<6>("a\rb").is_none());
    }

    #[test]
    fn refuses_what_other_readers_read_differently() {
        for (text, code) in [
            ("q\u{a0}x", "U+00A0"),
            ("q\u{85}", "U+0085"),
            ("q\u{1c}", "U+001C"),
            ("q\0", "U+0000"),
            ("q\r", "U+000D"),
            ("\u{feff}q", "U+FEFF"),
            ("q\u{7f}", "U+007F"),
            ("a b", "U+0020"),
        ] {
            assert!(problem(text).unwrap().contains(code), "{text:?}");
        }
        assert_eq!(problem("").unwrap(), "is empty");
        let long = "d".repeat(MAX_FIELD_BYTES + 1);
        assert!(problem(&long).unwrap().starts_with("is 65537 bytes long, over the 64 KiB"));
        assert_eq!(problem(&long[1..]), None);
        assert!(split_plain::<6>(&format!("q Q0 {long} 1 1 t")).is_none());
        let error = split(&format!("q Q0 {long} 1 1 t")).unwrap_err();
        assert!(error.starts_with(&format!("field 3 '{}…' (65537 bytes) is 65537 bytes long", &long[..60])), "{error}");
        for fine in ["q1", "é", "🙂", "a\u{200b}b", "<::>"] {
            assert_eq!(problem(fine), None, "{fine:?}");
        }
        assert!(split("q1 d\u{2003}x").unwrap_err().starts_with("field 2 'd\\u{2003}x' contains whitespace (U+2003)"));
    }

    #[test]
    fn plain_is_printable_ascii() {
        assert!(is_plain("azAZ09!~#") && is_plain("") && is_plain(&"!~".repeat(20)));
        for odd in ["a b", "a\u{7f}", "é", "\t"] {
            assert!(!is_plain(odd), "{odd:?}");
        }
        // Every byte value at every position of a 17-byte text (two chunks of 8 and a tail).
        for at in 0..17 {
            for b in 0..=255_u8 {
                let mut bytes = vec![b'x'; 17];
                bytes[at] = b;
                let text = String::from_utf8_lossy(&bytes);
                assert_eq!(is_plain(&text), text.bytes().all(is_printable), "{b:#x} at {at}");
            }
        }
    }

    #[test]
    fn blank_and_comment_lines() {
        assert!(is_blank(" \t\u{b}\u{c}") && is_blank(""));
        assert!(!is_blank("\u{a0}"));
        assert!(is_comment("  # note") && is_comment("#q1 Q0 d 1 1 t"));
        assert!(!is_comment("q#1 Q0 d 1 1 t"));
        assert_eq!(comment_problem("# é\u{a0}"), None);
        assert!(comment_problem("# a\rq9 Q0 d 1 1 t").unwrap().starts_with("the comment contains a carriage return"));
        assert!(comment_problem("# a\0").unwrap().contains("NUL"));
    }
}
