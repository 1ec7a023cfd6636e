//! Runs built from arbitrary columns and tags: written as TREC and MT-RAG JSONL and read back.
#![no_main]

libfuzzer_sys::fuzz_target!(|case: (Vec<(String, String, f64)>, String)| fanfuse_fuzz::check_columns(&case.0, &case.1));
