//! Arrow out: a record batch the core built, handed to a consumer (pyarrow, polars, a Spark or Ray
//! worker) through the C data interface without copying its buffers. The consumer owns the exported
//! structs and calls their `release`; the buffers live until the last exported array that uses them
//! is released (they are shared, so one batch can be exported any number of times).

use std::ffi::{c_void, CString};
use std::sync::Arc;

use super::ffi::{ArrowArray, ArrowSchema};

/// A column being built: strings (offsets into one data buffer), 64-bit integers or floats.
pub enum ExportColumn {
    Text(TextColumn),
    Int64(Vec<i64>),
    Float64(Vec<f64>),
}

/// A string column: `offsets[i]..offsets[i + 1]` of `data` is value i. The offsets are 32-bit
/// (utf8) until the data outgrows them, then 64-bit (large_utf8): built in their final width, so
/// that exporting copies nothing.
pub struct TextColumn {
    offsets: Offsets,
    data: Vec<u8>,
}

enum Offsets {
    Small(Vec<i32>),
    Large(Vec<i64>),
}

impl Default for TextColumn {
    fn default() -> Self {
        Self { offsets: Offsets::Small(vec![0]), data: Vec::new() }
    }
}

impl TextColumn {
    /// Room for `values` more values of `bytes` bytes in all.
    pub fn reserve(&mut self, values: usize, bytes: usize) {
        match &mut self.offsets {
            Offsets::Small(offsets) => offsets.reserve(values),
            Offsets::Large(offsets) => offsets.reserve(values),
        }
        self.data.reserve(bytes);
    }

    pub fn push(&mut self, value: &str) {
        self.data.extend_from_slice(value.as_bytes());
        let end = self.data.len();
        match &mut self.offsets {
            Offsets::Small(offsets) => {
                if let Ok(end) = i32::try_from(end) {
                    offsets.push(end);
                } else {
                    let mut large: Vec<i64> = offsets.iter().map(|&o| i64::from(o)).collect();
                    large.push(length(end));
                    self.offsets = Offsets::Large(large);
                }
            }
            Offsets::Large(offsets) => offsets.push(length(end)),
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        match &self.offsets {
            Offsets::Small(offsets) => offsets.len() - 1,
            Offsets::Large(offsets) => offsets.len() - 1,
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The buffers of one exported column, frozen: utf8 (32-bit offsets) or large_utf8.
enum Frozen {
    Utf8(Vec<i32>, Vec<u8>),
    LargeUtf8(Vec<i64>, Vec<u8>),
    Int64(Vec<i64>),
    Float64(Vec<f64>),
}

impl Frozen {
    fn of(column: ExportColumn) -> Self {
        match column {
            ExportColumn::Text(TextColumn { offsets: Offsets::Small(offsets), data }) => Self::Utf8(offsets, data),
            ExportColumn::Text(TextColumn { offsets: Offsets::Large(offsets), data }) => Self::LargeUtf8(offsets, data),
            ExportColumn::Int64(values) => Self::Int64(values),
            ExportColumn::Float64(values) => Self::Float64(values),
        }
    }

    fn format(&self) -> &'static str {
        match self {
            Self::Utf8(..) => "u",
            Self::LargeUtf8(..) => "U",
            Self::Int64(_) => "l",
            Self::Float64(_) => "g",
        }
    }

    /// The buffers as the interface lists them: no validity bitmap (no nulls), then the values (or
    /// offsets and data).
    fn buffers(&self) -> Vec<*const c_void> {
        let validity = std::ptr::null();
        match self {
            Self::Utf8(offsets, data) => vec![validity, offsets.as_ptr().cast(), data.as_ptr().cast()],
            Self::LargeUtf8(offsets, data) => vec![validity, offsets.as_ptr().cast(), data.as_ptr().cast()],
            Self::Int64(values) => vec![validity, values.as_ptr().cast()],
            Self::Float64(values) => vec![validity, values.as_ptr().cast()],
        }
    }
}

/// A record batch ready to export: named columns of equal length.
pub struct ExportBatch {
    names: Vec<CString>,
    columns: Vec<Frozen>,
    rows: usize,
}

/// Field flag of the interface: the column may hold nulls (how pyarrow declares a field by default,
/// so that exported batches have the schemas of batches built in Python).
const NULLABLE: i64 = 2;

impl ExportBatch {
    /// # Panics
    /// If the columns differ in length or a name holds a NUL byte (both are the core's own mistakes).
    #[must_use]
    pub fn new(columns: Vec<(&str, ExportColumn)>) -> Self {
        let length = |column: &ExportColumn| match column {
            ExportColumn::Text(text) => text.len(),
            ExportColumn::Int64(values) => values.len(),
            ExportColumn::Float64(values) => values.len(),
        };
        let rows = columns.first().map_or(0, |(_, c)| length(c));
        assert!(columns.iter().all(|(_, c)| length(c) == rows), "columns of one batch have equal lengths");
        let names = columns.iter().map(|(n, _)| CString::new(*n).expect("column names have no NUL")).collect();
        Self { names, columns: columns.into_iter().map(|(_, c)| Frozen::of(c)).collect(), rows }
    }

    #[must_use]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The batch as Python shows it.
    #[must_use]
    pub fn describe(&self) -> String {
        format!("ArrowBatch(rows={})", self.rows)
    }

    /// The batch as a table to read in the core again (its buffers shared, not copied).
    #[must_use]
    pub fn source(self: &Arc<Self>) -> super::TableSource {
        let (schema, array) = self.export();
        super::TableSource::Batch(super::ffi::OwnedSchema(Box::new(schema)), super::ffi::OwnedArray(Box::new(array)))
    }

    /// The batch's schema and data as C structs the consumer takes over (it calls `release` on each).
    #[must_use]
    pub fn export(self: &Arc<Self>) -> (ArrowSchema, ArrowArray) {
        let schemas = self
            .columns
            .iter()
            .zip(&self.names)
            .map(|(column, name)| leak(schema(column.format(), name.clone(), Vec::new())))
            .collect();
        let arrays = self
            .columns
            .iter()
            .map(|column| leak(array(Arc::clone(self), self.rows, column.buffers(), Vec::new())))
            .collect();
        let top = schema("+s", CString::default(), schemas);
        (top, array(Arc::clone(self), self.rows, vec![std::ptr::null()], arrays))
    }
}

/// A length as the interface holds it (a Rust length never exceeds `isize::MAX`, so it fits).
fn length(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn leak<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// What an exported schema owns: its strings and its children.
struct SchemaParts {
    format: CString,
    name: CString,
    children: Vec<*mut ArrowSchema>,
}

/// What an exported array owns: a share of the batch (its buffers), the pointer list and its children.
struct ArrayParts {
    _batch: Arc<ExportBatch>,
    buffers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
}

fn schema(format: &str, name: CString, children: Vec<*mut ArrowSchema>) -> ArrowSchema {
    let flags = if format == "+s" { 0 } else { NULLABLE };
    let format = CString::new(format).expect("formats have no NUL");
    let mut parts = Box::new(SchemaParts { format, name, children });
    ArrowSchema {
        format: parts.format.as_ptr(),
        name: parts.name.as_ptr(),
        metadata: std::ptr::null(),
        flags,
        n_children: length(parts.children.len()),
        children: parts.children.as_mut_ptr(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_schema),
        private_data: Box::into_raw(parts).cast(),
    }
}

fn array(
    batch: Arc<ExportBatch>,
    rows: usize,
    buffers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
) -> ArrowArray {
    let mut parts = Box::new(ArrayParts { _batch: batch, buffers, children });
    ArrowArray {
        length: length(rows),
        null_count: 0,
        offset: 0,
        n_buffers: length(parts.buffers.len()),
        n_children: length(parts.children.len()),
        buffers: parts.buffers.as_mut_ptr(),
        children: parts.children.as_mut_ptr(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_array),
        private_data: Box::into_raw(parts).cast(),
    }
}

/// Releases an exported schema and every child the consumer has not moved out (a moved child was
/// marked released in place and is released by its new owner).
unsafe extern "C" fn release_schema(schema: *mut ArrowSchema) {
    // SAFETY: the interface calls `release` with a valid struct this module exported, once.
    unsafe {
        let Some(schema) = schema.as_mut() else { return };
        let parts = Box::from_raw(schema.private_data.cast::<SchemaParts>());
        for &child in &parts.children {
            if let Some(release) = (*child).release {
                release(child);
            }
            drop(Box::from_raw(child));
        }
        schema.release = None;
    }
}

/// Releases an exported array (see [`release_schema`]); the buffers go with the last share of the batch.
unsafe extern "C" fn release_array(array: *mut ArrowArray) {
    // SAFETY: as for the schema.
    unsafe {
        let Some(array) = array.as_mut() else { return };
        let parts = Box::from_raw(array.private_data.cast::<ArrayParts>());
        for &child in &parts.children {
            if let Some(release) = (*child).release {
                release(child);
            }
            drop(Box::from_raw(child));
        }
        array.release = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::column::Column;
    use crate::arrow::ffi::{OwnedArray, OwnedSchema};
    use crate::arrow::{Batch, TableSource};

    fn batch() -> Arc<ExportBatch> {
        let mut text = TextColumn::default();
        for value in ["q1", "", "a longer value"] {
            text.push(value);
        }
        Arc::new(ExportBatch::new(vec![
            ("qid", ExportColumn::Text(text)),
            ("rank", ExportColumn::Int64(vec![1, 2, 3])),
            ("score", ExportColumn::Float64(vec![0.5, -1.0, 2.25])),
        ]))
    }

    #[test]
    fn an_exported_batch_reads_back_through_the_consumer_side() {
        let batch = batch();
        let (schema, array) = batch.export();
        let source = TableSource::Batch(OwnedSchema(Box::new(schema)), OwnedArray(Box::new(array)));
        let mut seen = Vec::new();
        source
            .for_each_batch("exported", |read: &Batch<'_>| {
                assert_eq!(read.names(), ["qid", "rank", "score"]);
                let (s, a) = read.column("qid").unwrap();
                let qid = Column::new(s, a).unwrap();
                let (s, a) = read.column("rank").unwrap();
                let rank = Column::new(s, a).unwrap();
                let (s, a) = read.column("score").unwrap();
                let score = Column::new(s, a).unwrap();
                let mut digits = itoa::Buffer::new();
                for row in read.rows() {
                    let text = qid.text(row, &mut digits).unwrap().to_owned();
                    seen.push((text, rank.integer(row).unwrap(), score.float(row).unwrap()));
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, [("q1".into(), 1, 0.5), (String::new(), 2, -1.0), ("a longer value".into(), 3, 2.25)]);
        // Every export released: only the test's own share of the buffers is left.
        assert_eq!(Arc::strong_count(&batch), 1);
    }

    #[test]
    fn a_child_moved_out_outlives_its_parent() {
        let batch = batch();
        let (mut schema, mut array) = batch.export();
        // SAFETY: the structs were just exported; the child is moved as the interface allows.
        unsafe {
            let child = *array.children.add(2);
            let mut moved = std::ptr::read(child);
            (*child).release = None;
            (array.release.unwrap())(&raw mut array);
            (schema.release.unwrap())(&raw mut schema);
            assert!(array.release.is_none() && schema.release.is_none());
            assert_eq!(Arc::strong_count(&batch), 2);
            assert_eq!((*moved.buffer(1).cast::<f64>().add(2)).to_bits(), 2.25_f64.to_bits());
            (moved.release.unwrap())(&raw mut moved);
        }
        assert_eq!(Arc::strong_count(&batch), 1);
    }
}
