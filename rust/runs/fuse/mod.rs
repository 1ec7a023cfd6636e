//! Fusing run files: the stream of `fanfuse fuse` (one query group of each run at a time), the
//! fusion of one query's lists, and the row route of the engines that fuse in many places, which
//! writes the same file through the order the stream follows ([`order`]).

pub mod gather;
pub mod order;
pub mod progress;
pub mod query;
pub mod rows;
pub mod stream;
pub mod text;
