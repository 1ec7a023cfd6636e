"""An error a caller's iterable raises while the core reads it (a database cursor that fails, a bug in
a generator's source) reaches the caller as raised, never replaced by a refusal of its type ("is a
Broken but must be a ranked list"). Every parameter of the core's stub typed as a sequence or an
iterable is given an object whose `__iter__` raises, at the top level and, where the parameter holds
lists, as one of its lists; where the core called `__iter__`, the caller's exception is what comes out.
An object that is no iterable at all is still refused naming the parameter."""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse._core as core
import pytest
from test_api_numbers import stub_signatures


class Boom(Exception):
    """The caller's own error."""


class Broken:
    """An iterable whose iteration fails, noting that it was asked."""

    def __init__(self) -> None:
        self.asked = False

    def __iter__(self) -> Any:
        self.asked = True
        raise Boom("the source failed")


def sequence_parameters() -> list[tuple[str, str]]:
    found = []
    for name, params in stub_signatures().items():
        if "." in name or not callable(getattr(core, name, None)):
            continue
        found += [(name, p) for p, a in params.items() if "Sequence" in a or "Iterable" in a]
    return sorted(found)


SCORES = [0.5, 0.25, 0.75]


@functools.cache
def judged() -> core.Qrels:
    """Qrels of one judged document, read from a file (the class has no constructor)."""
    folder = Path(tempfile.mkdtemp())
    (folder / "qrels").write_text("q 0 d 1\n")
    qrels = core.read_qrels(str(folder / "qrels"))
    shutil.rmtree(folder)
    return qrels


RUN = core.Run.from_columns(["q"], ["d"], [1.0])
# A call of each entry point with `value` for the parameter, the other arguments valid; `inner` puts
# `value` one level down, as one of the lists the parameter holds.
CALLS: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("rrf", "lists"): lambda v: core.rrf(v),
    ("rrf", "weights"): lambda v: core.rrf([["a"]], weights=v),
    ("rrf_batch", "queries"): lambda v: core.rrf_batch(v),
    ("rrf_batch", "weights"): lambda v: core.rrf_batch([[["a"]]], weights=v),
    ("fuse", "runs"): lambda v: core.fuse(v),
    ("fuse", "content_keys"): lambda v: core.fuse([["a"]], content_keys=v),
    ("fuse", "weights"): lambda v: core.fuse([["a"]], weights=v),
    ("fuse_batch", "queries"): lambda v: core.fuse_batch(v),
    ("fuse_batch", "weights"): lambda v: core.fuse_batch([[["a"]]], weights=v),
    ("fuse_runs", "runs"): lambda v: core.fuse_runs(v),
    ("fuse_runs", "weights"): lambda v: core.fuse_runs([], weights=v),
    ("fuse_files", "inputs"): lambda v: core.fuse_files(v, "/nonexistent/out.trec"),
    ("fuse_files", "weights"): lambda v: core.fuse_files([], "/nonexistent/out.trec", weights=v),
    ("runs_from_table", "runs"): lambda v: core.runs_from_table(object(), runs=v),
    ("fuse_tables", "tables"): lambda v: core.fuse_tables(v, names=["a"]),
    ("fuse_tables", "names"): lambda v: core.fuse_tables([], names=v),
    ("fuse_tables", "runs"): lambda v: core.fuse_tables([], names=[], runs=v),
    ("fuse_tables", "weights"): lambda v: core.fuse_tables([], names=[], weights=v),
    ("train_fusion", "runs"): lambda v: core.train_fusion(v, judged(), method="probfuse"),
    ("evaluate", "metrics"): lambda v: core.evaluate(RUN, judged(), metrics=v),
    ("randomization_test", "a"): lambda v: core.randomization_test(v, SCORES),
    ("randomization_test", "b"): lambda v: core.randomization_test(SCORES, v),
    ("paired_t", "a"): lambda v: core.paired_t(v, SCORES),
    ("paired_t", "b"): lambda v: core.paired_t(SCORES, v),
    ("wilcoxon_test", "a"): lambda v: core.wilcoxon_test(v, SCORES),
    ("wilcoxon_test", "b"): lambda v: core.wilcoxon_test(SCORES, v),
    ("tukey_hsd", "groups"): lambda v: core.tukey_hsd(v),
}
# The parameters that hold lists, and where one of their lists goes.
INNER: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("rrf", "lists"): lambda v: [["a"], v],
    ("rrf_batch", "queries"): lambda v: [[["a"]], v],
    ("fuse", "runs"): lambda v: [["a"], v],
    ("fuse_batch", "queries"): lambda v: [[["a"]], v],
    ("tukey_hsd", "groups"): lambda v: [SCORES, v],
}


def test_every_sequence_parameter_has_a_call() -> None:
    assert sorted(CALLS) == sequence_parameters()


CASES = [(key, False) for key in CALLS] + [(key, True) for key in INNER]


@pytest.mark.parametrize(
    ("key", "inner"), CASES, ids=[f"{k[0]}-{k[1]}{'-inner' if i else ''}" for k, i in CASES]
)
def test_the_callers_error_comes_out_as_raised(key: tuple[str, str], inner: bool) -> None:
    broken = Broken()
    value = INNER[key](broken) if inner else broken
    try:
        CALLS[key](value)
    except Boom:
        assert broken.asked
        return
    except Exception as error:  # refused before iterating: a type the parameter does not take
        assert not broken.asked, f"{key}: the caller's error became {error!r}"
        return
    pytest.fail(f"{key}: a failing iterable was taken")


@pytest.mark.parametrize("key", sorted(INNER | {("rrf", "lists"): INNER[("rrf", "lists")]}))
def test_the_lists_are_iterated_so_the_error_shows(key: tuple[str, str]) -> None:
    broken = Broken()
    with pytest.raises(Boom):
        CALLS[key](INNER[key](broken))


@pytest.mark.parametrize("key", [("rrf", "lists"), ("evaluate", "metrics")])
def test_an_object_that_is_no_iterable_is_refused_naming_the_parameter(key: tuple[str, str]) -> None:
    with pytest.raises(TypeError, match=key[1]):
        CALLS[key](object())
