//! MT-RAG JSONL run files (plain or gzip): read, written back in both formats, fused.
//! The same checks as `trec_run`; its seeds and dictionary are JSON.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fanfuse_fuzz::check_run_file(data));
