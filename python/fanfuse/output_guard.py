"""The output guard: every file and folder the Python layer writes (reports, plots, saved models,
Parquet runs, dense vectors and caches, index manifests and versions) is written through it, by the
rules of the run writers (docs/run-files.md, "Output paths"), which the core applies
(``rust/output/``). This module is their Python face: the context managers and the checks, over
path arguments (``fanfuse.paths``). Every refusal of the guard (a path that cannot be written, is a
folder, is read-only, is one of the inputs however spelled; a disk full while writing) raises
``InvalidOutput`` naming the path, the class the core raises itself for every output it writes; a
closed pipe stays ``BrokenPipeError``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO

from fanfuse._core import _internal
from fanfuse.errors import InvalidOutput
from fanfuse.limits import check_sequence
from fanfuse.paths import PathArgument, utf8_path

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["OutputFile", "StagedDirectory", "check_paths", "retire_directory", "sync_directory"]


class OutputFile:
    """``with OutputFile(path, inputs=[...]) as stream:`` writes ``path`` as every output of fanfuse
    is written: a new or regular file through a temporary renamed over it when the block ends without
    an exception (a failure leaves the previous file and no temporary); a symbolic link followed; a
    FIFO, a character device or stdout (``-``) streamed; a folder, a read-only file or one of
    ``inputs`` (however spelled) refused. An ``OSError`` while writing (a full disk) becomes an
    ``InvalidOutput`` naming ``path``; a closed pipe stays ``BrokenPipeError``.
    """

    __slots__ = ("_output", "_path", "_stream")

    def __init__(self, path: PathArgument, /, *, inputs: Sequence[PathArgument] | None = None) -> None:
        self._path = utf8_path(path, "path", InvalidOutput)
        given = [] if inputs is None else check_sequence(inputs, "inputs", "paths")
        read = [utf8_path(item, f"inputs[{i}]", InvalidOutput) for i, item in enumerate(given)]
        self._stream: BinaryIO | None = None
        self._output = _internal._Output(self._path, read)

    def __enter__(self) -> BinaryIO:
        """A binary file object over a descriptor of the output of its own."""
        if self._output.is_stdout():
            # What Python printed before goes out before what is written here.
            sys.stdout.flush()
        descriptor = self._output.fileno()
        self._stream = os.fdopen(descriptor, "wb")
        return self._stream

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        stream, self._stream = self._stream, None
        error = exc
        if stream is not None:
            try:
                stream.close()
            except BaseException as closing:  # the block's own exception, if any, is the one reported
                error = closing if error is None else error
        if error is None:
            self._output.commit()
            return
        self._output.discard()  # the previous file stays
        if isinstance(error, OSError) and not isinstance(error, BrokenPipeError):
            reason = error.strerror if error.strerror is not None else str(error)
            raise InvalidOutput(f"{self._path}: {reason}") from error
        if exc is None:
            raise error


class StagedDirectory:
    """``with StagedDirectory(target) as staged:`` fills the new locked folder ``staged.path`` beside
    ``target`` (its parents are created), which takes ``target``'s place when the block ends without
    an exception (or at ``publish()``) and is removed otherwise; a folder already at the target is
    retired whole, so a reader finds the old or the new one, never a mix. Leftovers of killed
    writers are removed. An unwritable place raises ``InvalidOutput`` naming ``target``.
    """

    __slots__ = ("_staged", "_target")

    def __init__(self, target: PathArgument, /) -> None:
        self._target = utf8_path(target, "target", InvalidOutput)
        self._staged = _internal._StagedDirectory(self._target)

    @property
    def path(self) -> str:
        """The temporary folder to fill."""
        return self._staged.path

    def publish(self, target: PathArgument | None = None, /) -> None:
        """Moves the folder to ``target`` (default: the target given; same parent folder)."""
        chosen = self._target if target is None else utf8_path(target, "target", InvalidOutput)
        self._staged.publish(chosen)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None and not self._staged.published:
                self.publish()
        finally:
            self._staged.discard()  # an unpublished staging is removed


def retire_directory(path: PathArgument, /) -> None:
    """Removes a folder so that a reader finds it whole or not at all (renamed away, then deleted)."""
    checked = utf8_path(path, "path", InvalidOutput)
    _internal._retire_directory(checked)


def sync_directory(path: PathArgument, /) -> None:
    """Makes the renames inside a folder durable (fsync)."""
    checked = utf8_path(path, "path", InvalidOutput)
    _internal._sync_directory(checked)


def _named_paths(pairs: Sequence[tuple[str, PathArgument]] | None, name: str) -> list[tuple[str, str]]:
    named = []
    for i, pair in enumerate([] if pairs is None else check_sequence(pairs, name, "(option, path) pairs")):
        if not (isinstance(pair, tuple | list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise TypeError(f"{name}[{i}] must be an (option, path) pair, not {type(pair).__name__}")
        named.append((pair[0], utf8_path(pair[1], f"{name}[{i}]", InvalidOutput)))
    return named


def check_paths(
    *,
    outputs: Sequence[tuple[str, PathArgument]] | None = None,
    output_directories: Sequence[tuple[str, PathArgument]] | None = None,
    inputs: Sequence[tuple[str, PathArgument]] | None = None,
) -> None:
    """Raises ``InvalidOutput`` when an output is one of the inputs or another output (the same file
    however spelled: ``./x``, a symbolic or hard link, ``-`` for stdout; character devices such as
    ``/dev/null`` excepted), or an output folder holds an input or another output. Each path comes
    with the option that gave it, ``("-o", "out.trec")``, which the message names.
    """
    checked = (
        _named_paths(outputs, "outputs"),
        _named_paths(output_directories, "output_directories"),
        _named_paths(inputs, "inputs"),
    )
    _internal._check_paths(*checked)
