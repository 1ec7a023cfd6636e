//! One column of a record batch, read value by value without copying the batch: strings (utf8,
//! large_utf8, string_view), integers, floats, and dictionary-encoded columns of those.

use std::ffi::c_void;

use super::ffi::{ArrowArray, ArrowSchema};

/// The physical layouts fanfuse reads, from the Arrow format string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Utf8,
    LargeUtf8,
    Utf8View,
    /// Bytes per value, and whether signed.
    Int(usize, bool),
    Float32,
    Float64,
}

impl Layout {
    fn of(format: &str) -> Option<Self> {
        Some(match format {
            "u" => Self::Utf8,
            "U" => Self::LargeUtf8,
            "vu" => Self::Utf8View,
            "c" => Self::Int(1, true),
            "C" => Self::Int(1, false),
            "s" => Self::Int(2, true),
            "S" => Self::Int(2, false),
            "i" => Self::Int(4, true),
            "I" => Self::Int(4, false),
            "l" => Self::Int(8, true),
            "L" => Self::Int(8, false),
            "f" => Self::Float32,
            "g" => Self::Float64,
            _ => return None,
        })
    }

    fn is_text(self) -> bool {
        matches!(self, Self::Utf8 | Self::LargeUtf8 | Self::Utf8View)
    }
}

/// What a column holds, as a reader of values sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    Text,
    Integer,
    Float,
}

/// A readable column: the array of one batch with its layout (dictionary-encoded: the index array,
/// whose values index `dictionary`).
pub struct Column<'a> {
    array: &'a ArrowArray,
    layout: Layout,
    dictionary: Option<Box<Column<'a>>>,
}

/// A value that is not there (null) or not readable; the caller adds the column and row.
pub type ValueError = String;

impl<'a> Column<'a> {
    /// Reads the layout of `schema`; `Err` holds its format string (for the message naming the column).
    pub fn new(schema: &ArrowSchema, array: &'a ArrowArray) -> Result<Self, String> {
        let unsupported = || schema.format().to_owned();
        let layout = Layout::of(schema.format()).ok_or_else(unsupported)?;
        let dictionary = match (schema.dictionary(), array.dictionary()) {
            (None, _) => None,
            (Some(values_schema), Some(values)) if matches!(layout, Layout::Int(..)) => {
                let values =
                    Self::new(values_schema, values).map_err(|_| format!("dictionary<{}>", values_schema.format()))?;
                if values.dictionary.is_some() {
                    return Err(unsupported());
                }
                Some(Box::new(values))
            }
            _ => return Err(unsupported()),
        };
        Ok(Self { array, layout, dictionary })
    }

    /// What a value of this column is.
    #[must_use]
    pub fn values(&self) -> Values {
        let layout = self.dictionary.as_ref().map_or(self.layout, |d| d.layout);
        match layout {
            l if l.is_text() => Values::Text,
            Layout::Int(..) => Values::Integer,
            _ => Values::Float,
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.array.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn is_null(&self, row: usize) -> bool {
        if self.array.null_count == 0 {
            return false;
        }
        let validity = self.array.buffer(0).cast::<u8>();
        if validity.is_null() {
            return false;
        }
        let bit = self.array.offset() + row;
        // SAFETY: the validity bitmap holds a bit for every slot of the array (offset included).
        let byte = unsafe { *validity.add(bit / 8) };
        byte & (1 << (bit % 8)) == 0
    }

    /// Slot `row` of the array (its offset added), or the null error.
    fn slot(&self, row: usize) -> Result<usize, ValueError> {
        if self.is_null(row) {
            return Err("is null; every row needs a value".into());
        }
        Ok(self.array.offset() + row)
    }

    /// The dictionary entry `row` refers to, for a dictionary-encoded column.
    fn dictionary_row(&self, dictionary: &Column<'a>, row: usize) -> Result<usize, ValueError> {
        let index = self.integer_at(self.slot(row)?);
        usize::try_from(index).ok().filter(|&i| i < dictionary.len()).ok_or_else(|| {
            format!("has dictionary index {index} outside the dictionary of {} values", dictionary.len())
        })
    }

    /// The integer at slot `slot` (any integer layout), as i128 so that u64 and i64 both fit.
    fn integer_at(&self, slot: usize) -> i128 {
        let data = self.array.buffer(1);
        // SAFETY: the values buffer of an integer array holds `offset + length` values of its width.
        unsafe {
            match self.layout {
                Layout::Int(1, true) => i128::from(*data.cast::<i8>().add(slot)),
                Layout::Int(1, false) => i128::from(*data.cast::<u8>().add(slot)),
                Layout::Int(2, true) => i128::from(data.cast::<i16>().add(slot).read_unaligned()),
                Layout::Int(2, false) => i128::from(data.cast::<u16>().add(slot).read_unaligned()),
                Layout::Int(4, true) => i128::from(data.cast::<i32>().add(slot).read_unaligned()),
                Layout::Int(4, false) => i128::from(data.cast::<u32>().add(slot).read_unaligned()),
                Layout::Int(_, true) => i128::from(data.cast::<i64>().add(slot).read_unaligned()),
                _ => i128::from(data.cast::<u64>().add(slot).read_unaligned()),
            }
        }
    }

    fn float_at(&self, slot: usize) -> f64 {
        let data = self.array.buffer(1);
        // SAFETY: as for integers.
        unsafe {
            match self.layout {
                Layout::Float32 => f64::from(data.cast::<f32>().add(slot).read_unaligned()),
                _ => data.cast::<f64>().add(slot).read_unaligned(),
            }
        }
    }

    /// The bytes of string slot `slot`.
    fn bytes_at(&self, slot: usize) -> Result<&'a [u8], ValueError> {
        let (data, start, len): (*const c_void, usize, usize) = match self.layout {
            Layout::Utf8 | Layout::LargeUtf8 => {
                let offsets = self.array.buffer(1);
                // SAFETY: a (large) utf8 array has `offset + length + 1` offsets.
                let (from, to) = unsafe {
                    if self.layout == Layout::Utf8 {
                        let o = offsets.cast::<i32>().add(slot);
                        (i64::from(o.read_unaligned()), i64::from(o.add(1).read_unaligned()))
                    } else {
                        let o = offsets.cast::<i64>().add(slot);
                        (o.read_unaligned(), o.add(1).read_unaligned())
                    }
                };
                let (Ok(from), Ok(to)) = (usize::try_from(from), usize::try_from(to)) else {
                    return Err("has a negative string offset".into());
                };
                (self.array.buffer(2), from, to.saturating_sub(from))
            }
            _ => {
                // string_view: 16 bytes per value; up to 12 bytes inline, else (prefix, buffer, offset).
                // SAFETY: the views buffer holds `offset + length` views of 16 bytes.
                let view = unsafe { std::slice::from_raw_parts(self.array.buffer(1).cast::<u8>().add(slot * 16), 16) };
                let field = |at: usize| i32::from_le_bytes([view[at], view[at + 1], view[at + 2], view[at + 3]]);
                let len = usize::try_from(field(0)).map_err(|_| "has a negative string length")?;
                if len <= 12 {
                    return Ok(&view[4..4 + len]);
                }
                let buffer = usize::try_from(field(8)).map_err(|_| "has a negative view buffer index")?;
                // Buffers: validity, views, the data buffers, then the variadic sizes.
                let data_buffers = usize::try_from(self.array.n_buffers).unwrap_or(0).saturating_sub(3);
                if buffer >= data_buffers {
                    return Err(format!("refers to view buffer {buffer} of {data_buffers}"));
                }
                let offset = usize::try_from(field(12)).map_err(|_| "has a negative view offset")?;
                (self.array.buffer(2 + buffer), offset, len)
            }
        };
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: offsets and views of a valid array point into its data buffers.
        Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>().add(start), len) })
    }

    /// The text of row `row`; integers are written in decimal into `digits` (as a TREC file spells them).
    pub fn text<'s>(&'s self, row: usize, digits: &'s mut itoa::Buffer) -> Result<&'s str, ValueError> {
        if let Some(dictionary) = &self.dictionary {
            let at = self.dictionary_row(dictionary, row)?;
            return dictionary.text(at, digits);
        }
        let slot = self.slot(row)?;
        match self.layout {
            Layout::Int(..) => Ok(digits.format(self.integer_at(slot))),
            layout if layout.is_text() => std::str::from_utf8(self.bytes_at(slot)?)
                .map_err(|e| format!("is not valid UTF-8 (byte {})", e.valid_up_to() + 1)),
            _ => Err("is not text".into()),
        }
    }

    /// The integer of row `row` (a float only where it holds an integer).
    pub fn integer(&self, row: usize) -> Result<i64, ValueError> {
        if let Some(dictionary) = &self.dictionary {
            return dictionary.integer(self.dictionary_row(dictionary, row)?);
        }
        let slot = self.slot(row)?;
        match self.layout {
            Layout::Int(..) => {
                let value = self.integer_at(slot);
                i64::try_from(value).map_err(|_| format!("{value} does not fit a signed 64-bit integer"))
            }
            Layout::Float32 | Layout::Float64 => {
                let value = self.float_at(slot);
                // The range check is on the float: casting first would saturate silently.
                let integral = value.fract() == 0.0 && (-9.2e18..9.2e18).contains(&value);
                integral.then_some(value as i64).ok_or_else(|| format!("{value} is not an integer"))
            }
            _ => Err("is not a number".into()),
        }
    }

    /// The number of row `row`, as f64 (integers are rounded to the nearest double, as parsing their
    /// decimal text would).
    pub fn float(&self, row: usize) -> Result<f64, ValueError> {
        if let Some(dictionary) = &self.dictionary {
            return dictionary.float(self.dictionary_row(dictionary, row)?);
        }
        let slot = self.slot(row)?;
        match self.layout {
            Layout::Int(..) => Ok(self.integer_at(slot) as f64),
            Layout::Float32 | Layout::Float64 => Ok(self.float_at(slot)),
            _ => Err("is not a number".into()),
        }
    }
}
