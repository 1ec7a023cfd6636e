//! What the arguments of the entry points accept, and the messages refusing anything else: ordered
//! sequences, numbers, ints in a range, strs, flags, 1-D arrays. A binding tests a value's type and
//! reads it; the range an int must be in and every refusal's text are here, so each reads the same
//! from every entry point. A refused kind of value is [`FusionError::WrongType`] (Python's
//! `TypeError`), a refused value of the right kind [`FusionError::InvalidArgument`], or for a number
//! setting of a call (threads, a test's iterations) [`FusionError::OutOfRange`].

use std::fmt::Display;
use std::ops::RangeInclusive;

use crate::error::FusionError;

/// `type_name` with its indefinite article, as a message names a value's type: "an int", "a str".
#[must_use]
pub fn a_or_an(type_name: &str) -> String {
    // NumPy's `ndarray` is read letter by letter ("en-dee-array").
    let vowel_sound = type_name.starts_with(|c: char| "aeiouAEIOU".contains(c)) || type_name.starts_with("nd");
    let article = if vowel_sound { "an" } else { "a" };
    format!("{article} {type_name}")
}

/// `name` (a str, bytes, or an object that cannot be iterated) is no sequence of `what`.
#[must_use]
pub fn not_a_sequence(name: impl Display, what: &str, type_name: &str) -> FusionError {
    FusionError::wrong_type(format!("{name} must be a sequence of {what} (got {type_name})"))
}

/// `name` is a set or a dict: it has no order, and weights and the rank tie-break follow list order.
#[must_use]
pub fn unordered(name: impl Display, what: &str, type_name: &str) -> FusionError {
    FusionError::wrong_type(format!("{name} has no order (got {type_name}); pass a list or tuple of {what}"))
}

/// An array argument of `shape`: accepted only 1-D.
pub fn check_1d(path: impl Display, shape: &[usize]) -> Result<(), FusionError> {
    if shape.len() == 1 {
        return Ok(());
    }
    let sizes: Vec<String> = shape.iter().map(ToString::to_string).collect();
    Err(FusionError::invalid(format!(
        "{path} is a {}-D array of shape ({}); it must be 1-D",
        shape.len(),
        sizes.join(", ")
    )))
}

/// `name` is neither an int nor a float (a str and a bool are not numbers either).
#[must_use]
pub fn not_a_number(name: impl Display, type_name: &str) -> FusionError {
    FusionError::wrong_type(format!("{name} must be a number (got {type_name})"))
}

/// `name` is no str.
#[must_use]
pub fn not_a_str(name: impl Display, type_name: &str) -> FusionError {
    FusionError::wrong_type(format!("{name} must be a str (got {type_name})"))
}

/// `name` is not an instance of `class` (`fanfuse.Run`).
#[must_use]
pub fn not_an_instance(name: impl Display, class: &str, type_name: &str) -> FusionError {
    FusionError::wrong_type(format!("{name} must be a {class} (got {type_name})"))
}

/// `name` is no path: neither a str nor an `os.PathLike` naming a str path.
#[must_use]
pub fn not_a_path(name: impl Display, type_name: &str) -> FusionError {
    FusionError::wrong_type(format!("{name} must be a path (str or os.PathLike), not {type_name}"))
}

/// `name` is no bool.
#[must_use]
pub fn not_a_bool(name: impl Display, type_name: &str) -> FusionError {
    FusionError::wrong_type(format!("{name} must be a bool (got {type_name})"))
}

/// The str `name` holds a lone surrogate, which UTF-8 cannot encode.
#[must_use]
pub fn not_utf8(name: impl Display) -> FusionError {
    FusionError::invalid(format!("{name} is not valid Unicode (a lone surrogate); it must encode as UTF-8"))
}

/// `name` is no int (a float or a bool is not one), where `accepted` says what is.
#[must_use]
pub fn not_an_int(name: &str, accepted: &str, type_name: &str) -> FusionError {
    FusionError::wrong_type(format!("{name} must be {accepted} (got {type_name})"))
}

/// The int `shown` is outside what `name` accepts.
#[must_use]
pub fn int_out_of_range(name: &str, accepted: &str, shown: impl Display) -> FusionError {
    FusionError::invalid(format!("{name} must be {accepted} (got {shown})"))
}

/// An int argument as read: its value, or the text of one beyond `i128` (outside every range).
pub type ReadInt = Result<i128, String>;

/// The int `value` given as `name`, if within `range` and of type `T`; `accepted` says in words what is.
pub fn int_in<T: TryFrom<i128>>(
    value: ReadInt,
    name: &str,
    accepted: &str,
    range: RangeInclusive<i128>,
) -> Result<T, FusionError> {
    let value = value.map_err(|shown| int_out_of_range(name, accepted, shown))?;
    T::try_from(value).ok().filter(|_| range.contains(&value)).ok_or_else(|| int_out_of_range(name, accepted, value))
}

/// [`int_in`] for a number setting of a call, neither fusion input nor a fusion option.
pub fn setting_int_in<T: TryFrom<i128>>(
    value: ReadInt,
    name: &str,
    accepted: &str,
    range: RangeInclusive<i128>,
) -> Result<T, FusionError> {
    int_in(value, name, accepted, range).map_err(FusionError::of_number_setting)
}

/// An int bound as [`int_in`] takes it (every bound a Rust int type has fits, but `u128`'s top).
#[must_use]
pub fn widen<T: TryInto<i128>>(bound: T) -> i128 {
    bound.try_into().unwrap_or(i128::MAX)
}

/// What a count (`top_k`) accepts.
pub const COUNT_ACCEPTED: &str = "None or an int >= 0";

/// A count given as `name`: an int >= 0. One beyond any list (more than `usize` holds) keeps every hit.
pub fn count(value: ReadInt, name: &str) -> Result<usize, FusionError> {
    let count: i128 = int_in(value, name, COUNT_ACCEPTED, 0..=i128::MAX)?;
    Ok(usize::try_from(count).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_int_is_accepted_within_its_range_and_its_type() {
        assert_eq!(int_in::<u8>(Ok(7), "n", "an int from 1 to 9", 1..=9), Ok(7));
        let refused = int_in::<u8>(Ok(0), "n", "an int from 1 to 9", 1..=9).unwrap_err();
        assert_eq!(refused, FusionError::invalid("n must be an int from 1 to 9 (got 0)"));
        // Within the range but not of the type: refused the same way.
        assert!(int_in::<u8>(Ok(256), "n", "an int >= 0", 0..=i128::MAX).is_err());
        let huge = int_in::<u64>(Err("1".repeat(40)), "n", "an int >= 0", 0..=i128::MAX).unwrap_err();
        assert_eq!(huge, FusionError::invalid(format!("n must be an int >= 0 (got {})", "1".repeat(40))));
        // A setting's number is refused as out of range, with the same words.
        let setting = setting_int_in::<u8>(Ok(0), "n", "an int from 1 to 9", 1..=9).unwrap_err();
        assert_eq!(setting, FusionError::out_of_range("n must be an int from 1 to 9 (got 0)"));
        assert_eq!(widen(u128::MAX), i128::MAX);
        assert_eq!(widen(u64::MAX), i128::from(u64::MAX));
    }

    #[test]
    fn a_type_is_named_with_its_article() {
        assert_eq!(a_or_an("int"), "an int");
        assert_eq!(a_or_an("object"), "an object");
        assert_eq!(a_or_an("str"), "a str");
        assert_eq!(a_or_an("ndarray"), "an ndarray");
    }

    #[test]
    fn a_count_saturates_beyond_what_a_list_can_hold() {
        assert_eq!(count(Ok(3), "top_k"), Ok(3));
        assert_eq!(count(Ok(i128::MAX), "top_k"), Ok(usize::MAX));
        assert_eq!(count(Ok(-1), "top_k").unwrap_err().to_string(), "top_k must be None or an int >= 0 (got -1)");
    }

    #[test]
    fn only_a_1d_array_is_accepted() {
        assert_eq!(check_1d("x", &[3]), Ok(()));
        let refused = check_1d("lists[0]", &[2, 3]).unwrap_err().to_string();
        assert_eq!(refused, "lists[0] is a 2-D array of shape (2, 3); it must be 1-D");
    }

    #[test]
    fn a_wrong_kind_of_value_is_a_type_error() {
        for error in [not_a_sequence("x", "numbers", "str"), unordered("x", "str", "set"), not_a_number("k", "str")] {
            assert!(matches!(error, FusionError::WrongType(_)), "{error}");
        }
        assert!(matches!(not_utf8("s[0]"), FusionError::InvalidArgument(_)));
    }
}
