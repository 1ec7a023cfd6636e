"""Every number fanfuse takes from a caller, in one table: its name, the range it accepts and what it means;
the bounds of one request to `fanfuse serve`; `check_choice`, the one check of a named choice (a str not
among the names is refused by the error the caller names, ``InvalidSetting`` by default, anything else by
``TypeError``: ``{name} must be one of a, b (got ...)``), whose parameter is typed as a ``Literal`` of the
names, so that a type checker refuses a misspelled name before anything runs.

Each entry point derives its checks from here, so that a range is written once:

- the Python API checks an argument with ``check_int(key, value)`` or ``check_float``: a wrong type is a
  ``TypeError``, a value out of range (or NaN, or infinite) an ``OutOfRange`` (a ``FusionError`` for a row
  marked ``fusion_option``), each naming the argument and what it accepts;
- the command line builds each numeric flag's argparse type and help from its row
  (``fanfuse.cli._common.number_option``): ``argument --top-k: must be an int from 1 to 10000 (got '0')``;
- the service builds each numeric request field from its row (``fanfuse.service.schema``), and so its
  OpenAPI schema; it answers 422 naming the field.

Rows marked ``core`` are arguments the Rust core checks itself (the fusion functions, the tests of
``fanfuse eval``): the row states what the core accepts, for the flags and fields that pass them on, and
``tests/test_limits.py`` holds the core to it at every bound. Of those, the rows marked ``fusion_option``
are fusion options, which the core refuses as ``FusionError``; it refuses the others (threads, a test's
iterations) as ``OutOfRange``, as the library does.

Nothing is allocated by a caller's number, only by what is there (hits found, queries read): a count
without an upper bound here (a cache's size, hits kept per fused query) costs no more than its input, a
huge one means "all". Hits asked of a retriever are bounded all the same, for backends outside fanfuse; a
count derived from a caller's number (each branch's hits: twice top_k) is clamped to the row of what it
feeds (``derived_int``), so a number accepted is never refused half-way. Other counts are bounded by what
is there once the input is known (folds by the judged queries, the baseline by the runs), and say so.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from fanfuse._core import FusionError
from fanfuse.errors import InvalidSetting, OutOfRange

__all__ = [
    "CONVERSATION",
    "LIMITS",
    "REQUEST",
    "TANTIVY_ARENA",
    "Limit",
    "check_choice",
    "check_float",
    "check_int",
    "check_sequence",
    "closest_names",
    "derived_int",
    "optional_float",
    "optional_int",
]


@dataclass(frozen=True, slots=True)
class Limit:
    """One argument's range. ``kind`` int: a whole number (a bool is refused); float: a real number,
    always finite. ``low``/``high`` None: unbounded on that side; ``*_open``: the bound itself is
    refused. ``core``: the core checks it too; ``fusion_option``: it is a fusion option, refused as
    ``FusionError``."""

    name: str
    kind: type[int] | type[float]
    meaning: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    core: bool = False
    fusion_option: bool = False

    def accepted(self) -> str:
        """What the argument accepts, as every message and help text says it."""
        if self.kind is int:
            if self.high is None:
                return f"an int >= {int(self.low or 0)}"
            return f"an int from {int(self.low or 0)} to {int(self.high)}"
        if self.low is not None and self.high is not None:
            opening, closing = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"a number in {opening}{self.low:g}, {self.high:g}{closing}"
        if self.low is not None:
            return f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"a finite number {'<' if self.high_open else '<='} {self.high:g}"
        return "a finite number"

    def admits(self, value: float) -> bool:
        """Whether the number `value` (of the right kind) is in range."""
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return self.high is None or not (value > self.high or (self.high_open and value == self.high))

    def check(self, value: object, name: str | None = None) -> int | float:
        """`value` as an int or float, or TypeError / OutOfRange (FusionError: a fusion option)
        naming `name` (default: the row's)."""
        name = name or self.name
        number = _as_number(value, self.kind)
        if number is None:
            raise TypeError(f"{name} must be {self.accepted()} (got {type(value).__name__})")
        if not self.admits(number):
            # A fusion option's refusal is the core's, whoever checks first.
            refusal = FusionError if self.fusion_option else OutOfRange
            raise refusal(f"{name} must be {self.accepted()} (got {_shown(number)})")
        return number


def _shown(number: float) -> str:
    """The value as a message shows it: a huge int by its size, not its thousands of digits."""
    if isinstance(number, int) and abs(number) >= 2**64:
        return f"{'a negative' if number < 0 else 'an'} int of {abs(number).bit_length()} bits"
    return f"{number!r}"


def _as_number(value: object, kind: type[int] | type[float]) -> int | float | None:
    """`value` as a Python int (kind int) or float (kind float), or None for the wrong type. NumPy's
    numbers count; a bool does not (``top_k=True`` is a mistake, not 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if not isinstance(value, numbers.Integral):
        return None if kind is int else float(value)
    whole = operator.index(value)
    if kind is int:
        return whole
    try:
        return float(whole)
    except OverflowError:  # beyond the float range: infinite as a float, and refused as such
        return math.inf if whole > 0 else -math.inf


# The most hits one retriever is asked for: past any evaluation depth (TREC's is 1000), and a bound
# for backends that would size a buffer by it (the framework adapters pass it on).
_MAX_HITS = 10_000
_MAX_SECONDS = 86_400.0  # a day
_MAX_THREADS = 1024  # the core's (rust/batch.rs)
# The bytes of indexing buffer Tantivy accepts per indexing thread.
TANTIVY_ARENA = (15_000_000, 4_293_967_295)
_MAX_TRAINED_SIZE = 1_000_000  # the core's (rust/fusion/trained.rs)
# The most partitions a block of a run is split into: the core's (rust/runs/read/rows.rs). Each costs a
# slot in every block's batches and tasks of its own, so past the queries none is useful.
_MAX_PARTITIONS = 100_000
# The longest text an encoder is told to read, in tokens: past any model's positions, and a bound for
# the tokenizer, which takes a machine-sized int.
_MAX_TOKENS = 1 << 20

#: Every numeric argument, by key. The key is the argument's Python name, except where one name has
#: two meanings (``top_k`` of a search and of a fused run).
LIMITS: dict[str, Limit] = {
    # multi-query search (fanfuse.multiquery, `fanfuse search`, the service)
    "top_k": Limit("top_k", int, "hits a search returns", low=1, high=_MAX_HITS),
    "branch_k": Limit(
        "branch_k", int, "hits asked of each (variant, retriever) branch", low=1, high=_MAX_HITS
    ),
    "rerank_window": Limit("rerank_window", int, "fused hits the reranker scores", low=1, high=_MAX_HITS),
    "return_k": Limit("return_k", int, "reranked hits returned", low=1, high=_MAX_HITS),
    "mmr_lambda": Limit("mmr_lambda", float, "MMR: relevance's weight against novelty", low=0, high=1),
    "retriever_k": Limit("k", int, "hits asked of one retriever (`search(query, k)`)", low=1, high=_MAX_HITS),
    "max_variants": Limit(
        "max_variants", int, "query variants of a search, the original included", low=1, high=5
    ),
    "min_score": Limit("min_score", float, "hits scoring below it are dropped"),
    "max_concurrency": Limit("max_concurrency", int, "branches of one search running at once", low=1),
    "max_workers": Limit("max_workers", int, "threads per sync retriever, and for the reranker", low=1),
    "branch_timeout": Limit(
        "branch_timeout", float, "seconds a branch may take", low=0, low_open=True, high=_MAX_SECONDS
    ),
    "feedback_docs": Limit(
        "feedback_docs", int, "top documents read for feedback terms", low=1, high=_MAX_HITS
    ),
    "feedback_terms": Limit("feedback_terms", int, "feedback terms added to the variant", low=1),
    "original_weight": Limit(
        "original_weight",
        float,
        "RM3: the share of the question's own words, the rest going to the feedback terms",
        low=0,
        high=1,
        high_open=True,
    ),
    "feedback_weight": Limit(
        "feedback_weight", float, "Rocchio: how far the query vector moves toward its top documents", low=0
    ),
    # the conversation (HistoryExpander)
    "min_idf": Limit("min_idf", float, "the least BM25 idf of an earlier turn's topic word", low=0),
    "previous_weight": Limit("previous_weight", float, "a topic word's weight from the previous turn", low=0),
    "older_weight": Limit("older_weight", float, "a topic word's weight from older turns", low=0),
    "history_weight": Limit(
        "weight", float, "a history variant's lists, as a share of the question's", low=0, low_open=True
    ),
    "max_own_words": Limit(
        "max_own_words", int, "content words of a question that still depends on its history", low=0
    ),
    "independent_weight": Limit(
        "independent_weight", float, "the share of that weight a self-contained question gets", low=0, high=1
    ),
    "maxsize": Limit("maxsize", int, "expansions a VariantCache keeps", low=1),
    "ttl": Limit("ttl", float, "seconds a cached expansion is kept", low=0, low_open=True),
    "timeout": Limit(
        "timeout", float, "seconds an LLM request may take", low=0, low_open=True, high=_MAX_SECONDS
    ),
    "temperature": Limit("temperature", float, "sampling temperature of the LLM", low=0, high=2),
    "max_tokens": Limit("max_tokens", int, "the longest answer the LLM may write, in tokens", low=1),
    # fusion (the core)
    "k": Limit("k", float, "the RRF constant", low=0, low_open=True, core=True, fusion_option=True),
    "weight": Limit(
        "weight", float, "a list's fusion weight (0: ignored)", low=0, core=True, fusion_option=True
    ),
    "phi": Limit(
        "phi",
        float,
        "rbc: persistence",
        low=0,
        high=1,
        low_open=True,
        high_open=True,
        core=True,
        fusion_option=True,
    ),
    "sigma": Limit("sigma", float, "logn_isr: smoothing", low=0, high=1, core=True, fusion_option=True),
    "gamma": Limit("gamma", float, "combgmnz: exponent of the hit count", core=True, fusion_option=True),
    "fused_top_k": Limit(
        "top_k", int, "hits kept per query of a fused run", low=0, core=True, fusion_option=True
    ),
    "threads": Limit("threads", int, "fusion threads", low=1, high=_MAX_THREADS, core=True),
    "segments": Limit(
        "segments", int, "probfuse: segments per list", low=1, high=_MAX_TRAINED_SIZE, core=True
    ),
    "window": Limit("window", int, "slidefuse: half-window", low=0, high=_MAX_TRAINED_SIZE, core=True),
    # evaluation, comparison and tuning
    "iterations": Limit(
        "iterations", int, "sign flips of the randomization test", low=1, high=2**32 - 1, core=True
    ),
    "seed": Limit("seed", int, "seed of a random draw", low=0, high=2**64 - 1, core=True),
    "alpha": Limit("alpha", float, "significance level", low=0, high=1, low_open=True, high_open=True),
    "p_value": Limit("p_value", float, "a test's p-value", low=0, high=1),
    "baseline": Limit("baseline", int, "index of the baseline run, from 0 (below the runs)", low=0),
    "folds": Limit("folds", int, "cross-validation folds (at most the judged queries)", low=2),
    "block_bytes": Limit("block_bytes", int, "bytes of a run file one Dask task reads", low=1),
    "partitions": Limit(
        "partitions", int, "partitions of the Dask shuffle (at most the queries)", low=1, high=_MAX_PARTITIONS
    ),
    # indexes and the service
    "index_threads": Limit("threads", int, "indexing threads", low=1, high=_MAX_THREADS),
    "encoder_threads": Limit(
        "threads", int, "an encoder's threads (onnxruntime's intra-op)", low=1, high=_MAX_THREADS
    ),
    "query_cache_size": Limit(
        "query_cache_size", int, "query vectors a dense retriever keeps (0: none)", low=0
    ),
    "heap_size": Limit(
        "heap_size",
        int,
        "bytes of Tantivy's indexing buffer, shared by the threads",
        low=TANTIVY_ARENA[0],
        high=TANTIVY_ARENA[1] * _MAX_THREADS,
    ),
    "batch_size": Limit("batch_size", int, "documents embedded at once", low=1),
    "max_length": Limit("max_length", int, "tokens an encoder reads of a text", low=2, high=_MAX_TOKENS),
    "vector_dimensions": Limit(
        "dimensions", int, "dimensions of a pgvector column (pgvector's most)", low=1, high=16_000
    ),
    "normalization": Limit(
        "normalization", int, "ts_rank_cd's normalization flags (0: none)", low=0, high=63
    ),
    "dimensions": Limit("dimensions", int, "dimensions of the TF-IDF + SVD vectors", low=1),
    "svd_seed": Limit(
        "seed", int, "seed of the SVD (NumPy's generator takes 32 bits)", low=0, high=2**32 - 1
    ),
    "port": Limit("port", int, "TCP port (0: any free one)", low=0, high=65_535),
    "workers": Limit("workers", int, "server processes sharing the port", low=1, high=64),
    "request_timeout": Limit(
        "request_timeout",
        float,
        "seconds a connection may take to send a whole request",
        low=0,
        low_open=True,
        high=_MAX_SECONDS,
    ),
}


def check_int(key: str, value: object, name: str | None = None) -> int:
    """`value` checked against the int row `key` of LIMITS; errors name `name` (default: the row's)."""
    return int(_row(key, int).check(value, name))


def check_float(key: str, value: object, name: str | None = None) -> float:
    """`value` checked against the number row `key` of LIMITS, as a float."""
    return float(_row(key, float).check(value, name))


def check_sequence(value: object, name: str, what: str) -> list[object]:
    """The items of a list or tuple (or another ordered iterable, read once) of `what`: a bare str is
    no sequence of names (``metrics="ndcg@10"`` is not seven metrics), and a set has no order."""
    kind = type(value).__name__
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a sequence of {what} (got {kind})")
    if isinstance(value, set | frozenset | dict):
        raise TypeError(f"{name} has no order (got {kind}); pass a list or tuple of {what}")
    return list(value)


_Choice = TypeVar("_Choice", bound=str)


def check_choice(
    name: str, value: object, accepted: Iterable[_Choice], error: type[Exception] = InvalidSetting
) -> _Choice:
    """`value` if it is one of the names `accepted` (typed as they are: a ``Literal`` of them is
    what the caller's parameter declares); else `error` (a str not among them) or TypeError (not a
    str), naming `name` and listing the names."""
    names = tuple(accepted)
    for known in names:
        if isinstance(value, str) and value == known:
            return known
    got = repr(value) if isinstance(value, str) else type(value).__name__
    refusal = error if isinstance(value, str) else TypeError
    raise refusal(f"{name} must be one of {', '.join(names)} (got {got})")


def closest_names(name: str, names: Iterable[str]) -> list[str]:
    """The (at most two) names of `names` closest to a misspelt `name`, closest first: what a refusal
    of an unknown flag or field suggests."""
    import difflib  # only a refusal pays for it

    return difflib.get_close_matches(name, list(names), n=2, cutoff=0.7)


def derived_int(key: str, value: int) -> int:
    """A count fanfuse derives from a caller's numbers (the hits asked of each branch: twice top_k;
    a retriever's candidates: a multiple of k), brought within the range of row `key`, the row of
    what it feeds. A caller's number is checked against its own row; what is computed from it must
    not be refused after that, so it is clamped, never checked: ``top_k=10000`` asks each branch
    for 10,000 hits, not 20,000."""
    limit = _row(key, int)
    low = int(limit.low) if limit.low is not None else value
    high = int(limit.high) if limit.high is not None else value
    return max(low, min(value, high))


def optional_int(key: str, value: object, name: str | None = None) -> int | None:
    """As `check_int`, with None passed through (None: the default applies)."""
    return None if value is None else check_int(key, value, name)


def optional_float(key: str, value: object, name: str | None = None) -> float | None:
    """As `check_float`, with None passed through."""
    return None if value is None else check_float(key, value, name)


def _row(key: str, kind: type) -> Limit:
    limit = LIMITS[key]
    if limit.kind is not kind:
        raise AssertionError(f"LIMITS[{key!r}] holds {limit.kind.__name__}s, not {kind.__name__}s")
    return limit


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """The most one request to `fanfuse serve` may hold: what it asks for and what its body spends.
    A body past ``body_bytes`` is answered 413 before it is parsed; the others 422, naming the field.
    ``arrival_seconds`` is the default time a connection has to send a whole request before it is
    closed (`fanfuse serve --request-timeout`)."""

    body_bytes: int = 1_048_576
    arrival_seconds: float = 20.0
    top_k: int = 1000
    query_chars: int = 10_000
    filter_keys: int = 64
    filter_key_chars: int = 256
    filter_values: int = 1000
    filter_value_chars: int = 1000


#: The bounds of one request to the service (docs/service.md).
REQUEST = RequestLimits()


@dataclass(frozen=True, slots=True)
class ConversationLimits:
    """The bounds of the conversation a search is given (``fanfuse.multiquery.conversation``), from every
    entry point alike: more turns than ``turns``, or a turn longer than ``turn_chars`` (as long as a
    question may be), is refused as a mistake; of what is accepted, the most recent ``kept_turns`` turns
    and no more than ``kept_chars`` characters in all are used (what a follow-up refers to is almost
    always in the last few turns, and a bounded history bounds every expander's cost, an LLM prompt's
    above all)."""

    turns: int = 1000
    turn_chars: int = REQUEST.query_chars
    kept_turns: int = 10
    kept_chars: int = 4_000


#: The bounds of a search's conversation (docs/multiquery.md).
CONVERSATION = ConversationLimits()
