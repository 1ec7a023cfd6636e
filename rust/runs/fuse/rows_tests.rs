//! Rows read in blocks, split by query, fused apart and put in key order make the file one process
//! writes, byte for byte: generated runs grouped alike, in other orders, or interleaved, with
//! comments, blank lines, queries missing from runs and ties, cut into blocks at random bytes.

use std::sync::Arc;

use super::*;
use crate::arrow::column::Column;
use crate::arrow::ffi::{OwnedArray, OwnedSchema};
use crate::runs::fuse::order::Layout;
use crate::runs::fuse::stream::{fuse_files, FuseFilesOptions};
use crate::runs::read::rows::read_file_block;
use crate::runs::write::OutFormat;

/// A small deterministic generator (xorshift64*): the cases are the same at every run.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

fn source(batch: ExportBatch) -> TableSource {
    let (schema, array) = Arc::new(batch).export();
    TableSource::Batch(OwnedSchema(Box::new(schema)), OwnedArray(Box::new(array)))
}

/// The lines of one generated run: grouped by query in a shuffled order, or every line shuffled,
/// or groups cut in two; a comment and a blank line somewhere.
fn run_text(random: &mut Random, queries: usize, r: usize) -> String {
    let mut qids: Vec<usize> = (0..queries).filter(|_| random.below(5) > 0).collect();
    if qids.is_empty() {
        qids.push(r);
    }
    random.shuffle(&mut qids);
    let mut lines = Vec::new();
    for q in qids {
        for d in 0..=random.below(5) {
            let score = random.below(4) as f64 / 2.0;
            lines.push(format!("q{q} Q0 d{} {} {score} r{r}\n", random.below(12) * 10 + d, d + 1));
        }
    }
    match random.below(3) {
        0 => random.shuffle(&mut lines),
        1 => {
            let cut = random.below(lines.len());
            lines.rotate_left(cut);
        }
        _ => {}
    }
    lines.insert(random.below(lines.len() + 1), "# a comment\n".into());
    lines.insert(random.below(lines.len() + 1), "\n".into());
    lines.concat()
}

/// The (order, text) rows of every fused batch.
fn texts(batches: Vec<ExportBatch>) -> Vec<Vec<(i64, String)>> {
    batches
        .into_iter()
        .map(|batch| {
            let mut rows = Vec::new();
            source(batch)
                .for_each_batch("fused", |read| {
                    let column = |name: &str| {
                        let (s, a) = read.column(name).unwrap();
                        Column::new(s, a).unwrap()
                    };
                    let (order, text) = (column("order"), column("text"));
                    let mut digits = itoa::Buffer::new();
                    for row in read.rows() {
                        rows.push((order.integer(row).unwrap(), text.text(row, &mut digits).unwrap().to_owned()));
                    }
                    Ok(())
                })
                .unwrap();
            rows
        })
        .collect()
}

#[test]
fn rows_fused_apart_and_ordered_by_key_are_the_one_process_file() {
    let directory = std::env::temp_dir().join(format!("fanfuse-fuse-rows-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let mut random = Random(0x5eed);
    let mut buffered_cases = 0;
    for case in 0..150 {
        let runs = 1 + random.below(3);
        let paths: Vec<String> = (0..runs)
            .map(|r| {
                let path = directory.join(format!("{case}-{r}.trec"));
                let queries = 1 + random.below(25);
                std::fs::write(&path, run_text(&mut random, queries, r)).unwrap();
                path.to_string_lossy().into_owned()
            })
            .collect();
        let rank_from = [RankFrom::Score, RankFrom::Rank, RankFrom::File][random.below(3)];
        let method = ["rrf", "combsum", "condorcet"][random.below(3)];
        let params = FuseParams {
            method: crate::fusion::Method::from_name(method, crate::fusion::MethodParams::default()).unwrap(),
            top_k: [None, Some(1), Some(3)][random.below(3)],
            ..FuseParams::default()
        };
        let expected_path = directory.join(format!("{case}.out"));
        let options = FuseFilesOptions {
            params: params.clone(),
            rank_from,
            format: OutFormat::Trec,
            collection: None,
            tag: "fanfuse".into(),
            threads: None,
            progress: None,
        };
        let summary = fuse_files(&paths, &expected_path.to_string_lossy(), &options).unwrap();
        buffered_cases += usize::from(summary.buffered);
        let partitions = 1 + random.below(4);
        let (mut blocks, mut pieces) = (Vec::new(), vec![Vec::new(); partitions]);
        for (r, path) in paths.iter().enumerate() {
            let size = std::fs::metadata(path).unwrap().len();
            let step = 1 + random.below(size as usize) as u64;
            for start in (0..size).step_by(step as usize) {
                let (summary, batches) = read_file_block(path, start, start + step, r, partitions).unwrap();
                blocks.push(summary);
                for (j, batch) in batches.into_iter().enumerate() {
                    pieces[j].push(Arc::new(batch.unwrap_or_else(crate::runs::read::rows::empty_rows)));
                }
            }
        }
        let layout = Layout::new(&blocks, &paths).unwrap();
        let sources = |j: usize| -> Vec<TableSource> {
            pieces[j]
                .iter()
                .map(|batch| {
                    let (schema, array) = batch.export();
                    TableSource::Batch(OwnedSchema(Box::new(schema)), OwnedArray(Box::new(array)))
                })
                .collect()
        };
        let ranges = 1 + random.below(3);
        let fusion =
            RowFusion { params: &params, rank_from, output: RowOutput::Trec { tag: "fanfuse" }, ranges, threads: None };
        let mut ordered: Vec<Vec<(i64, String)>> = vec![Vec::new(); ranges];
        for j in 0..partitions {
            for (k, rows) in texts(fuse_rows(sources(j), &layout, &fusion).unwrap()).into_iter().enumerate() {
                assert!(rows.windows(2).all(|w| w[0].0 < w[1].0), "case {case}: a batch is in key order");
                ordered[k].extend(rows);
            }
        }
        let mut written = String::new();
        let mut last = i64::MIN;
        for mut range in ordered {
            range.sort_unstable();
            assert!(range.first().is_none_or(|first| first.0 > last), "case {case}: ranges follow each other");
            last = range.last().map_or(last, |row| row.0);
            written.extend(range.into_iter().map(|(_, text)| text));
        }
        assert_eq!(written, std::fs::read_to_string(&expected_path).unwrap(), "case {case}");
    }
    std::fs::remove_dir_all(&directory).unwrap();
    assert!(buffered_cases > 20 && buffered_cases < 130, "both orders are covered ({buffered_cases} buffered)");
}
