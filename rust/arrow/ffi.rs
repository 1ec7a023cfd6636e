//! The structs of the Arrow C data interface and C stream interface
//! (<https://arrow.apache.org/docs/format/CDataInterface.html>), as their producers (pyarrow,
//! polars, pandas through pyarrow) hand them over, and owners that release them when dropped.
//!
//! The consumer side is here; the producer side (batches the core exports) is [`super::export`].
//! See [`super`] for why this is written by hand rather than taken from the `arrow` crates.

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::error::FusionError;

#[repr(C)]
#[derive(Debug)]
pub struct ArrowSchema {
    pub format: *const c_char,
    pub name: *const c_char,
    pub metadata: *const c_char,
    pub flags: i64,
    pub n_children: i64,
    pub children: *mut *mut ArrowSchema,
    pub dictionary: *mut ArrowSchema,
    pub release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    pub private_data: *mut c_void,
}

#[repr(C)]
#[derive(Debug)]
pub struct ArrowArray {
    pub length: i64,
    pub null_count: i64,
    pub offset: i64,
    pub n_buffers: i64,
    pub n_children: i64,
    pub buffers: *mut *const c_void,
    pub children: *mut *mut ArrowArray,
    pub dictionary: *mut ArrowArray,
    pub release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    pub private_data: *mut c_void,
}

#[repr(C)]
#[derive(Debug)]
pub struct ArrowArrayStream {
    pub get_schema: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowSchema) -> c_int>,
    pub get_next: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowArray) -> c_int>,
    pub get_last_error: Option<unsafe extern "C" fn(*mut ArrowArrayStream) -> *const c_char>,
    pub release: Option<unsafe extern "C" fn(*mut ArrowArrayStream)>,
    pub private_data: *mut c_void,
}

impl ArrowSchema {
    #[must_use]
    pub const fn empty() -> Self {
        Self {
            format: std::ptr::null(),
            name: std::ptr::null(),
            metadata: std::ptr::null(),
            flags: 0,
            n_children: 0,
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }

    /// The format string (`u`, `l`, `+s`, ...); empty when absent or not UTF-8.
    #[must_use]
    pub fn format(&self) -> &str {
        text(self.format)
    }

    #[must_use]
    pub fn name(&self) -> &str {
        text(self.name)
    }

    /// The child schemas (the columns of a struct).
    #[must_use]
    pub fn children(&self) -> Vec<&ArrowSchema> {
        let n = usize::try_from(self.n_children).unwrap_or(0);
        // SAFETY: a released-or-valid schema from a producer has `n_children` valid child pointers.
        (0..n).filter_map(|i| unsafe { (*self.children.add(i)).as_ref() }).collect()
    }

    /// The schema of the dictionary's values, for a dictionary-encoded column.
    #[must_use]
    pub fn dictionary(&self) -> Option<&ArrowSchema> {
        // SAFETY: null or a valid schema, by the interface's rules.
        unsafe { self.dictionary.as_ref() }
    }
}

impl ArrowArray {
    #[must_use]
    pub const fn empty() -> Self {
        Self {
            length: 0,
            null_count: 0,
            offset: 0,
            n_buffers: 0,
            n_children: 0,
            buffers: std::ptr::null_mut(),
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }

    /// Buffer `i` (null when absent, e.g. the validity bitmap of an array without nulls).
    #[must_use]
    pub fn buffer(&self, i: usize) -> *const c_void {
        if i >= usize::try_from(self.n_buffers).unwrap_or(0) || self.buffers.is_null() {
            return std::ptr::null();
        }
        // SAFETY: `i < n_buffers`, and `buffers` holds `n_buffers` pointers.
        unsafe { *self.buffers.add(i) }
    }

    #[must_use]
    pub fn children(&self) -> Vec<&ArrowArray> {
        let n = usize::try_from(self.n_children).unwrap_or(0);
        // SAFETY: as for the schema's children.
        (0..n).filter_map(|i| unsafe { (*self.children.add(i)).as_ref() }).collect()
    }

    #[must_use]
    pub fn dictionary(&self) -> Option<&ArrowArray> {
        // SAFETY: null or a valid array.
        unsafe { self.dictionary.as_ref() }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        usize::try_from(self.length).unwrap_or(0)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[must_use]
    pub fn offset(&self) -> usize {
        usize::try_from(self.offset).unwrap_or(0)
    }
}

fn text<'a>(pointer: *const c_char) -> &'a str {
    if pointer.is_null() {
        return "";
    }
    // SAFETY: non-null strings of the interface are NUL-terminated and live as long as their struct.
    unsafe { CStr::from_ptr(pointer) }.to_str().unwrap_or("")
}

/// A schema this side owns: released when dropped.
pub struct OwnedSchema(pub Box<ArrowSchema>);

/// A (struct) array this side owns: released when dropped.
pub struct OwnedArray(pub Box<ArrowArray>);

/// A stream of record batches this side owns: released when dropped.
pub struct OwnedStream(Box<ArrowArrayStream>);

// SAFETY: the interface lets a consumer move these structs to any thread and release them there;
// fanfuse reads them from one thread at a time.
unsafe impl Send for OwnedSchema {}
unsafe impl Send for OwnedArray {}
unsafe impl Send for OwnedStream {}

impl Drop for OwnedSchema {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: the struct is valid and not yet released; `release` marks it released.
            unsafe { release(&raw mut *self.0) };
        }
    }
}

impl Drop for OwnedArray {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: as for the schema.
            unsafe { release(&raw mut *self.0) };
        }
    }
}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: as for the schema.
            unsafe { release(&raw mut *self.0) };
        }
    }
}

impl OwnedSchema {
    /// Takes the schema at `pointer` over, marking the original released (the interface's move).
    ///
    /// # Safety
    /// `pointer` points to a valid, unreleased `ArrowSchema` nobody else will release.
    #[must_use]
    pub unsafe fn take(pointer: *mut ArrowSchema) -> Self {
        let moved = Box::new(std::ptr::read(pointer));
        (*pointer).release = None;
        Self(moved)
    }
}

impl OwnedArray {
    /// Takes the array at `pointer` over, marking the original released.
    ///
    /// # Safety
    /// As for [`OwnedSchema::take`].
    #[must_use]
    pub unsafe fn take(pointer: *mut ArrowArray) -> Self {
        let moved = Box::new(std::ptr::read(pointer));
        (*pointer).release = None;
        Self(moved)
    }
}

impl OwnedStream {
    /// Takes the stream at `pointer` over, marking the original released.
    ///
    /// # Safety
    /// As for [`OwnedSchema::take`].
    #[must_use]
    pub unsafe fn take(pointer: *mut ArrowArrayStream) -> Self {
        let moved = Box::new(std::ptr::read(pointer));
        (*pointer).release = None;
        Self(moved)
    }

    fn failure(&mut self, what: &str, code: c_int) -> FusionError {
        let detail = self.0.get_last_error.map_or("", |last_error| {
            // SAFETY: the stream is valid; the message lives until the next call on the stream.
            text(unsafe { last_error(&raw mut *self.0) })
        });
        FusionError::invalid(format!("the Arrow stream failed to give its {what} (error {code}): {detail}"))
    }

    pub fn schema(&mut self) -> Result<OwnedSchema, FusionError> {
        let get_schema = self.0.get_schema.ok_or_else(|| FusionError::invalid("the Arrow stream is released"))?;
        let mut schema = Box::new(ArrowSchema::empty());
        // SAFETY: a valid stream writes a schema into `schema` or returns an error code.
        let code = unsafe { get_schema(&raw mut *self.0, &raw mut *schema) };
        if code != 0 {
            return Err(self.failure("schema", code));
        }
        Ok(OwnedSchema(schema))
    }

    /// The next batch, or `None` at the end of the stream.
    pub fn next_batch(&mut self) -> Result<Option<OwnedArray>, FusionError> {
        let get_next = self.0.get_next.ok_or_else(|| FusionError::invalid("the Arrow stream is released"))?;
        let mut array = Box::new(ArrowArray::empty());
        // SAFETY: a valid stream writes an array (released-marked at the end) or returns an error code.
        let code = unsafe { get_next(&raw mut *self.0, &raw mut *array) };
        if code != 0 {
            return Err(self.failure("next batch", code));
        }
        Ok(array.release.is_some().then_some(OwnedArray(array)))
    }
}
