//! Opening a run, qrels or corpus file and reading it line by line, gzip or plain, with line numbers
//! for errors and a byte counter for progress bars. Lines end at `\n`, with or without a `\r` before
//! it; a UTF-8 byte-order mark at the start of the (decompressed) file is skipped. A line holds at
//! most [`MAX_LINE_BYTES`]: what is not a text file (`/dev/zero`, a binary, a wrong path) fails at
//! its first line instead of filling the memory.

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;

use crate::error::FusionError;
use crate::interrupt::Ticker;

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
///
/// Lines are returned as slices of one read buffer, found with `memchr`: no copy per line. Reading
/// with `BufRead::read_until` into a line buffer instead costs ~10% of `fanfuse fuse` under `perf`
/// (read_until + memmove + the copy).
pub struct LineSource {
    pub path: String,
    reader: Box<dyn Read + Send>,
    buffer: Vec<u8>,
    /// Unreturned bytes are `buffer[start..end]`.
    start: usize,
    end: usize,
    /// Whether `buffer[..end]` is all ASCII, checked once per read: then lines need no UTF-8
    /// validation of their own (per-line `from_utf8` was ~3% of `fanfuse fuse`).
    ascii: bool,
    eof: bool,
    /// 1-based number of the line last returned.
    pub line: u64,
    /// Bytes of the file consumed so far (shared with a progress bar).
    pub consumed: Arc<AtomicU64>,
    gzip: bool,
    /// The line that may start with a byte-order mark: 1 when the source starts at the top of the
    /// file, 0 (none) for a block further on.
    mark_line: u64,
    /// Bytes read, for the interrupt check (every reader of a file is a long loop).
    ticker: Ticker,
}

const BUFFER: usize = 1 << 20;

/// The longest line a reader accepts (16 MiB), so that the memory a reader holds is bounded. The
/// longest line of the MT-RAG runs with passage text is 16 kB; a run line of 1,000 contexts of 4 kB
/// text each is 4 MB.
pub const MAX_LINE_BYTES: usize = 16 << 20;

impl LineSource {
    pub fn open(path: &str) -> Result<Self, FusionError> {
        let mut file = File::open(path).map_err(|e| FusionError::io(path, &e))?;
        let consumed = Arc::new(AtomicU64::new(0));
        let mut magic = [0_u8; SNIFFED];
        let sniffed = read_up_to(&mut file, &mut magic).map_err(|e| FusionError::io(path, &e))?;
        let gzip = magic[..sniffed].starts_with(&[0x1f, 0x8b]);
        if let Some((format, command)) = unread_compression(&magic[..sniffed]) {
            return Err(FusionError::input(
                path,
                0,
                format!(
                    "is {format}, which fanfuse does not read (it reads plain or gzip-compressed text): \
                     decompress it first ({command} {path})"
                ),
            ));
        }
        // The sniffed bytes are read again from memory, not by seeking back: a pipe cannot seek.
        let inner = Cursor::new(magic[..sniffed].to_vec()).chain(file);
        let raw = Counting { inner, read: Arc::clone(&consumed) };
        let reader: Box<dyn Read + Send> =
            if gzip { Box::new(MultiGzDecoder::new(BufReader::with_capacity(BUFFER / 4, raw))) } else { Box::new(raw) };
        Ok(Self {
            path: path.to_owned(),
            reader,
            buffer: vec![0; BUFFER],
            start: 0,
            end: 0,
            ascii: true,
            eof: false,
            line: 0,
            consumed,
            gzip,
            mark_line: 1,
            ticker: Ticker::new(),
        })
    }

    /// The lines that start in bytes `[start, end)` of a plain file (a line belongs to the block it
    /// starts in, so consecutive blocks read every line once), numbered from 1 within the block; the
    /// offset of the block's first line comes with it. A gzip file cannot be split: its one block
    /// starts at 0 and holds the whole file, whatever `end` says.
    pub fn open_block(path: &str, start: u64, end: u64) -> Result<(Self, u64), FusionError> {
        let mut source = Self::open(path)?;
        if source.gzip {
            return match start {
                0 => Ok((source, 0)),
                _ => Err(FusionError::input(path, 0, "is gzip, which is read whole: its one block starts at byte 0")),
            };
        }
        let mut file = File::open(path).map_err(|e| FusionError::io(path, &e))?;
        let first = first_line_at(&mut file, start).map_err(|e| FusionError::io(path, &e))?;
        file.seek(SeekFrom::Start(first)).map_err(|e| FusionError::io(path, &e))?;
        let raw = Counting { inner: file, read: Arc::clone(&source.consumed) };
        let remaining = end.saturating_sub(first);
        source.reader = Box::new(UpToLineEnd { inner: raw, remaining, finishing: false, done: remaining == 0 });
        source.mark_line = u64::from(first == 0);
        Ok((source, first))
    }

    /// Whether the file is gzip (sniffed from its bytes).
    #[must_use]
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// The next line without its line ending, or `None` at the end of the file.
    pub fn next_line(&mut self) -> Result<Option<&str>, FusionError> {
        let (from, to) = loop {
            if let Some(at) = memchr::memchr(b'\n', &self.buffer[self.start..self.end]) {
                let from = self.start;
                self.start += at + 1;
                break (from, from + at);
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let from = self.start;
                self.start = self.end;
                break (from, self.end);
            }
            self.fill()?;
        };
        if to - from > MAX_LINE_BYTES {
            return Err(self.too_long());
        }
        self.ticker.tick(to - from)?;
        self.line += 1;
        let mut to = to;
        while to > from && matches!(self.buffer[to - 1], b'\n' | b'\r') {
            to -= 1;
        }
        let mut from = from;
        if self.line == self.mark_line {
            from += self.byte_order_mark(&self.buffer[from..to])?;
        }
        let bytes = &self.buffer[from..to];
        if self.ascii {
            // SAFETY: `ascii` says every byte of `buffer[..end]` is ASCII, hence valid UTF-8.
            return Ok(Some(unsafe { std::str::from_utf8_unchecked(bytes) }));
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(Some(text)),
            Err(e) => Err(FusionError::input(
                &self.path,
                self.line,
                format!("invalid UTF-8 at byte {} of the line; files must be UTF-8 text", e.valid_up_to() + 1),
            )),
        }
    }

    /// The length of a UTF-8 byte-order mark at the start of the file (editors on Windows write
    /// one): it is skipped, not read as part of the first field. A UTF-16 mark is refused by name.
    fn byte_order_mark(&self, first_line: &[u8]) -> Result<usize, FusionError> {
        match first_line {
            [0xef, 0xbb, 0xbf, ..] => Ok(3),
            [0xff, 0xfe, ..] | [0xfe, 0xff, ..] => Err(FusionError::input(
                &self.path,
                1,
                "the file is UTF-16 (it starts with a UTF-16 byte-order mark); convert it to UTF-8",
            )),
            _ => Ok(0),
        }
    }

    /// The error of a line longer than [`MAX_LINE_BYTES`], at the line being read.
    fn too_long(&self) -> FusionError {
        FusionError::input(
            &self.path,
            self.line + 1,
            format!(
                "the line is longer than {} MiB, the most a line may hold; this is not a text file of \
                 lines (a run, qrels or corpus)?",
                MAX_LINE_BYTES >> 20
            ),
        )
    }

    /// Moves the unreturned tail to the front (growing the buffer for a line longer than it, up to
    /// one byte past the longest line accepted) and reads more.
    fn fill(&mut self) -> Result<(), FusionError> {
        self.buffer.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.end > MAX_LINE_BYTES {
            return Err(self.too_long());
        }
        if self.end == self.buffer.len() {
            self.buffer.resize((self.buffer.len() * 2).min(MAX_LINE_BYTES + 1), 0);
        }
        let n = loop {
            match self.reader.read(&mut self.buffer[self.end..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let what = if self.gzip {
                        format!("the gzip stream is corrupt or truncated ({e}); re-compress or re-download the file")
                    } else {
                        format!("read failed: {e}")
                    };
                    return Err(FusionError::input(&self.path, self.line + 1, what));
                }
            }
        };
        self.end += n;
        self.eof = n == 0;
        // The bytes kept from before were checked already, but checking them again (a partial line,
        // usually) is simpler than tracking where the non-ASCII ones were.
        self.ascii = self.buffer[..self.end].is_ascii();
        Ok(())
    }

    /// Where the next error should point: this file at the current line.
    pub fn error(&self, message: impl Into<String>) -> FusionError {
        FusionError::input(&self.path, self.line, message)
    }
}

/// The offset in the file at `path` of the first line of the block that starts at byte `start` (see
/// [`LineSource::open_block`]).
pub fn block_start(path: &str, start: u64) -> std::io::Result<u64> {
    first_line_at(&mut File::open(path)?, start)
}

/// The offset of the first line that starts at or after `start`: `start` itself if a line ends just
/// before it, else just past the next line end (the file's size if there is none).
fn first_line_at(file: &mut File, start: u64) -> std::io::Result<u64> {
    if start == 0 {
        return Ok(0);
    }
    file.seek(SeekFrom::Start(start - 1))?;
    let mut at = start - 1;
    let mut chunk = vec![0; 1 << 16];
    loop {
        let n = read_up_to(file, &mut chunk)?;
        if let Some(i) = memchr::memchr(b'\n', &chunk[..n]) {
            return Ok(at + i as u64 + 1);
        }
        if n < chunk.len() {
            return Ok(at + n as u64);
        }
        at += n as u64;
    }
}

/// Passes the bytes of a reader on up to `remaining` bytes, then on to the end of the line under way
/// there (through its `\n`), then nothing: the lines of a block that start before its end.
struct UpToLineEnd<R> {
    inner: R,
    remaining: u64,
    /// Past the block's end, inside its last line.
    finishing: bool,
    done: bool,
}

impl<R: Read> Read for UpToLineEnd<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if !self.finishing {
            let wanted = buf.len().min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
            let n = self.inner.read(&mut buf[..wanted])?;
            self.remaining -= n as u64;
            if n == 0 {
                self.done = true;
            } else if self.remaining == 0 {
                // A block ending right after a line end is complete; else its last line runs on.
                self.finishing = buf[n - 1] != b'\n';
                self.done = !self.finishing;
            }
            return Ok(n);
        }
        let n = self.inner.read(buf)?;
        let through = memchr::memchr(b'\n', &buf[..n]).map(|i| i + 1);
        self.done = through.is_some() || n == 0;
        Ok(through.unwrap_or(n))
    }
}

/// The most a whole-file input (a saved model) may hold: 256 MiB, some ten times the JSON of a
/// model at the largest sizes accepted, so that reading a wrong path (`/dev/zero`) fails early.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Reads a whole text file of at most [`MAX_FILE_BYTES`] (a file, a FIFO or a device alike).
///
/// # Errors
/// `Io` when the file cannot be read, `Input` when it is longer than the limit or not UTF-8.
pub fn read_small_file(path: &str) -> Result<String, FusionError> {
    let file = File::open(path).map_err(|e| FusionError::io(path, &e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| FusionError::io(path, &e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(FusionError::input(
            path,
            0,
            format!(
                "the file is longer than {} MiB, the most it may hold; is it the right file?",
                MAX_FILE_BYTES >> 20
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        FusionError::input(
            path,
            0,
            format!("invalid UTF-8 at byte {}; the file must be UTF-8 text", e.utf8_error().valid_up_to() + 1),
        )
    })
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
/// The bytes a file starts with that tell its compression.
const SNIFFED: usize = 10;

/// The compressed formats a reader does not decompress, by the bytes a file of each starts with
/// (none of them can start a UTF-8 text file), or None: what it is, and the command that decompresses
/// it. Read as text, each would be refused at its first line as "invalid UTF-8", naming no cause.
fn unread_compression(start: &[u8]) -> Option<(&'static str, &'static str)> {
    // bzip2: "BZh", the block size 1-9, then the magic of a block (pi) or of the end (sqrt(pi)).
    let bzip2 = start.len() == SNIFFED
        && start.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&start[3])
        && (start[4..] == *b"1AY&SY" || start[4..] == [0x17, 0x72, 0x45, 0x38, 0x50, 0x90]);
    if bzip2 {
        return Some(("bzip2-compressed", "bunzip2 -k"));
    }
    let formats: [(&[u8], &str, &str); 3] = [
        (&[0xfd, b'7', b'z', b'X', b'Z', 0], "xz-compressed", "unxz -k"),
        (&[0x28, 0xb5, 0x2f, 0xfd], "zstd-compressed", "unzstd"),
        (b"PK\x03\x04", "a zip archive", "unzip"),
    ];
    formats.iter().find(|(magic, _, _)| start.starts_with(magic)).map(|&(_, format, command)| (format, command))
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
