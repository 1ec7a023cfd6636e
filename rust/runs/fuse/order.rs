//! The order of the queries in the file `fanfuse fuse` writes: the one statement of the rule, which
//! the stream ([`super::stream`]) follows as it reads and the engines that fuse rows apart
//! ([`super::rows`]) compute from where each query's rows are in the runs.
//!
//! The rule (docs/run-files.md): one process takes one group (consecutive lines of one query) from
//! each run in turn. [`step`] `g * R + r` is the g-th group of run r of R, or the run's end when g is
//! its number of groups. A query's release is the latest, over the runs, of the step of its first
//! group there (of the run's end where it has none); queries are written by release, then by the step
//! of their first group ([`Place`]). One rule for every input: grouped runs in any query order, and
//! runs that come back to a query (only first groups count).

use crate::error::FusionError;
use crate::runs::read::rows::BlockSummary;

/// The step at which the reading reaches group `group` of run `run` of `runs` (or the run's end,
/// `group` being its number of groups): a round takes one group from every run, in run order.
#[must_use]
pub fn step(run: usize, group: u64, runs: usize) -> u64 {
    group * runs as u64 + run as u64
}

/// A query's place in the output, gathered from the steps at which the reading meets it: ordered as
/// the queries are written (by release, then by the step of the first group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    /// The latest of the steps given to [`Place::reached`] and [`Place::passed`].
    release: u64,
    /// The earliest step given to [`Place::reached`].
    first: u64,
}

impl Place {
    /// A query whose first group is met at `step`.
    #[must_use]
    pub fn first_met(step: u64) -> Self {
        Self { release: step, first: step }
    }

    /// A run reaches its first group of the query at `step`.
    pub fn reached(&mut self, step: u64) {
        self.release = self.release.max(step);
        self.first = self.first.min(step);
    }

    /// A run without the query ends at `step`.
    pub fn passed(&mut self, step: u64) {
        self.release = self.release.max(step);
    }

    /// The place as one number, A before B exactly when A's is smaller (for a column of the rows the
    /// engines fuse apart); `steps` bounds every step.
    #[must_use]
    pub fn key(&self, steps: u64) -> u64 {
        self.release * steps + self.first
    }
}

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

    /// The step of run `run`'s end.
    fn end(&self, run: usize) -> u64 {
        step(run, self.groups[run], self.names.len())
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

    /// The query's place: each run reaches its first group there, or passes it at its end.
    #[must_use]
    pub fn place(&self, layout: &Layout) -> Place {
        let runs = self.first.len();
        // Nothing met yet: every query has a group somewhere, which sets `first`.
        let mut place = Place { release: 0, first: u64::MAX };
        for (r, first) in self.first.iter().enumerate() {
            match first {
                Some(g) => place.reached(step(r, *g, runs)),
                None => place.passed(layout.end(r)),
            }
        }
        place
    }
}
