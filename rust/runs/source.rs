//! Opening a run or qrels file and reading it line by line, gzip or plain, with line numbers for
//! errors and a byte counter for progress bars.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;

use crate::error::FusionError;

/// Counts the bytes read from the file on disk (compressed bytes for `.gz`), for progress.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Lines of one file. gzip is recognised by its magic bytes, not the name, so a renamed file works.
pub struct LineSource {
    pub path: String,
    reader: Box<dyn BufRead + Send>,
    buffer: Vec<u8>,
    /// 1-based number of the line last returned.
    pub line: u64,
    /// Bytes of the file consumed so far (shared with a progress bar).
    pub consumed: Arc<AtomicU64>,
    gzip: bool,
}

const BUFFER: usize = 1 << 20;

impl LineSource {
    pub fn open(path: &str) -> Result<Self, FusionError> {
        let file = File::open(path).map_err(|e| FusionError::io(path, &e))?;
        let consumed = Arc::new(AtomicU64::new(0));
        let mut raw = BufReader::with_capacity(BUFFER, Counting { inner: file, read: Arc::clone(&consumed) });
        let gzip = raw.fill_buf().map_err(|e| FusionError::io(path, &e))?.starts_with(&[0x1f, 0x8b]);
        let reader: Box<dyn BufRead + Send> =
            if gzip { Box::new(BufReader::with_capacity(BUFFER, MultiGzDecoder::new(raw))) } else { Box::new(raw) };
        Ok(Self { path: path.to_owned(), reader, buffer: Vec::with_capacity(256), line: 0, consumed, gzip })
    }

    /// The next line without its line ending, or `None` at the end of the file.
    pub fn next_line(&mut self) -> Result<Option<&str>, FusionError> {
        self.buffer.clear();
        let n = self.reader.read_until(b'\n', &mut self.buffer).map_err(|e| {
            let what = if self.gzip {
                format!("the gzip stream is corrupt or truncated ({e}); re-compress or re-download the file")
            } else {
                format!("read failed: {e}")
            };
            FusionError::input(&self.path, self.line + 1, what)
        })?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        while matches!(self.buffer.last(), Some(b'\n' | b'\r')) {
            self.buffer.pop();
        }
        match std::str::from_utf8(&self.buffer) {
            Ok(text) => Ok(Some(text)),
            Err(e) => Err(FusionError::input(
                &self.path,
                self.line,
                format!("invalid UTF-8 at byte {} of the line; files must be UTF-8 text", e.valid_up_to() + 1),
            )),
        }
    }

    /// Where the next error should point: this file at the current line.
    pub fn error(&self, message: impl Into<String>) -> FusionError {
        FusionError::input(&self.path, self.line, message)
    }
}
