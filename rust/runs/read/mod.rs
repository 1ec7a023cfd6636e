//! Reading runs and qrels: files line by line (plain or gzip), the TREC and MT-RAG line formats,
//! Arrow tables and columns, and blocks of either as Arrow rows for the engines that fuse apart.

pub mod fields;
pub mod input;
mod mtrag;
pub mod qrels;
mod rank;
mod reader;
pub mod rows;
pub mod source;
pub mod table;
mod trec;

pub use rank::{order_hits, ranked, trec_eval_order, RankFrom};
pub use reader::{read_run, RunReader};
