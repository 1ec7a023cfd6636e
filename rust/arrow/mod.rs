//! Arrow at the boundary: run tables arrive as Arrow record batches through the C data interface
//! (the PyCapsule protocol's `__arrow_c_stream__` / `__arrow_c_array__` on the Python side) and are
//! read in place, value by value; no Python object per row, no copy of the batch.
//!
//! Hand-written rather than the `arrow` crates: fanfuse reads a handful of layouts (utf8,
//! large_utf8, string_view, the integer and float types, dictionaries of those) and exports none,
//! which is ~400 lines here, whereas `arrow-array` with its `ffi` feature pulls `arrow-buffer`,
//! `arrow-data`, `arrow-schema`, `half`, `num` and `chrono` into every build (measured in
//! docs/run-files.md), and `pyo3-arrow` also ties the binding to its pyo3 release.

pub mod column;
pub mod ffi;

use ffi::{ArrowArray, ArrowSchema, OwnedArray, OwnedSchema, OwnedStream};

use crate::error::FusionError;

/// A table handed over by its producer: a stream of record batches, or one batch.
pub enum TableSource {
    Stream(OwnedStream),
    Batch(OwnedSchema, OwnedArray),
}

/// One record batch: its columns by name, the rows `offset .. offset + len` of each child.
pub struct Batch<'a> {
    pub schema: &'a ArrowSchema,
    pub array: &'a ArrowArray,
}

impl<'a> Batch<'a> {
    /// The rows of this batch, as indexes into its columns (a sliced batch starts past 0).
    #[must_use]
    pub fn rows(&self) -> std::ops::Range<usize> {
        self.array.offset()..self.array.offset() + self.array.len()
    }

    /// The names of the columns, in order.
    #[must_use]
    pub fn names(&self) -> Vec<&'a str> {
        self.schema.children().iter().map(|c| c.name()).collect()
    }

    /// The column named `name` with its schema, if there is one.
    #[must_use]
    pub fn column(&self, name: &str) -> Option<(&'a ArrowSchema, &'a ArrowArray)> {
        let schemas = self.schema.children();
        let at = schemas.iter().position(|s| s.name() == name)?;
        self.array.children().get(at).map(|array| (schemas[at], *array))
    }
}

/// What a table must be: record batches, i.e. a struct of columns.
const NOT_A_TABLE: &str = "is not a table: expected record batches (a struct of columns such as a pyarrow Table, \
                           a RecordBatch, a polars or pandas DataFrame)";

impl TableSource {
    /// Calls `visit` with every batch in order; `name` is the table's name in errors.
    pub fn for_each_batch(
        self,
        name: &str,
        mut visit: impl FnMut(&Batch<'_>) -> Result<(), FusionError>,
    ) -> Result<(), FusionError> {
        let check = |schema: &ArrowSchema| {
            if schema.format() == "+s" {
                Ok(())
            } else {
                Err(FusionError::invalid(format!("{name} {NOT_A_TABLE} (its Arrow type is '{}')", schema.format())))
            }
        };
        match self {
            Self::Batch(schema, array) => {
                check(&schema.0)?;
                visit(&Batch { schema: &schema.0, array: &array.0 })
            }
            Self::Stream(mut stream) => {
                let schema = stream.schema()?;
                check(&schema.0)?;
                while let Some(array) = stream.next_batch()? {
                    crate::interrupt::checkpoint()?;
                    visit(&Batch { schema: &schema.0, array: &array.0 })?;
                }
                Ok(())
            }
        }
    }
}

/// A readable name for an Arrow format string, for messages.
#[must_use]
pub fn type_name(format: &str) -> String {
    let known = match format {
        "u" => "utf8",
        "U" => "large_utf8",
        "vu" => "string_view",
        "z" => "binary",
        "Z" => "large_binary",
        "b" => "bool",
        "c" => "int8",
        "C" => "uint8",
        "s" => "int16",
        "S" => "uint16",
        "i" => "int32",
        "I" => "uint32",
        "l" => "int64",
        "L" => "uint64",
        "e" => "float16",
        "f" => "float32",
        "g" => "float64",
        "n" => "null",
        _ if format.starts_with("ts") => "timestamp",
        _ if format.starts_with('d') => "decimal",
        _ if format.starts_with('+') => "nested",
        _ => "",
    };
    if known.is_empty() {
        format!("'{format}'")
    } else {
        format!("{known} ('{format}')")
    }
}
