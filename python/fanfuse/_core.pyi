"""Type stub and documentation of the compiled core ``fanfuse._core`` (checked by mypy.stubtest)."""

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal, Self, SupportsIndex, TypedDict, Unpack, final, overload

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from fanfuse._contribution import Contribution
from fanfuse._core import _internal as _internal  # the package's own entry points, in _core/_internal.pyi
from fanfuse.choices import AnyMethod, DuplicatePolicy, Norm, RankFrom, RunFormat, TieBreak, TrainedMethod
from fanfuse.options import FusionOptions

__all__ = [
    "DUPLICATE_POLICIES",
    "FUSION_OPTIONS",
    "METHODS",
    "METHOD_PARAMETERS",
    "METRICS",
    "NORMS",
    "RANK_SOURCES",
    "READER_LIMITS",
    "RUN_FILE_TOP_K",
    "RUN_FORMATS",
    "SCORE_METHODS",
    "TIE_BREAKS",
    "TRAINED_METHODS",
    "TREC_EVAL_METRICS",
    "_BUILD",
    "ArrowBatch",
    "Fused",
    "FusionError",
    "FusionModel",
    "InputError",
    "InvalidOutput",
    "InvalidSetting",
    "OutOfRange",
    "Qrels",
    "Run",
    "_FusionOptions",
    "_internal",
    "default_threads",
    "evaluate",
    "fuse",
    "fuse_batch",
    "fuse_files",
    "fuse_runs",
    "fuse_tables",
    "metric_depth",
    "paired_t",
    "qrels_from_table",
    "randomization_test",
    "read_qrels",
    "read_run",
    "rrf",
    "rrf_batch",
    "runs_from_table",
    "train_fusion",
    "tukey_hsd",
    "wilcoxon_test",
]

# Private aliases (underscored: they exist only in the stub).
_Id = str | int
_IdList = Sequence[str] | Sequence[int] | npt.NDArray[np.integer] | Iterable[_Id]

_BUILD: Literal["debug", "release"]
"""The profile the core was compiled with, which the benches' machine line states."""

# The names each option accepts, from the core's own tables (tests/test_name_lists.py checks that the
# Literal types of fanfuse.choices, the reference and the CLI agree with them).
RUN_FILE_TOP_K: int
"""Hits a run fusion keeps per query when ``top_k`` is left unset: trec_eval reads at most 1000."""
FUSION_OPTIONS: tuple[str, ...]
"""The names of the fusion options, in the order the core checks them (``FusionOptions``)."""
METHODS: tuple[str, ...]
"""``method=`` of ``fuse``, ``fuse_batch``, ``fuse_runs`` and ``fuse_files`` (weighted twins included)."""
TRAINED_METHODS: tuple[str, ...]
"""``method=`` of ``train_fusion``: the methods trained on qrels (ranx's), fused with ``model=``."""
METHOD_PARAMETERS: dict[str, tuple[str, ...]]
"""For each name of ``METHODS`` and ``TRAINED_METHODS``, what a caller can set beyond the runs: ``k``,
``phi``, ``sigma`` or ``gamma`` (the method's own), ``weights`` (per-list weights), ``norm`` (the caller
chooses the normalisation), ``segments`` or ``window`` (trained methods). ``tune`` searches these."""
SCORE_METHODS: tuple[str, ...]
"""The names of ``METHODS`` and ``TRAINED_METHODS`` that read the lists' scores (the others read ranks
only): they need a score for every id, and the score methods of ``METHODS`` take ``norm=``."""
NORMS: tuple[str, ...]
"""``norm=``: per-list score normalisations of the score methods."""
TIE_BREAKS: tuple[str, ...]
"""``tie_break=``: the order of equal fused scores."""
DUPLICATE_POLICIES: tuple[str, ...]
"""``duplicates=`` of ``fuse`` and ``fuse_batch``: what a repeated id inside one list means."""
RANK_SOURCES: tuple[str, ...]
"""``rank_from=`` of ``read_run``, ``Run.from_columns`` and ``fuse_files``: where a hit's rank comes from."""
RUN_FORMATS: tuple[str, ...]
"""``format=`` of ``Run.write`` and ``fuse_files``: the output formats."""

class FusionError(ValueError):
    """Invalid fusion input (a ranked list, a run, qrels, a file of them, a sample of a test, a model)
    or fusion option: the message names the argument (or file:line) and what is accepted."""

    option: str | None
    """For a refused fusion option (``FusionOptions`` or an entry point's option keywords), its name:
    of a combination, the option that comes later in ``FUSION_OPTIONS``. None otherwise."""

class InputError(ValueError):
    """Input other than fusion input refused: the message names the argument and what it accepts.
    ``fanfuse.errors`` re-exports it and derives its other refusals from it."""

class InvalidOutput(InputError):
    """An output path (a file or a folder to write) that cannot be written, or that names an input
    or another output however spelled: the message names the path and, from a command, the flag.
    Every writer of the core raises it (``Run.write``, ``fuse_files``, ``FusionModel.save``, the
    output guard's handles)."""

class InvalidSetting(InputError):
    """A setting (an argument, a flag, an environment variable) that is not one accepted, or that does
    not go with another given: of a retriever, expander, encoder, reranker or search; of an evaluation
    or comparison of runs (a metric, a test); of reading, writing or training on runs (``rank_from``,
    ``format``, ``tag``, the method to train)."""

class OutOfRange(InputError):
    """A number outside the range it accepts (NaN and infinities included): a row of
    ``fanfuse.limits`` (a fusion option is refused as ``FusionError``), or a range stated beside its
    argument."""

@final
class Fused:
    """The result of one fusion: ``ids`` and ``scores`` aligned, best first.

    Iterating yields ``(id, score)`` pairs; ``len()`` is the number of hits; ``fused[i]`` is a pair.
    Treat ``ids`` and ``scores`` as read-only.
    """

    @property
    def ids(self) -> list[_Id]:
        """Fused ids, best first: str or int, like the input."""
    @property
    def scores(self) -> list[float]:
        """Fused scores, aligned with ``ids``."""
    @property
    def explain(self) -> list[list[Contribution]] | None:
        """With ``fuse(..., explain=True)``: per hit, what each list gave it (aligned with ``ids``).

        Like ``ids`` and ``scores``, a fresh list on every access: editing it changes nothing else.
        """
    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> tuple[_Id, float]: ...
    def __iter__(self) -> Iterator[tuple[_Id, float]]: ...
    def __eq__(self, other: object, /) -> bool: ...

def rrf(
    lists: Iterable[_IdList],
    /,
    *,
    options: FusionOptions | None = None,
    **kwargs: Unpack[_RrfKeywords],
) -> Fused:
    """Weighted Reciprocal Rank Fusion of ranked id lists (the contract in docs/contract.md).

    ``score(d) = sum_i weights[i] / (k + rank_i(d))`` with 1-based ranks, summed in list order.

    The options are a ``FusionOptions`` (``options=``) or its keywords (not both); ``rrf`` reads
    ``k``, ``weights``, ``top_k`` and ``tie_break`` and refuses the others (use ``fuse``).

    Args:
        lists: ranked lists, best first. Each a list/tuple of ``str`` ids, of ``int`` ids, or a 1-D
            NumPy integer array (read without a Python object per element). All ids of one call are
            str, or all int (signed 64-bit). A repeated id inside one list counts at its first position.
        k: finite number > 0 (default 60). 60 matches Elasticsearch, ranx and pyserini; 59 matches
            LlamaIndex/Weaviate.
        weights: one finite weight >= 0 per list (None: all 1.0), with a finite total (only their ratios
            matter). A weight-0 list is ignored entirely.
        top_k: keep the first ``top_k`` hits (None: all); an int >= 0, larger than any list keeps all.
            Equal to the prefix of the full ranking.
        tie_break: ``"rank"`` (equal scores: better best rank first, then the earlier list) or
            ``"id"`` (ascending id, as pyserini and trectools).

    Raises:
        FusionError: a bad option value (k, weights, top_k, tie_break) or an id out of range.
        TypeError: a wrong type, such as mixed str and int ids, a float id, or a bool or str where a
            number is expected (``top_k=True`` is refused, not read as 1). Messages name the argument.

    The GIL is released while the kernel runs; the function is safe to call from many threads.
    """

def rrf_batch(
    queries: Iterable[Iterable[_IdList]],
    /,
    *,
    options: FusionOptions | None = None,
    threads: int | None = None,
    **kwargs: Unpack[_RrfKeywords],
) -> list[Fused]:
    """``[rrf(lists, ...) for lists in queries]`` in one call across the boundary.

    Queries are copied into Rust 64 at a time and each chunk is fused with the GIL released. With
    ``threads`` > 1 (an int from 1 to 1024; default: ``FANFUSE_NUM_THREADS``, else 1) batches of 256
    queries or more run on a thread pool that fuses one chunk while the calling thread copies the
    next. In a forked child the batch always runs serially. Every query's ids are str, or every
    query's are int. ``weights``, when given, must have one entry per list for every query.
    """

def default_threads() -> int:
    """Threads a batch uses with ``threads=None``: ``FANFUSE_NUM_THREADS``, else 1 (always 1 after fork).

    A value of the variable that is not an int from 1 to 1024 counts as unset, and a RuntimeWarning
    names it. The variable is read at every call, of this function and of the batch functions.
    """

# ---------------------------------------------------------------------------------------------
# General fusion (fanfuse.fuse): every method, scored runs, duplicate policies, explain.

_Scores = Sequence[float] | npt.NDArray[np.floating]
_Run = _IdList | Sequence[tuple[_Id, float]] | tuple[_IdList, _Scores]

class _RrfKeywords(TypedDict, total=False):
    """The options of ``rrf`` and ``rrf_batch`` as keywords, each as ``FusionOptions`` takes it."""

    k: float
    weights: Sequence[float] | npt.NDArray[np.floating] | None
    top_k: SupportsIndex | None
    tie_break: TieBreak

class _RunFusionKeywords(_RrfKeywords, total=False):
    """The options of a run fusion as keywords (all but ``duplicates`` and ``explain``)."""

    method: AnyMethod | None
    norm: Norm | None
    phi: float
    sigma: float
    gamma: float

class _FusionKeywords(_RunFusionKeywords, total=False):
    """Every fusion option as a keyword, each as ``FusionOptions`` takes it."""

    duplicates: DuplicatePolicy
    explain: bool

@disjoint_base
class _FusionOptions:
    """The fusion options, read and checked by the core when built: the base of
    ``fanfuse.FusionOptions`` (the class to use), which every ``options=`` reads."""

    def __new__(cls, **options: Unpack[_FusionKeywords]) -> Self: ...
    def given(self) -> dict[str, object]:
        """The options given when built, by name (the ones left unset take their defaults)."""
    # One value, typed by its name: what each property of the face returns.
    @overload
    def _value(self, name: Literal["method"], /) -> AnyMethod: ...
    @overload
    def _value(self, name: Literal["tie_break"], /) -> TieBreak: ...
    @overload
    def _value(self, name: Literal["duplicates"], /) -> DuplicatePolicy: ...
    @overload
    def _value(self, name: Literal["norm"], /) -> Norm | None: ...
    @overload
    def _value(self, name: Literal["k", "phi", "sigma", "gamma"], /) -> float: ...
    @overload
    def _value(self, name: Literal["weights"], /) -> list[float] | None: ...
    @overload
    def _value(self, name: Literal["top_k"], /) -> int | None: ...
    @overload
    def _value(self, name: Literal["explain", "reads_scores", "takes_weights"], /) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...

def fuse(
    runs: Iterable[_Run],
    /,
    *,
    options: FusionOptions | None = None,
    content_keys: Sequence[_IdList] | None = None,
    **kwargs: Unpack[_FusionKeywords],
) -> Fused:
    """Fuses ranked runs by ``method``; with ``explain=True`` also says why each hit scored what it did.

    Every method is ranx's definition (DBSF is Qdrant's, relative_score Weaviate's); the formulas
    are in docs/fusion-methods.md. ``fuse(lists)`` with plain id lists returns exactly ``rrf(lists)``.

    The options are a ``FusionOptions`` (``options=``) or its keywords (not both), described below.

    Args:
        runs: one entry per ranked list, best first. Each is a sequence of ids (as for ``rrf``), a
            sequence of ``(id, score)`` pairs, or an ``(ids, scores)`` tuple of two aligned sequences or
            arrays. Scores must be finite. The rank is the position in the list.
        method: rank methods (scores ignored): ``rrf``, ``isr``, ``log_isr``, ``logn_isr``, ``rbc``,
            ``bordafuse``/``w_bordafuse``, ``condorcet``/``w_condorcet``. Score methods (every list
            needs scores): ``combsum``/``wsum``, ``combmnz``/``wmnz``, ``combmax``, ``combmin``,
            ``combmed``, ``combanz``, ``combgmnz``, ``mixed``, ``dbsf`` (Qdrant), ``relative_score``
            (Weaviate). A ``w_`` name is its unweighted twin with ``weights``.
        norm: score normalisation per list for score methods: ``none``, ``min-max`` (default),
            ``min-max-inverted`` (distances), ``max``, ``sum``, ``zmuv``, ``rank``, ``borda``. Rank
            methods, ``dbsf`` and ``relative_score`` take none.
        k: the RRF constant, finite > 0.
        weights: one finite weight >= 0 per list (None: all 1.0); a weight-0 list is ignored entirely.
            Methods without a weighted form (isr, log_isr, logn_isr, combmax/min/med/anz/gmnz) refuse it.
        top_k, tie_break: as for ``rrf``.
        duplicates: what a repeated id (or content key) inside one list means: ``"first"`` (only its
            first occurrence counts), ``"max"`` (its best value at its first rank) or ``"sum"`` (its
            values add up, as chunks of one document in LangChain's EnsembleRetriever).
        content_keys: one key list per run, aligned with its ids: ids with equal keys are one document
            (reported under the id of its best-ranked occurrence).
        explain: also return ``Fused.explain``: per hit, one ``Contribution`` per list that gave it
            something, in list order, summing exactly to its score (Condorcet: contributions are NaN,
            its score is a position). Costs nothing when False.
        phi: RBC persistence in (0, 1). sigma: logn_isr smoothing in [0, 1]. gamma: combgmnz exponent,
            finite. All of k, phi, sigma and gamma are checked whichever method is asked for.

    Raises:
        FusionError: unknown method or norm, a score method given a list without scores, a NaN score,
            a parameter out of range, or options a method cannot use (with the fix in the message).
            Also a fused score that leaves the float range (finite scores or weights so large that a
            sum, product or normalisation gives inf or NaN): the message names the document.
        TypeError: a wrong type, such as a str score or mixed str and int ids.
    """

def fuse_batch(
    queries: Iterable[Iterable[_Run]],
    /,
    *,
    options: FusionOptions | None = None,
    threads: int | None = None,
    **kwargs: Unpack[_FusionKeywords],
) -> list[Fused]:
    """``[fuse(runs, ...) for runs in queries]`` in one call across the boundary (no content keys).

    All inputs are copied into Rust first, then the GIL is released for the whole batch; with
    ``threads`` > 1 (an int from 1 to 1024; default: ``FANFUSE_NUM_THREADS``, else 1) batches of 256
    queries or more run on a thread pool, as ``rrf_batch``. ``weights``, when given, must have one
    entry per run for every query. An error names the query: ``queries[q]: runs[i] has no scores ...``.
    """

# --- Run files: reading, fusing, writing and evaluating whole runs ---------------------------

@final
class Run:
    """A run held in Rust: queries in order of first appearance (a fused run: in the order of a fused
    run file), hits of a query in rank order."""

    @staticmethod
    def from_columns(
        qids: Sequence[str],
        docids: Sequence[str],
        scores: Sequence[float] | npt.NDArray[np.floating],
        /,
        *,
        name: str = "run",
        rank_from: RankFrom = "score",
    ) -> Run:
        """Builds a run from aligned columns, one row per hit (rows of a query need not be adjacent)."""
    @property
    def name(self) -> str:
        """The file name the run was read from (``"fused"`` for a fusion result)."""
    def __len__(self) -> int: ...
    def qids(self) -> list[str]:
        """Query ids in run order."""
    def subset(self, qids: Sequence[str], /) -> Run:
        """The queries of ``qids`` only, in this run's order (ids the run lacks are skipped)."""
    def columns(self) -> tuple[list[str], list[str], list[int], list[float]]:
        """``(qid, docid, rank, score)`` columns: one row per hit, hits in rank order (rank from 1)."""
    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """The Arrow PyCapsule protocol: the (schema, array) capsules of a record batch of the
        ``columns()`` (qid and docid utf8, rank int64, score float64), built on each call, so that
        ``pyarrow.record_batch(run)`` (or any reader of the protocol) takes a Run directly."""
    def write(
        self,
        path: str | os.PathLike[str],
        /,
        *,
        format: RunFormat = "trec",
        tag: str = "fanfuse",
        collection: str | None = None,
    ) -> None:
        """Writes the run atomically (temporary file, then rename) as TREC or MT-RAG JSONL.

        TREC refuses an id that is empty or holds whitespace or a control character, and a query id
        starting with ``#`` (FusionError: MT-RAG JSONL holds any id), and such a ``tag``
        (InvalidSetting).
        """

@final
class Qrels:
    """Relevance judgments held in Rust (integer grades; >= 1 is relevant)."""

    def __len__(self) -> int: ...
    def qids(self) -> list[str]:
        """Judged query ids in file order."""
    def subset(self, qids: Sequence[str], /) -> Qrels:
        """The judgments of ``qids`` only, in file order (ids not judged are skipped): a training fold."""

def read_run(path: str | os.PathLike[str], /, *, rank_from: RankFrom = "score") -> Run:
    """Reads a TREC (``qid Q0 docid rank score tag``) or MT-RAG JSONL run, plain or gzip.

    The format is recognised from the content. ``rank_from`` orders each query's hits: ``"score"``
    (default: descending score, ties by docid descending, as trec_eval reads a run), ``"rank"`` (the
    rank column) or ``"file"`` (file order). Raises FusionError with ``file:line`` on malformed input,
    including characters that trec_eval and Python readers would split differently (docs/run-files.md).
    """

def read_qrels(path: str | os.PathLike[str], /) -> Qrels:
    """Reads TREC qrels (``qid iter docid rel``) or BEIR TSV (``query-id corpus-id score``, header first)."""

def fuse_runs(
    runs: Sequence[Run],
    /,
    *,
    options: FusionOptions | None = None,
    threads: int | None = None,
    model: FusionModel | None = None,
    **kwargs: Unpack[_RunFusionKeywords],
) -> Run:
    """Fuses runs query by query (the union of their queries; a missing query contributes nothing).
    The queries come in the order of a fused run file (docs/run-files.md, "Order of a fused run"),
    each query of a run being one group.

    The options are a ``FusionOptions`` or its keywords (not both), all but ``duplicates`` and
    ``explain`` (refused: a run holds a docid once a query, and has no place for contributions).
    ``top_k`` left unset keeps 1000 hits a query (``RUN_FILE_TOP_K``), as trec_eval reads a run.

    ``method`` (default ``"rrf"``) and ``norm`` are those of ``fuse``; score methods use each hit's
    score from the file. ``model`` (from ``train_fusion``) fuses by a trained method instead; the
    runs are given in the order it was trained on, and ``method`` is then left unset or names it.
    ``phi``, ``sigma`` and ``gamma`` are those of ``fuse`` (rbc, logn_isr, combgmnz).
    ``top_k`` and ``threads`` are checked as for ``rrf_batch`` (``threads`` default:
    ``FANFUSE_NUM_THREADS``, else 1). A fused score beyond the float range
    raises FusionError naming the query and the document.
    """

@overload
def fuse_files(
    inputs: Sequence[str | os.PathLike[str] | Run],
    output: str | os.PathLike[str],
    /,
    *,
    options: FusionOptions | None = None,
    rank_from: RankFrom = "score",
    format: RunFormat = "trec",
    collection: str | None = None,
    tag: str = "fanfuse",
    threads: int | None = None,
    progress: Callable[[int, int, int], object] | None = None,
    model: FusionModel | None = None,
    **kwargs: Unpack[_RunFusionKeywords],
) -> dict[str, int | bool]: ...
@overload
def fuse_files(
    inputs: Sequence[str | os.PathLike[str] | Run],
    output: None,
    /,
    *,
    options: FusionOptions | None = None,
    rank_from: RankFrom = "score",
    format: RunFormat = "trec",
    collection: str | None = None,
    tag: str = "fanfuse",
    threads: int | None = None,
    progress: Callable[[int, int, int], object] | None = None,
    model: FusionModel | None = None,
    **kwargs: Unpack[_RunFusionKeywords],
) -> Run:
    """Streams run files through fusion into ``output`` (written atomically), or, with ``output``
    None, into a Run returned in memory (named ``fused``): the queries and hits the file would hold,
    in its order (``format`` and ``tag`` then only checked; ``collection`` is the Run's).

    An input is a path (str or ``os.PathLike``, as ``output`` is), or a Run (e.g. read from a table
    by ``runs_from_table``), which is replayed in the order of its hits' lines (rows), so it fuses
    exactly as the same lines in a file.
    The options and ``model`` are those of ``fuse_runs``.

    Memory stays flat when the inputs are grouped by query in the same order; otherwise the whole
    input is held (see docs/run-files.md). Returns ``{"queries", "input_lines", "buffered"}`` (or the Run).
    ``progress``: called about every 50 ms, and once more before the output is written, as
    ``progress(bytes_read, bytes_total, queries)`` (input bytes, compressed for gzip; queries fused so
    far), with the GIL held; an exception it raises stops the run (the output is not written) and is
    raised here.
    ``threads``: fusion threads, an int from 1 to 1024 (default: ``FANFUSE_NUM_THREADS``, else 1).
    """

def runs_from_table(
    table: object,
    /,
    *,
    name: str = "table",
    run_column: str | None = None,
    runs: Sequence[str] | None = None,
    rank_from: RankFrom = "score",
) -> list[Run]:
    """Reads the runs of an Arrow table (an object with ``__arrow_c_stream__`` or ``__arrow_c_array__``).

    Columns: ``qid`` (or ``q_id``, ``query-id``), ``docid`` (or ``doc_id``, ``corpus-id``): utf8,
    large_utf8, string_view or integers (read as decimal text), dictionary-encoded too; ``score``
    (integers or floats, finite) and/or ``rank`` (integers); other columns are ignored. One run, or
    with ``run_column`` one run per label of ``runs``, in that order. Errors name ``name:row``.
    Without a score column (``rank_from`` "rank" or "file"), scores are NaN: score methods refuse them.
    """

def fuse_tables(
    tables: Sequence[object],
    /,
    *,
    names: Sequence[str],
    run_column: str | None = None,
    runs: Sequence[str] | None = None,
    rank_from: RankFrom = "score",
    options: FusionOptions | None = None,
    threads: int | None = None,
    **kwargs: Unpack[_RunFusionKeywords],
) -> ArrowBatch:
    """The work of ``fanfuse.fuse_table`` in one call: each table (``names[i]`` in errors) one run, or
    with ``run_column`` one run per label of ``runs``, read as ``runs_from_table`` reads them and
    fused as ``fuse_files`` fuses the same rows written as files. One row per fused hit (qid, docid,
    rank, score, order), queries in the order ``fuse_files`` writes them."""

def qrels_from_table(table: object, /, *, name: str = "qrels") -> Qrels:
    """Reads judgments from an Arrow table: qid, docid and an integer ``relevance`` (or ``score``) column."""

# A record batch the core built (``fuse_tables``; the row batches of ``fanfuse._core._internal``).

@final
class ArrowBatch:
    """A record batch built by the core: ``pyarrow.record_batch(batch)`` (or any reader of the Arrow
    PyCapsule protocol) takes it without copying."""

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """The (schema, array) capsules of the batch; each call exports it anew."""
    def __len__(self) -> int: ...

@final
class FusionModel:
    """A trained fusion model (``train_fusion``): one table per run, read by position.

    The methods and their tables: docs/fusion-methods.md.
    """

    def __eq__(self, value: object, /) -> bool: ...
    @property
    def method(self) -> str:
        """The trained method (one of ``TRAINED_METHODS``)."""
    @property
    def runs(self) -> int:
        """How many runs it fuses, in the order it was trained on."""
    @property
    def segments(self) -> int | None:
        """probfuse's segment count (None for the other methods)."""
    @property
    def window(self) -> int | None:
        """slidefuse's half-window (None for the other methods)."""
    @property
    def tables(self) -> list[list[float]]:
        """Per run, the learnt values the method reads by position."""
    def to_json(self) -> str:
        """The model as JSON (format, version, method, sizes, tables); floats round-trip exactly."""
    @staticmethod
    def from_json(text: str, /) -> FusionModel:
        """Reads ``to_json``'s output; FusionError names a bad or unknown field (``tables[1][3]``)."""
    def save(self, path: str | os.PathLike[str], /) -> None:
        """Writes the JSON to ``path`` atomically (temporary file, then rename)."""
    @staticmethod
    def load(path: str | os.PathLike[str], /) -> FusionModel:
        """Reads a saved model; FusionError names the path and the bad field."""

def train_fusion(
    runs: Sequence[Run],
    qrels: Qrels,
    /,
    *,
    method: TrainedMethod,
    segments: int | None = None,
    window: int | None = None,
) -> FusionModel:
    """Trains a method of ``TRAINED_METHODS`` on ``runs`` (in the order they will be fused), as ranx.

    Training queries are the qrels' queries (a run lacking one has an empty list there); relevant
    means a judgment >= 1. ``segments``: probfuse's segment count (default 25, 1 to 1e6);
    ``window``: slidefuse's half-window (default 5, 0 to 1e6); other methods refuse them.
    """

METRICS: tuple[str, ...]
"""ranx's metric names; ``evaluate`` takes each as ``NAME``, ``NAME@K``, ``NAME-lN`` or ``NAME@K-lN``."""

TREC_EVAL_METRICS: tuple[str, ...]
"""trec_eval's names of the same metrics (``K``: the cut-off), also accepted by ``evaluate``."""

def evaluate(
    run: Run, qrels: Qrels, /, *, metrics: Sequence[str]
) -> tuple[list[str], dict[str, list[float]]]:
    """Per-query values of each metric, for the queries in both run and qrels.

    The run is read as trec_eval reads it: by score descending, equal scores by docid descending.
    Metrics (``METRICS``): ``hits``, ``hit_rate``, ``precision``, ``recall``, ``f1``, ``r-precision``,
    ``bpref``, ``rbp.P`` (persistence 0.P, e.g. ``rbp.95``), ``mrr``, ``map``, ``dcg``, ``dcg_burges``,
    ``ndcg``, ``ndcg_burges``; ``@K`` keeps the first K retrieved documents (not for ``r-precision`` and
    ``bpref``), ``-lN`` makes judgments below N non-relevant (default 1), e.g. ``ndcg@10-l2``. trec_eval's
    names (``TREC_EVAL_METRICS``: ``P_5``, ``ndcg_cut_10``, ``recip_rank``, ``Rprec``, ...) are accepted
    too; names are case-insensitive. Values equal pytrec_eval's where trec_eval defines the measure,
    ranx's elsewhere (docs/metrics.md). Returns the evaluated query ids and, per metric name as given,
    the values.
    """

def metric_depth(metric: str, /) -> int | None:
    """The deepest rank ``metric`` (a name ``evaluate`` takes) reads: its cut-off ``K``, or None when
    it reads the whole run. A fused run cut at that depth evaluates exactly as the whole run does.
    Raises InvalidSetting for a name ``evaluate`` refuses."""

def randomization_test(
    a: Sequence[float] | npt.NDArray[np.floating],
    b: Sequence[float] | npt.NDArray[np.floating],
    /,
    *,
    iterations: int = 10000,
    seed: int = 0,
) -> float:
    """Two-sided paired randomization (sign-flip) test of mean(a) != mean(b); returns the p-value.

    With n pairs and 2**n <= ``iterations``, every sign flip is counted and the p-value is exact:
    (flips whose |sum| reaches the observed one, the sample itself included) / 2**n; ``seed`` is
    unused. Otherwise ``iterations`` random flips give (count + 1) / (iterations + 1).
    ``iterations``: an int from 1 to 2**32 - 1; ``seed``: an int from 0 to 2**64 - 1. Raises
    FusionError for unequal lengths, no pairs, or a value that is not finite (a NaN would make any
    difference look significant).
    """

def paired_t(
    a: Sequence[float] | npt.NDArray[np.floating], b: Sequence[float] | npt.NDArray[np.floating], /
) -> tuple[float, float]:
    """Two-sided paired Student t-test of mean(a) != mean(b): (t, p-value), as
    ``scipy.stats.ttest_rel(a, b)`` gives them; t = mean(a - b) / (sd(a - b) / sqrt(n)).

    With zero variance of the differences t is +-inf and p = 0 (as scipy), or t = 0 and p = 1 when
    they are all zero (scipy: NaN). Raises FusionError for unequal lengths, fewer than two pairs, or a
    value that is not finite.
    """

def wilcoxon_test(
    a: Sequence[float] | npt.NDArray[np.floating], b: Sequence[float] | npt.NDArray[np.floating], /
) -> tuple[float, float]:
    """Two-sided Wilcoxon signed-rank test of paired samples: (min(R+, R-), p-value), as
    ``scipy.stats.wilcoxon(a, b)`` gives them by default (zero differences dropped, average ranks,
    no continuity correction; exact distribution up to 50 untied pairs without zeros, every sign flip
    up to 13 pairs with zeros or ties, the normal approximation otherwise). All differences zero:
    p = 1 (scipy: NaN). Raises FusionError for unequal lengths, no pairs, or a value that is not finite.
    """

def tukey_hsd(
    groups: Sequence[Sequence[float] | npt.NDArray[np.floating]], /
) -> list[list[tuple[float, float]]]:
    """Tukey's HSD over independent groups, as ``scipy.stats.tukey_hsd(*groups)``: entry [i][j] is
    (mean_i - mean_j, p-value), the p-value from the studentized range distribution with N - k
    degrees of freedom (computed here by quadrature). Raises FusionError for fewer than two groups,
    an empty group, no more values than groups, or a value that is not finite.
    """

# --- The readers' bounds: run files, qrels and the corpus (``_internal._Lines``) ---------------

READER_LIMITS: dict[str, int]
"""The longest line (``"line"``) and field or id (``"field"``) the readers accept, in bytes."""
