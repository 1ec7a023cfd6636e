//! Offline fusion of run files, streaming: read every run one query group at a time (in lockstep),
//! fuse a query as soon as every run has finished it, write it, forget it.
//!
//! Memory bound. A query is held from the first line any run gives for it until every run has moved
//! past it (or ended). When all inputs are grouped by query and list queries in the same order, that
//! is a handful of queries plus three chunks of [`CHUNK_QUERIES`] ready queries (one being fused, one
//! queued for the writer thread, one filling) and the spare hit lists of the readers: flat in the number of
//! queries, apart from 8 bytes (a hash) per query already fused. A query missing from some run waits
//! for that run to end. Inputs in different orders or not grouped hold up to the whole input: if a run
//! returns to a query that was already released, the fusion restarts in "buffered" mode, which holds
//! every query until all runs end (the partial output is discarded; the result is the same).
//!
//! Output order, in both modes: the rule of [`crate::runs::fuse::order`], each query's [`Place`]
//! gathered as the runs meet it. A round of the merge loop takes one message from every run still
//! open, so run r's g-th group (or its end) comes at [`step`] `(r, g, R)`.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::io::Write;
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::Arc;

use crate::batch;
use crate::error::FusionError;
use crate::fusion::FuseParams;
use crate::interrupt;
use crate::output::OutputFile;
use crate::runs::fuse::order::{step, Place};
use crate::runs::fuse::progress::{FuseProgress, ProgressCounters};
use crate::runs::fuse::query::{fuse_query, fused_hits};
use crate::runs::read::input::{GroupReader, RunInput};
use crate::runs::write::{
    check_tag, first_trec_line_problem, fused_query_text, nothing_written, value_error_at, OutFormat,
};
use crate::runs::{ranked, Hit, Query, RankFrom, Run};

/// Ready queries fused per parallel batch: large enough to amortise the pool, small enough to bound memory.
/// 1024 rather than 4096 since chunks are fused on their own thread: a smaller last chunk shortens
/// the serial tail; 256 / 1024 / 4096 measured the same within the noise of the shared machine
/// (0.53–0.64 s wall at 10k queries each).
pub const CHUNK_QUERIES: usize = 1024;

#[derive(Debug, Clone)]
pub struct FuseFilesOptions {
    pub params: FuseParams,
    pub rank_from: RankFrom,
    pub format: OutFormat,
    /// `Collection` of MT-RAG output (default: the first input's).
    pub collection: Option<String>,
    pub tag: String,
    pub threads: Option<usize>,
    /// Counters the caller reads while the run goes on (see [`FuseProgress`]).
    pub progress: Option<Arc<FuseProgress>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuseSummary {
    pub queries: u64,
    pub input_lines: u64,
    pub buffered: bool,
}

struct Pending {
    /// Where the query goes in the output, from the steps at which the runs have met it so far.
    place: Place,
    lists: Vec<Vec<Hit>>,
    finished: Vec<bool>,
}

/// Where [`fuse_inputs`] puts the fused run.
#[derive(Debug, Clone, Copy)]
pub enum Destination<'a> {
    /// This file, in `options.format`, written as `crate::output` describes.
    File(&'a str),
    /// A [`Run`] returned in memory: the queries and hits of the file, in the file's order.
    Memory,
}

/// Where the fused queries go as they are ready.
enum Sink {
    /// The output, and whether nothing is written yet (TREC has no line for a query without hits).
    File {
        out: OutputFile,
        empty: bool,
    },
    Memory(Vec<Query>),
}

/// One fused query, made for its sink.
enum Piece {
    Text(Vec<u8>),
    Hits(Vec<Hit>),
}

enum Outcome {
    Done(FuseSummary, Option<Run>),
    /// A run went back to a query already released: the inputs are not grouped consistently.
    Regrouped,
}

/// Fuses the runs in `inputs` into `output` (written as `crate::output` describes). An interrupt
/// (see `crate::interrupt`) stops it within a poll interval, leaving any previous output as it was.
pub fn fuse_files(inputs: &[String], output: &str, options: &FuseFilesOptions) -> Result<FuseSummary, FusionError> {
    let inputs: Vec<RunInput> = inputs.iter().cloned().map(RunInput::File).collect();
    fuse_inputs(&inputs, Destination::File(output), options).map(|(summary, _)| summary)
}

/// [`fuse_files`] over files and runs in memory (tables): each table is replayed in its row order,
/// so it fuses exactly as the same rows in a file. The fused run is returned with
/// [`Destination::Memory`] (named `fused`, with the collection a file would have).
pub fn fuse_inputs(
    inputs: &[RunInput],
    destination: Destination<'_>,
    options: &FuseFilesOptions,
) -> Result<(FuseSummary, Option<Run>), FusionError> {
    crate::runs::fuse::query::validate_run_params(&options.params, inputs.len())?;
    check_tag(options.format, &options.tag)?;
    match fuse_pass(inputs, destination, options, false)? {
        Outcome::Done(summary, run) => Ok((summary, run)),
        Outcome::Regrouped => match fuse_pass(inputs, destination, options, true)? {
            Outcome::Done(summary, run) => Ok((summary, run)),
            Outcome::Regrouped => unreachable!("buffered mode writes nothing before the end"),
        },
    }
}

/// What a reader thread sends: the next group of its run, or the end with the run's line count.
enum Message {
    Group(String, Vec<Hit>),
    End(u64),
}

/// Groups each reader thread may parse ahead of the fusion loop (bounds memory, keeps both busy).
const READ_AHEAD: usize = 256;

fn fuse_pass(
    sources: &[RunInput],
    destination: Destination<'_>,
    options: &FuseFilesOptions,
    buffered: bool,
) -> Result<Outcome, FusionError> {
    let names: Vec<String> = sources.iter().map(|s| s.name().to_owned()).collect();
    let inputs = &names[..];
    let readers = sources.iter().map(GroupReader::open).collect::<Result<Vec<_>, _>>()?;
    let sink = match destination {
        Destination::File(output) => Sink::File { out: OutputFile::create(output, inputs)?, empty: true },
        Destination::Memory => Sink::Memory(Vec::new()),
    };
    let collection = options.collection.clone().or_else(|| readers.iter().find_map(GroupReader::collection));
    let progress = ProgressCounters::new(sources, &readers, options.progress.clone());
    // One parsing thread per run: parsing is most of the work, and runs parse independently.
    std::thread::scope(|scope| {
        let mut recyclers = Vec::with_capacity(readers.len());
        let receivers: Vec<Receiver<Result<Message, FusionError>>> = readers
            .into_iter()
            .map(|mut reader| {
                let (sender, receiver) = sync_channel(READ_AHEAD);
                // Hit lists of fused queries go back to their reader for reuse (see `RunReader::recycle`).
                let (give_back, taken_back) = channel::<Vec<Hit>>();
                recyclers.push(give_back);
                // The reader's own checks see a stop of the merge loop (a group can be long).
                let stop = interrupt::stop_signal();
                scope.spawn(move || {
                    interrupt::follow(stop, || loop {
                        for hits in taken_back.try_iter() {
                            reader.recycle(hits);
                        }
                        let message = match reader.next_group() {
                            Ok(Some((qid, hits))) => Ok(Message::Group(qid, hits)),
                            Ok(None) => Ok(Message::End(reader.lines())),
                            Err(error) => Err(error),
                        };
                        let last = !matches!(message, Ok(Message::Group(..)));
                        // A send fails only when the fusion loop has stopped (an error elsewhere): stop too.
                        if sender.send(message).is_err() || last {
                            break;
                        }
                    });
                });
                receiver
            })
            .collect();
        // Chunks are fused and written on their own thread, so the merge loop (and behind it the
        // parsing threads) goes on while the pool fuses: with the fusion inline, the parsers stalled
        // behind READ_AHEAD for every chunk and 2 cores ran ~1.4 busy on average.
        let (chunks, chunk_queue) = sync_channel::<Vec<(String, Pending)>>(1);
        let mut writer = ChunkWriter { inputs, options, collection: collection.as_deref(), sink, recyclers };
        let written = scope.spawn(move || {
            for chunk in chunk_queue {
                writer.write(chunk)?;
            }
            Ok::<_, FusionError>(writer.sink)
        });
        let merged = Merge { buffered, progress, chunks }.run(&receivers);
        let written = written.join().expect("the chunk writer does not panic");
        match (merged, written) {
            // A writer error comes first: the merge then only saw the queue close.
            (_, Err(error)) | (Err(error), Ok(_)) => Err(error),
            (Ok(Outcome::Done(summary, _)), Ok(Sink::File { empty: true, .. })) => {
                Err(nothing_written(options.format, summary.queries))
            }
            (Ok(Outcome::Done(summary, _)), Ok(sink)) => {
                // The caller's last look at the counters (all read, all fused), and its last chance
                // to stop the run before the output replaces what was there.
                interrupt::poll_now()?;
                let run = match sink {
                    Sink::File { out, .. } => out.commit().map(|()| None)?,
                    Sink::Memory(queries) => {
                        Some(Run { name: "fused".into(), collection: collection.clone(), queries, source: None })
                    }
                };
                Ok(Outcome::Done(summary, run))
            }
            // Dropping `out` removes the partial output.
            (Ok(Outcome::Regrouped), Ok(_)) => Ok(Outcome::Regrouped),
        }
    })
}

/// The next message of a reader, checking for an interrupt while waiting (a slow input, a long group).
fn receive(receiver: &Receiver<Result<Message, FusionError>>) -> Result<Message, FusionError> {
    loop {
        match receiver.recv_timeout(interrupt::POLL_INTERVAL) {
            Ok(message) => return message,
            Err(RecvTimeoutError::Timeout) => interrupt::checkpoint()?,
            Err(RecvTimeoutError::Disconnected) => {
                unreachable!("a reader thread sends End or an error before it stops")
            }
        }
    }
}

struct Merge {
    buffered: bool,
    progress: ProgressCounters,
    chunks: SyncSender<Vec<(String, Pending)>>,
}

struct ChunkWriter<'a> {
    inputs: &'a [String],
    options: &'a FuseFilesOptions,
    collection: Option<&'a str>,
    sink: Sink,
    recyclers: Vec<Sender<Vec<Hit>>>,
}

impl Merge {
    /// Takes one group from every run in turn (lockstep) and releases each query once every run has
    /// moved past it or ended.
    fn run(self, receivers: &[Receiver<Result<Message, FusionError>>]) -> Result<Outcome, FusionError> {
        let n = receivers.len();
        let buffered = self.buffered;
        let mut pending: HashMap<String, Pending> = HashMap::new();
        let hasher = BuildHasherDefault::<DefaultHasher>::default();
        // Hashes of the queries released for writing: a collision only costs a needless switch to buffered mode.
        let mut released: HashSet<u64> = HashSet::new();
        let mut ready: Vec<(String, Pending)> = Vec::new();
        let mut ended = vec![false; n];
        // The step of the latest run end: a query first met after it is missing from that run.
        let mut last_end: Option<u64> = None;
        let mut round = 0_u64;
        let mut summary = FuseSummary { queries: 0, input_lines: 0, buffered };
        while ended.iter().any(|e| !e) {
            interrupt::checkpoint()?;
            for (r, receiver) in receivers.iter().enumerate() {
                if ended[r] {
                    continue;
                }
                // Run r's `round`-th group, or its end (the module's note on steps).
                let at = step(r, round, n);
                let message = receive(receiver)?;
                let (qid, hits) = match message {
                    Message::Group(qid, hits) => (qid, hits),
                    Message::End(lines) => {
                        ended[r] = true;
                        last_end = Some(at);
                        summary.input_lines += lines;
                        // Queries this run never had are now finished for it.
                        pending.values_mut().filter(|p| !p.finished[r]).for_each(|p| p.place.passed(at));
                        let mut done: Vec<(Place, String)> = pending
                            .iter()
                            .filter(|(_, p)| !buffered && (0..n).all(|i| p.finished[i] || ended[i]))
                            .map(|(q, p)| (p.place, q.clone()))
                            .collect();
                        // In the order of the rule, not the map's (random) order: the output is the
                        // same file at every run, and the distributed engine can reproduce it.
                        done.sort_unstable();
                        for (_, qid) in done {
                            let p = pending.remove(&qid).expect("listed above");
                            released.insert(hasher.hash_one(&qid));
                            ready.push((qid, p));
                        }
                        continue;
                    }
                };
                if !buffered && released.contains(&hasher.hash_one(&qid)) {
                    return Ok(Outcome::Regrouped);
                }
                let entry = pending.entry(qid.clone()).or_insert_with(|| {
                    let mut place = Place::first_met(at);
                    if let Some(end) = last_end {
                        place.passed(end);
                    }
                    Pending { place, lists: vec![Vec::new(); n], finished: vec![false; n] }
                });
                if !entry.finished[r] {
                    entry.place.reached(at); // only a run's first group of the query counts
                }
                if entry.lists[r].is_empty() {
                    entry.lists[r] = hits; // the usual case: move, don't copy
                } else {
                    entry.lists[r].extend(hits);
                }
                entry.finished[r] = true; // the reader has moved past this query's group
                if !buffered && (0..n).all(|i| entry.finished[i] || ended[i]) {
                    released.insert(hasher.hash_one(&qid));
                    ready.push(pending.remove_entry(&qid).expect("inserted above"));
                }
            }
            round += 1;
            if ready.len() >= CHUNK_QUERIES {
                summary.queries += ready.len() as u64;
                self.send(&mut ready)?;
                self.progress.update(summary.queries);
            }
        }
        // Left when buffered (else every query was released by the last run's end).
        let mut rest: Vec<(String, Pending)> = pending.into_iter().collect();
        rest.sort_unstable_by_key(|(_, p)| p.place); // places differ (first steps): no scratch copy
        ready.extend(rest);
        summary.queries += ready.len() as u64;
        self.send(&mut ready)?;
        self.progress.update(summary.queries);
        Ok(Outcome::Done(summary, None))
    }

    /// Hands the ready queries to the chunk writer.
    fn send(&self, ready: &mut Vec<(String, Pending)>) -> Result<(), FusionError> {
        // Fails only when the writer stopped on an error, which `fuse_pass` reports instead of this one.
        self.chunks.send(std::mem::take(ready)).map_err(|_| FusionError::invalid("the output writer stopped"))
    }
}

impl ChunkWriter<'_> {
    /// Orders each ready query's lists, fuses the chunk in parallel and hands it to the sink in order.
    fn write(&mut self, mut ready: Vec<(String, Pending)>) -> Result<(), FusionError> {
        let ready = &mut ready;
        let (inputs, options, collection) = (self.inputs, self.options, self.collection);
        let to_file = matches!(self.sink, Sink::File { .. });
        let fused = batch::map_queries(ready, options.threads, |(qid, pending)| {
            let lists = pending
                .lists
                .iter()
                .zip(inputs)
                .map(|(hits, path)| ranked(path, qid, hits, options.rank_from))
                .collect::<Result<Vec<_>, _>>()?;
            let entries = fuse_query(qid, &lists, inputs, &options.params)?;
            Ok::<_, FusionError>(if to_file {
                let (format, tag) = (options.format, &options.tag);
                Piece::Text(fused_query_text(format, qid, &entries, tag, collection, inputs, &pending.lists)?)
            } else {
                Piece::Hits(fused_hits(&entries))
            })
        })?;
        for (piece, (qid, pending)) in fused.into_iter().zip(ready.iter()) {
            match (piece?, &mut self.sink) {
                (Piece::Text(bytes), Sink::File { out, empty }) => {
                    if *empty && !bytes.is_empty() {
                        if let Some(message) = first_trec_line_problem(options.format, qid) {
                            return Err(value_error_at(inputs, &pending.lists, None, message));
                        }
                    }
                    *empty &= bytes.is_empty();
                    out.writer().write_all(&bytes).map_err(|e| out.io_error(&e))?;
                }
                (Piece::Hits(hits), Sink::Memory(queries)) => queries.push(Query { qid: qid.clone(), hits }),
                _ => unreachable!("each piece is made for the sink"),
            }
        }
        if let Sink::File { out, .. } = &mut self.sink {
            out.start_writeback();
        }
        for (_, pending) in ready.drain(..) {
            for (recycler, hits) in self.recyclers.iter().zip(pending.lists) {
                // Fails only when the reader has ended: then the list is simply freed.
                let _ = recycler.send(hits);
            }
        }
        Ok(())
    }
}
