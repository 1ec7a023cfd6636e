//! TREC run files (plain or gzip): read, compared with trec_eval's and Python's reading, written back.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fanfuse_fuzz::check_run_file(data));
