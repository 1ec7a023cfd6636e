//! The key of a query's place in the file `fanfuse fuse` writes, from where its rows are in the
//! runs, so that queries fused in many places can be written as one process writes them.
//!
//! The order (docs/run-files.md): one process takes one group (consecutive lines of one query) from
//! each run in turn. Step `g * R + r` is the g-th group of run r of R, or the run's end when g is its
//! number of groups. A query's release is the latest, over the runs, of the step of its first group
//! there (of the run's end where it has none); queries are written by release, then by the step of
//! their first group. One rule for every input: grouped runs in any query order, and runs that come
//! back to a query (which one process fuses holding everything, [`super::stream`]).

use crate::error::FusionError;
use crate::runs::read::rows::BlockSummary;

/// Where the rows of every block stand in their run: the lines and groups before each block, and
/// each run's name (in errors) and number of groups.
pub struct Layout {
    pub(super) names: Vec<String>,
    pub(super) runs: Vec<usize>,
    pub(super) lines_before: Vec<u64>,
    pub(super) groups_before: Vec<u64>,
    groups: Vec<u64>,
}

impl Layout {
    /// `blocks` in reading order (each run's blocks in file order); `names[r]` names run r in errors.
    pub fn new(blocks: &[BlockSummary], names: &[String]) -> Result<Self, FusionError> {
        let mut layout = Self {
            names: names.to_vec(),
            runs: Vec::with_capacity(blocks.len()),
            lines_before: Vec::with_capacity(blocks.len()),
            groups_before: Vec::with_capacity(blocks.len()),
            groups: vec![0; names.len()],
        };
        let mut lines = vec![0; names.len()];
        let mut last: Vec<Option<&str>> = vec![None; names.len()];
        for (i, block) in blocks.iter().enumerate() {
            let r = block.run;
            if r >= names.len() {
                return Err(FusionError::invalid(format!(
                    "blocks[{i}] is of run {r}, but there are {} runs (names)",
                    names.len()
                )));
            }
            // A block that starts with the query the run's previous group was of continues that group.
            let continues = block.groups > 0 && block.first.as_deref().is_some_and(|q| last[r] == Some(q));
            let start = layout.groups[r] - u64::from(continues);
            layout.runs.push(r);
            layout.lines_before.push(lines[r]);
            layout.groups_before.push(start);
            lines[r] += block.lines;
            if block.groups > 0 {
                layout.groups[r] = start + block.groups;
                last[r] = block.last.as_deref();
            }
        }
        Ok(layout)
    }

    pub(super) fn step(&self, run: usize, group: u64) -> u64 {
        group * self.names.len() as u64 + run as u64
    }

    /// The step of run `run`'s end.
    pub(super) fn end(&self, run: usize) -> u64 {
        self.step(run, self.groups[run])
    }

    /// One more than the last step.
    pub(super) fn steps(&self) -> u64 {
        (0..self.names.len()).map(|r| self.end(r) + 1).max().unwrap_or(0)
    }
}

/// Where one query starts in each run: its first (global) group index, `None` where the run lacks it.
pub struct QueryGroups {
    pub first: Vec<Option<u64>>,
}

impl QueryGroups {
    #[must_use]
    pub fn new(runs: usize) -> Self {
        Self { first: vec![None; runs] }
    }

    /// Notes group `group` of run `run`.
    pub fn add(&mut self, run: usize, group: u64) {
        self.first[run] = Some(self.first[run].map_or(group, |f| f.min(group)));
    }

    /// The query's release: the latest, over the runs, of the step of its first group there.
    #[must_use]
    pub fn release(&self, layout: &Layout) -> u64 {
        let reached = |r: usize| self.first[r].map_or_else(|| layout.end(r), |g| layout.step(r, g));
        (0..self.first.len()).map(reached).max().unwrap_or(0)
    }

    /// The step of its first group anywhere.
    #[must_use]
    pub fn seq(&self, layout: &Layout) -> u64 {
        (0..self.first.len()).filter_map(|r| self.first[r].map(|g| layout.step(r, g))).min().unwrap_or(0)
    }

    /// The query's order key: A is written before B exactly when A's key is smaller. The release,
    /// then the first step (`steps` bounds every step).
    #[must_use]
    pub fn key(&self, layout: &Layout, steps: u64) -> u64 {
        self.release(layout) * steps + self.seq(layout)
    }
}
