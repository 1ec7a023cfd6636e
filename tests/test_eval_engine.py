"""`fanfuse eval` has one comparison engine (`fanfuse.report`): every run format it reads (those
`fanfuse fuse` writes, Parquet included) x with or without --baseline x every output format of the
parser prints the library's report of the same files, and the same run in any format has the same
numbers. The combinations come from the parsers, so a new format or option is covered when added."""

from __future__ import annotations

import argparse
import itertools
import json
import random

import fanfuse
import pytest
from fanfuse.cli import build_parser, main
from generated_runs import generated_qrels, generated_runs, write_beir_qrels, write_trec

METRICS = ["ndcg@10", "recall@5"]


def choices(command: str, flag: str) -> list[str]:
    parser = build_parser(command)
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    (action,) = (a for a in sub.choices[command]._actions if flag in a.option_strings)
    assert action.choices is not None, f"{command} {flag} lists no choices"
    return list(action.choices)


# Every format `fuse` writes (its --run-format choices), and Parquet (by an output name ending in .parquet).
RUN_FORMATS = [*choices("fuse", "--run-format"), "parquet"]
OUTPUTS = [*choices("eval", "--format"), "--json"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    pytest.importorskip("pyarrow")
    rng = random.Random(21)
    directory = tmp_path_factory.mktemp("eval-engine")
    generated = generated_runs(rng, runs=2, queries=30)
    sources = [
        write_trec(directory / f"source{i}.trec", r, rng, interleaved=False) for i, r in enumerate(generated)
    ]
    qrels = write_beir_qrels(directory / "qrels.tsv", generated_qrels(rng, generated))
    paths: dict[str, list[str]] = {}
    for form in RUN_FORMATS:
        paths[form] = []
        for i, source in enumerate(sources):
            out = directory / (f"run{i}.parquet" if form == "parquet" else f"run{i}.{form}")
            flags = [] if form == "parquet" else ["--run-format", form]
            assert main(["fuse", source, "-o", str(out), "--top-k", "0", *flags]) == 0
            paths[form].append(str(out))
    return {"paths": paths, "qrels": qrels}


@pytest.mark.parametrize(
    ("form", "baseline", "output"), list(itertools.product(RUN_FORMATS, [None, "1"], OUTPUTS))
)
def test_every_run_format_with_and_without_baseline_in_every_output(
    runs: dict[str, object], form: str, baseline: str | None, output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = runs["paths"][form]  # type: ignore[index]
    qrels = str(runs["qrels"])
    argv = ["eval", *paths, "--qrels", qrels, "--metrics", ",".join(METRICS)]
    argv += [] if baseline is None else ["--baseline", baseline]
    argv += ["--json"] if output == "--json" else ["--format", output]
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    report = fanfuse.compare(paths, qrels, METRICS, baseline=int(baseline or 0), names=paths)
    assert out == report.render("json" if output == "--json" else output)
    # The same run in any format: the same per-query numbers.
    trec = fanfuse.compare(runs["paths"]["trec"], qrels, METRICS)  # type: ignore[index]
    assert [s.values for s in report.scores] == [s.values for s in trec.scores]


def test_eval_json_has_one_shape(runs: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    paths = runs["paths"]["parquet"]  # type: ignore[index]
    qrels = str(runs["qrels"])
    shapes = []
    for extra in ([], ["--baseline", "0"], ["--test", "fisher", "--correction", "none"]):
        assert main(["eval", *paths, "--qrels", qrels, "--json", *extra]) == 0
        payload = json.loads(capsys.readouterr().out)
        shapes.append((sorted(payload), sorted(payload["comparisons"][0])))
    assert shapes[0] == shapes[1] == shapes[2]
