//! Arrow at the boundary: run tables arrive as Arrow record batches through the C data interface
//! (the PyCapsule protocol's `__arrow_c_stream__` / `__arrow_c_array__` on the Python side) and are
//! read in place, value by value; no Python object per row, no copy of the batch. Batches the core
//! builds (rows read from run files, fused runs) leave the same way ([`export`]), buffers uncopied.
//!
//! Hand-written rather than the `arrow` crates: fanfuse reads a handful of layouts (utf8,
//! large_utf8, string_view, the integer and float types, dictionaries of those) and exports four
//! (utf8, large_utf8, int64, float64), which is a few hundred lines here, whereas `arrow-array` with its `ffi` feature pulls `arrow-buffer`,
//! `arrow-data`, `arrow-schema`, `half`, `num` and `chrono` into every build, and the Python-side
//! Arrow crates also tie the binding to an older release of the Python bindings crate (measured
//! and listed in docs/run-files.md, "Tables and Parquet").

pub mod column;
pub mod export;
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
        match self {
            Self::Batch(schema, array) => {
                check_table(name, &schema.0)?;
                visit(&Batch { schema: &schema.0, array: &array.0 })
            }
            Self::Stream(mut stream) => {
                let schema = stream.schema()?;
                check_table(name, &schema.0)?;
                while let Some(array) = stream.next_batch()? {
                    crate::interrupt::checkpoint()?;
                    visit(&Batch { schema: &schema.0, array: &array.0 })?;
                }
                Ok(())
            }
        }
    }

    /// Every batch, taken over at once, to be read more than once.
    pub fn collect(self, name: &str) -> Result<Batches, FusionError> {
        let (schema, arrays) = match self {
            Self::Batch(schema, array) => (schema, vec![array]),
            Self::Stream(mut stream) => {
                let schema = stream.schema()?;
                let mut arrays = Vec::new();
                while let Some(array) = stream.next_batch()? {
                    arrays.push(array);
                }
                (schema, arrays)
            }
        };
        check_table(name, &schema.0)?;
        Ok(Batches { schema, arrays })
    }
}

/// The batches of a table, held.
pub struct Batches {
    schema: OwnedSchema,
    arrays: Vec<OwnedArray>,
}

impl Batches {
    pub fn iter(&self) -> impl Iterator<Item = Batch<'_>> {
        self.arrays.iter().map(|array| Batch { schema: &self.schema.0, array: &array.0 })
    }
}

/// What a sequence of tables holds, as messages name it.
pub const TABLES: &str = "Arrow tables";

/// An argument `name` that is no table for the PyCapsule protocol (`got`: its type).
#[must_use]
pub fn not_a_table_object(name: &str, got: &str) -> FusionError {
    FusionError::wrong_type(format!(
        "{name} must be an Arrow table: an object with __arrow_c_stream__ or __arrow_c_array__ (a pyarrow \
         Table or RecordBatch, a polars DataFrame, a pandas DataFrame through pyarrow.table(df)) (got {got})"
    ))
}

/// A producer's `method` (`__arrow_c_stream__`, `__arrow_c_array__`) returned a `got`, not a capsule.
#[must_use]
pub fn not_a_capsule(method: &str, got: &str) -> FusionError {
    FusionError::wrong_type(format!("{method} returned {}, not a PyCapsule", crate::args::a_or_an(got)))
}

/// A producer's `__arrow_c_array__` returned something other than its (schema, array) pair.
#[must_use]
pub fn not_a_capsule_pair() -> FusionError {
    FusionError::wrong_type("__arrow_c_array__ must return a pair")
}

fn check_table(name: &str, schema: &ArrowSchema) -> Result<(), FusionError> {
    if schema.format() == "+s" {
        Ok(())
    } else {
        Err(FusionError::invalid(format!("{name} {NOT_A_TABLE} (its Arrow type is '{}')", schema.format())))
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
