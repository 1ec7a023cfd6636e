"""The errors fanfuse raises, each named for what went wrong; the messages name the argument (or
file:line, or request field) and say what is accepted.

- ``FusionError`` (the core's, a ``ValueError``): fusion input refused (a ranked list, a run,
  qrels, a file of them, a sample of a significance test, a trained model) or a fusion option
  (method, k, weights, ...).
- ``InputError`` (a ``ValueError``): other input a caller gave, refused before any fusion:
  ``OutOfRange`` (a number outside its range, most declared in ``fanfuse.limits``: threads, a
  test's iterations too), ``InvalidConversation`` (a turn that is no message) and its
  ``ConversationTooLong`` (more turns or characters than ``fanfuse.limits.CONVERSATION`` accepts),
  ``TooFewQueries`` (the judged queries cannot carry what was asked: folds, a test, a mean),
  ``InvalidSetting`` (a setting, argument or flag that is not one accepted, or that does not go with
  another given: a metric, a run file's format, the method to train too), ``InvalidFilter`` (a
  metadata filter), ``InvalidCorpus`` (documents to index or search: a corpus file or record, a
  duplicate id), ``InvalidIndex`` (an index folder that cannot be opened, read or written),
  ``InvalidEncoder`` (an encoder's model files, or the vectors an encoder made), ``InvalidOutput``
  (a file or folder to write that cannot be written, or that is one of the inputs).
- ``MissingExtra`` (an ``ImportError``): a feature whose optional extra is not installed; ``extra``
  names it, the message says what to install.
- ``SearchFailed`` (a ``RuntimeError``): a search with nothing to fuse; ``AllBranchesFailed``
  (``fanfuse.multiquery``): every retriever failed on every variant, ``branches`` says how.

``except ValueError`` catches every refusal of input. The command line ends on each of these with one
line and exit status 2; the service answers a refused input 422 naming the field, a failed search 503.
"""

from __future__ import annotations

# The binding defines the classes the core raises (its refusals of outputs and settings too), so the
# core needs no re-mapping here; the other classes derive from its InputError.
from fanfuse._core import FusionError, InputError, InvalidOutput, InvalidSetting, OutOfRange

__all__ = [
    "ConversationTooLong",
    "FusionError",
    "InputError",
    "InvalidConversation",
    "InvalidCorpus",
    "InvalidEncoder",
    "InvalidFilter",
    "InvalidIndex",
    "InvalidOutput",
    "InvalidSetting",
    "MissingExtra",
    "OutOfRange",
    "SearchFailed",
    "TooFewQueries",
]


class InvalidConversation(InputError):
    """A conversation turn that is not a user turn or a ``{"role", "content"}`` message."""


class ConversationTooLong(InvalidConversation):
    """A conversation with more turns, or a turn with more characters, than are accepted."""


class TooFewQueries(InputError):
    """Too few (judged) queries for what was asked: folds, a test, a mean over the queries."""


class InvalidFilter(InputError):
    """A metadata filter that is not a map of keys to the values it accepts, or that a retriever
    cannot take."""


class InvalidCorpus(InputError):
    """Documents that cannot be indexed or searched: a corpus file or record (an id, a text, a
    title, metadata), none at all, a duplicate id, a document a retriever returned without an id."""


class InvalidIndex(InputError):
    """An index folder (the lexical index or its dense vectors) that does not exist, is not an
    index, is damaged, or cannot be written."""


class InvalidEncoder(InputError):
    """An encoder that cannot be used: its model or tokenizer files, an embedder not fitted, or
    vectors it made that do not fit (shape, dimensions, NaN, another encoder's)."""


class SearchFailed(RuntimeError):
    """A search with nothing to fuse because its retrievers failed."""


class MissingExtra(ImportError):
    """A feature that needs an optional extra which is not installed; ``extra`` is its name."""

    def __init__(self, message: str, *, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


# The refusals of what a user gave (the command line's exit status 2), in one place.
INPUT_ERRORS: tuple[type[Exception], ...] = (FusionError, InputError, MissingExtra)
