//! TREC and BEIR qrels files (plain or gzip): read, compared with trec_eval's and Python's reading.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fanfuse_fuzz::check_qrels_file(data));
