//! Options chosen by name (`method="rrf"`, `tie_break="id"`). Each option's type has one table of
//! `(name, value)` pairs, `BY_NAME`: it parses the names, lists them in error messages, and its
//! names (`NAMES`) are what the Python module exports (`fanfuse.METHODS`, `fanfuse.NORMS`, ...), so
//! the parser, the messages and the published lists cannot disagree.

use crate::error::FusionError;

/// The value named `name` in `table`.
pub fn find<V: Copy>(table: &[(&str, V)], name: &str) -> Option<V> {
    table.iter().find(|(n, _)| *n == name).map(|&(_, value)| value)
}

/// The first name of `value` in `table`.
pub fn name_of<V: Copy + PartialEq>(table: &[(&'static str, V)], value: V) -> &'static str {
    table.iter().find(|(_, v)| *v == value).map_or("?", |&(name, _)| name)
}

/// The value named `name` in `table`, or an error naming `option` and every accepted name:
/// `tie_break must be 'rank' or 'id' (got 'score')`.
pub fn parse<V: Copy>(table: &[(&str, V)], option: &str, name: &str) -> Result<V, FusionError> {
    find(table, name).ok_or_else(|| {
        let quoted: Vec<String> = table.iter().map(|(n, _)| format!("'{n}'")).collect();
        let accepted = match quoted.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => quoted.concat(),
        };
        FusionError::invalid(format!("{option} must be {accepted} (got '{name}')"))
    })
}

/// The names of `table`, in order, as a constant: `const NAMES: [&str; BY_NAME.len()] = names(BY_NAME)`.
///
/// # Panics
/// When `N` is not the table's length: a compile error where the result is a constant.
#[must_use]
pub const fn names<V, const N: usize>(table: &[(&'static str, V)]) -> [&'static str; N] {
    assert!(table.len() == N, "N must be the length of the table");
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = table[i].0;
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[(&str, u8)] = &[("one", 1), ("two", 2), ("three", 3)];

    #[test]
    fn parses_and_lists_every_name() {
        assert_eq!(names::<_, 3>(TABLE), ["one", "two", "three"]);
        assert_eq!(parse(TABLE, "n", "two").unwrap(), 2);
        let message = parse(TABLE, "n", "four").unwrap_err().to_string();
        assert_eq!(message, "n must be 'one', 'two' or 'three' (got 'four')");
        assert_eq!(parse(&TABLE[..2], "n", "x").unwrap_err().to_string(), "n must be 'one' or 'two' (got 'x')");
    }
}
