"""The sequences the report functions take (run paths, metric names, run names, evaluated runs) are
refused as a bare str (which would be read as its characters) and where an item is not what they
hold, naming the argument and what it accepts; and a report's look-up by run and metric name refuses
a name the report does not have, listing the ones it has. Every public callable of fanfuse.report
that takes one of these arguments is enumerated from the module, so a new one is covered or fails."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import fanfuse
import fanfuse.report
import pytest
from fanfuse.report import Report, compare, compare_scores
from fanfuse.run_scores import RunScores, with_means

# The arguments holding a sequence, and for each a bare value, an item of the wrong type and the
# pattern the refusal of the bare value has to match.
SEQUENCES = {
    "metrics": ("ndcg@10", ["ndcg@10", 3], r"metrics must be a sequence of metric names \(str\)"),
    "names": ("ab", ["a", 2], r"names must be a sequence of run names \(str\)"),
    "runs": ("run0.trec", [1.5, "run0.trec"], r"runs must be a sequence of runs \(Run\) or paths"),
    "scores": ("ab", ["a", "b"], r"scores must be a sequence of evaluated runs \(RunScores\)"),
}


def public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    for name in fanfuse.report.__all__:
        value = getattr(fanfuse.report, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            yield name, value


def taking(argument: str) -> set[str]:
    found = set()
    for name, value in public_callables():
        try:
            parameters = inspect.signature(value).parameters
        except (TypeError, ValueError):
            continue
        if argument in parameters:
            found.add(name)
    return found


def scores() -> list[RunScores]:
    qids = ["q1", "q2", "q3"]
    return [
        with_means("a", qids, {"ndcg@10": [0.1, 0.5, 0.2], "map": [0.3, 0.1, 0.4]}),
        with_means("b", qids, {"ndcg@10": [0.2, 0.6, 0.1], "map": [0.2, 0.2, 0.5]}),
    ]


@pytest.fixture(scope="module")
def calls(small_runs: dict[str, str]) -> dict[str, dict[str, Callable[..., Any]]]:
    """Per argument, each entry point taking it, called with valid values but for the keywords given."""
    paths = [small_runs["run0"], small_runs["run1"]]

    def compared(**kw: Any) -> Any:
        arguments: dict[str, Any] = {"runs": paths, "metrics": ["ndcg@10"], "names": None, **kw}
        return compare(arguments.pop("runs"), small_runs["qrels"], **arguments)

    def compared_scores(**kw: Any) -> Any:
        return compare_scores(**{"scores": scores(), "metrics": ["ndcg@10"], **kw})

    def built(**kw: Any) -> Any:
        made = compare_scores(scores(), ["ndcg@10"])
        fields = {"metrics": made.metrics, "scores": made.scores, **kw}
        # What the constructor would not refuse, the first rendering would read.
        report = Report(fields["metrics"], fields["scores"], 0, "t", "holm", 0.05, made.comparisons)
        return report.to_markdown()

    return {
        "metrics": {"compare": compared, "compare_scores": compared_scores, "Report": built},
        "names": {"compare": compared},
        "runs": {"compare": compared},
        "scores": {"compare_scores": compared_scores, "Report": built},
    }


def test_every_entry_point_taking_a_sequence_is_enumerated(
    calls: dict[str, dict[str, Callable[..., Any]]],
) -> None:
    assert fanfuse.compare is compare  # the package's name for it is the same function
    for argument in SEQUENCES:
        assert set(calls[argument]) == taking(argument), argument


@pytest.mark.parametrize("argument", list(SEQUENCES))
def test_a_bare_str_is_refused_naming_the_argument(
    argument: str, calls: dict[str, dict[str, Callable[..., Any]]]
) -> None:
    bare, _, message = SEQUENCES[argument]
    for call in calls[argument].values():
        for value in (bare, bare.encode()):
            with pytest.raises(TypeError, match=message + r".* \(got (str|bytes)\)$"):
                call(**{argument: value})


@pytest.mark.parametrize("argument", list(SEQUENCES))
def test_an_item_of_another_type_is_refused_naming_its_position(
    argument: str, calls: dict[str, dict[str, Callable[..., Any]]]
) -> None:
    _, mixed, _ = SEQUENCES[argument]
    wrong = (
        next(i for i, item in enumerate(mixed) if not isinstance(item, str)) if argument != "scores" else 0
    )
    for call in calls[argument].values():
        with pytest.raises(
            # A run that is no Run is refused as a path argument is (`fanfuse.paths`): "..., not int".
            TypeError,
            match=rf"^{argument}\[{wrong}\] must be an? .*(\(got (int|float|str)\)|, not (int|float|str))$",
        ):
            call(**{argument: mixed})


def test_an_unordered_collection_is_refused(calls: dict[str, dict[str, Callable[..., Any]]]) -> None:
    for argument in ("metrics", "names"):
        for call in calls[argument].values():
            with pytest.raises(TypeError, match=rf"^{argument} has no order \(got set\)"):
                call(**{argument: {"ndcg@10"} if argument == "metrics" else {"a", "b"}})


def test_any_ordered_iterable_is_read_once(calls: dict[str, dict[str, Callable[..., Any]]]) -> None:
    """A generator of metric names serves every run, not only the first."""
    for name in ("compare", "compare_scores"):
        report = calls["metrics"][name](metrics=(m for m in ["ndcg@10"]))
        assert report.metrics == ["ndcg@10"] and len(report.comparisons) == 1, name
    report = calls["names"]["compare"](names=iter(["x", "y"]))
    assert report.names == ["x", "y"]


# Every public method of a report that looks a comparison up by run and metric name.
LOOKUPS = {"comparison"}


def test_every_lookup_by_name_is_enumerated() -> None:
    found = {
        name
        for name, method in inspect.getmembers(Report, inspect.isfunction)
        if not name.startswith("_")
        and any(
            p.name in ("run", "metric") and p.annotation in (str, "str")
            for p in inspect.signature(method).parameters.values()
        )
    }
    assert found == LOOKUPS


def test_an_unknown_run_or_metric_is_refused_listing_the_known_ones() -> None:
    report = compare_scores(scores(), ["ndcg@10", "map"])
    assert report.comparison("a", "map") is None  # the baseline is compared with nothing
    found = report.comparison("b", "map")
    assert found is not None and (found.run, found.metric) == ("b", "map")
    with pytest.raises(fanfuse.InvalidSetting, match=re.escape("run must be one of a, b (got 'c')")):
        report.comparison("c", "map")
    with pytest.raises(
        fanfuse.InvalidSetting, match=re.escape("metric must be one of ndcg@10, map (got 'mrr')")
    ):
        report.comparison("b", "mrr")
    with pytest.raises(TypeError, match=re.escape("run must be one of a, b (got int)")):
        report.comparison(1, "map")  # type: ignore[arg-type]


def test_the_renamed_duplicate_runs_are_the_names_looked_up() -> None:
    twice = [scores()[0], scores()[0]]
    report = compare_scores(twice, ["map"])
    assert report.names == ["0:a", "1:a"]
    assert report.comparison("1:a", "map") is not None
    with pytest.raises(fanfuse.InvalidSetting, match=re.escape("run must be one of 0:a, 1:a (got 'a')")):
        report.comparison("a", "map")


def test_a_metric_an_evaluated_run_lacks_is_refused_naming_the_run() -> None:
    message = "metrics: a has no values of 'mrr'; give metrics it was evaluated on: ndcg@10, map"
    with pytest.raises(fanfuse.InvalidSetting, match=re.escape(message)):
        compare_scores(scores(), ["ndcg@10", "mrr"])
