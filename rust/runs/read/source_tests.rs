//! Tests of the line source: line ends, byte-order marks, gzip, blocks, the line and file bounds.

use super::*;

fn lines_of(bytes: &[u8], name: &str) -> Vec<String> {
    let path = std::env::temp_dir().join(format!("fanfuse-source-{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let mut source = LineSource::open(&path.to_string_lossy()).unwrap();
    let mut lines = Vec::new();
    while let Some(line) = source.next_line().unwrap() {
        lines.push(line.to_owned());
    }
    assert_eq!(source.line, lines.len() as u64);
    std::fs::remove_file(&path).unwrap();
    lines
}

#[test]
fn splits_crlf_blank_and_unterminated_lines() {
    assert_eq!(lines_of(b"a b\r\n\nc\r\r\nd", "crlf"), ["a b", "", "c", "d"]);
    assert!(lines_of(b"", "empty").is_empty());
    assert_eq!(lines_of(b"\n", "newline"), [""]);
}

#[test]
fn a_utf8_byte_order_mark_is_skipped_at_the_start_only() {
    assert_eq!(lines_of(b"\xef\xbb\xbfq1 a\r\n\xef\xbb\xbfq2", "bom"), ["q1 a", "\u{feff}q2"]);
    assert_eq!(lines_of(b"\xef\xbb\xbf", "bom-only"), [""]);
    let path = std::env::temp_dir().join(format!("fanfuse-source-{}-utf16", std::process::id()));
    std::fs::write(&path, b"\xff\xfeq\x001\x00").unwrap();
    let error = LineSource::open(&path.to_string_lossy()).unwrap().next_line().unwrap_err().to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(error.contains(":1: the file is UTF-16"), "{error}");
}

#[test]
fn lines_longer_than_the_buffer_and_across_refills() {
    use std::fmt::Write;
    let long = "x".repeat(BUFFER * 2 + 17);
    let mut text = String::new();
    for i in 0..50_000 {
        writeln!(text, "q{i} Q0 d{i} 1 0.5 t").unwrap();
    }
    text.push_str(&long);
    text.push('\n');
    text.push_str("last");
    let lines = lines_of(text.as_bytes(), "long");
    assert_eq!(lines.len(), 50_002);
    assert_eq!(lines[49_999], "q49999 Q0 d49999 1 0.5 t");
    assert_eq!(lines[50_000], long);
    assert_eq!(lines[50_001], "last");
}

#[test]
fn a_line_longer_than_the_limit_fails_at_its_number_with_bounded_memory() {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("fanfuse-source-{}-endless", std::process::id()));
    let mut file = File::create(&path).unwrap();
    file.write_all(b"q1 Q0 d1 1 1 t\n").unwrap();
    file.write_all(&vec![b'x'; MAX_LINE_BYTES + 1]).unwrap();
    drop(file);
    let mut source = LineSource::open(&path.to_string_lossy()).unwrap();
    assert_eq!(source.next_line().unwrap(), Some("q1 Q0 d1 1 1 t"));
    let error = source.next_line().unwrap_err().to_string();
    assert!(error.contains(":2: the line is longer than 16 MiB"), "{error}");
    assert!(source.buffer.len() <= MAX_LINE_BYTES + 1);
    // The same line cut to the limit (unterminated, at the end of the file) is read.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(15 + MAX_LINE_BYTES as u64).unwrap();
    let mut source = LineSource::open(&path.to_string_lossy()).unwrap();
    source.next_line().unwrap();
    assert_eq!(source.next_line().unwrap().map(str::len), Some(MAX_LINE_BYTES));
    std::fs::remove_file(&path).unwrap();
    #[cfg(target_os = "linux")]
    {
        let error = LineSource::open("/dev/zero").unwrap().next_line().unwrap_err().to_string();
        assert!(error.starts_with("/dev/zero:1: the line is longer than"), "{error}");
    }
}

#[test]
fn gzip_is_sniffed_from_the_bytes() {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(b"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n").unwrap();
    let lines = lines_of(&encoder.finish().unwrap(), "gz");
    assert_eq!(lines, ["q1 Q0 d1 1 2.0 t", "q1 Q0 d2 2 1.0 t"]);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(b"\xef\xbb\xbfq1 Q0 d1 1 2.0 t\n").unwrap();
    assert_eq!(lines_of(&encoder.finish().unwrap(), "gz-bom"), ["q1 Q0 d1 1 2.0 t"]);
}

#[test]
fn non_ascii_utf8_passes_and_invalid_utf8_after_ascii_buffers_is_caught() {
    assert_eq!(lines_of("é q\nplain\n".as_bytes(), "accent"), ["é q", "plain"]);
    let mut bytes = "q Q0 d 1 1 t\n".repeat(200_000).into_bytes();
    bytes.extend_from_slice(b"bad \xff\n");
    let path = std::env::temp_dir().join(format!("fanfuse-source-{}-late", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let mut source = LineSource::open(&path.to_string_lossy()).unwrap();
    let error = loop {
        match source.next_line() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("the invalid line was accepted"),
            Err(error) => break error.to_string(),
        }
    };
    std::fs::remove_file(&path).unwrap();
    assert!(error.contains(":200001") && error.contains("byte 5"), "{error}");
}

#[test]
fn invalid_utf8_names_the_line() {
    let path = std::env::temp_dir().join(format!("fanfuse-source-{}-utf8", std::process::id()));
    std::fs::write(&path, b"ok\nbad \xff\n").unwrap();
    let mut source = LineSource::open(&path.to_string_lossy()).unwrap();
    assert_eq!(source.next_line().unwrap(), Some("ok"));
    let error = source.next_line().unwrap_err().to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(error.contains(":2") && error.contains("byte 5"), "{error}");
}

/// A FIFO at a new path in the temporary directory, fed `bytes` by a thread (which waits for a reader).
fn fifo_of(bytes: &'static [u8], name: &str) -> (std::path::PathBuf, std::thread::JoinHandle<()>) {
    let path = std::env::temp_dir().join(format!("fanfuse-source-{}-{name}", std::process::id()));
    let text = std::ffi::CString::new(path.to_string_lossy().into_owned()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(text.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
    let at = path.clone();
    let writer = std::thread::spawn(move || std::fs::write(at, bytes).unwrap());
    (path, writer)
}

#[test]
fn a_pipe_is_read_plain_or_gzip() {
    let (plain, writer) = fifo_of(b"q1 a\nq2 b\n", "fifo-plain");
    let mut source = LineSource::open(&plain.to_string_lossy()).unwrap();
    assert_eq!(source.next_line().unwrap(), Some("q1 a"));
    assert_eq!(source.next_line().unwrap(), Some("q2 b"));
    assert_eq!(source.next_line().unwrap(), None);
    writer.join().unwrap();
    std::fs::remove_file(&plain).unwrap();

    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gzip, b"q3 c\n").unwrap();
    let (zipped, writer) = fifo_of(Vec::leak(gzip.finish().unwrap()), "fifo-gzip");
    let mut source = LineSource::open(&zipped.to_string_lossy()).unwrap();
    assert!(source.is_gzip());
    assert_eq!(source.next_line().unwrap(), Some("q3 c"));
    assert_eq!(source.next_line().unwrap(), None);
    writer.join().unwrap();
    std::fs::remove_file(&zipped).unwrap();
}

#[test]
fn a_compression_it_does_not_read_is_named_by_its_bytes() {
    let named = |bytes: &[u8]| unread_compression(bytes).map(|(format, _)| format);
    assert_eq!(named(b"BZh91AY&SY"), Some("bzip2-compressed"));
    assert_eq!(named(&[b'B', b'Z', b'h', b'9', 0x17, 0x72, 0x45, 0x38, 0x50, 0x90]), Some("bzip2-compressed"));
    assert_eq!(named(&[0xfd, b'7', b'z', b'X', b'Z', 0, 0, 4, 0xe6, 0xd6]), Some("xz-compressed"));
    assert_eq!(named(&[0x28, 0xb5, 0x2f, 0xfd, 0x24, 0, 0, 0, 0, 0]), Some("zstd-compressed"));
    assert_eq!(named(b"PK\x03\x04\x14\0\0\0\x08\0"), Some("a zip archive"));
    // Text that starts as one of them does is text.
    assert_eq!(named(b"BZh9 Q0 d1"), None);
    assert_eq!(named(b"BZh"), None);
    assert_eq!(named(b"q1 Q0 d1 1"), None);
    assert_eq!(lines_of(b"BZh9 Q0 d1 1 2.0 t\n", "bzh-text"), ["BZh9 Q0 d1 1 2.0 t"]);
    let path = std::env::temp_dir().join(format!("fanfuse-source-{}-xz", std::process::id()));
    std::fs::write(&path, [0xfd, b'7', b'z', b'X', b'Z', 0, 0, 4, 0xe6, 0xd6, 0xb4, 0x46]).unwrap();
    let refused = LineSource::open(&path.to_string_lossy()).err().expect("an xz file is refused").to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(refused.contains("is xz-compressed, which fanfuse does not read"), "{refused}");
    assert!(refused.contains("decompress it first (unxz -k "), "{refused}");
}
