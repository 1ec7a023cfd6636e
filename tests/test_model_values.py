"""A saved model's table values are what its method learns: shares of relevant documents (a MAP for
mapfuse) from 0 to 1, and any finite log odds for bayesfuse. A value outside that is refused naming
the table entry, by every way a model is read: `FusionModel.from_json`, `FusionModel.load` and
`fanfuse fuse --model`, for every trained method of the core's `TRAINED_METHODS`."""

from __future__ import annotations

import json
from pathlib import Path

import fanfuse
import pytest
from fanfuse._core import TRAINED_METHODS
from fanfuse.cli import main

LOG_ODDS = {"bayesfuse"}


def edited(small_runs: dict[str, str], method: str, value: float) -> str:
    runs = [fanfuse.read_run(small_runs["run0"]), fanfuse.read_run(small_runs["run1"])]
    model = fanfuse.train_fusion(runs, fanfuse.read_qrels(small_runs["qrels"]), method=method)
    data = json.loads(model.to_json())
    data["tables"][0][0] = value
    return json.dumps(data)


READS = ("from_json", "load", "fuse --model")


@pytest.mark.parametrize("value", [-0.5, 1.5])
@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("method", TRAINED_METHODS)
def test_a_value_outside_what_the_method_learns_is_refused_naming_it(
    small_runs: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    method: str,
    read: str,
    value: float,
) -> None:
    text = edited(small_runs, method, value)
    path = tmp_path / "model.json"
    path.write_text(text)
    if read == "fuse --model":
        output = tmp_path / "out.trec"
        argv = ["fuse", small_runs["run0"], small_runs["run1"], "--method", method, "--model", str(path)]
        code = main([*argv, "-o", str(output)])
        err = capsys.readouterr().err
        if method in LOG_ODDS:
            assert code == 0 and output.exists()
        else:
            assert code == 2 and not output.exists()
            assert (
                len(err.splitlines()) == 1
                and str(path) in err
                and f"tables[0][0] is {value}; a {method}" in err
            )
        return
    load = fanfuse.FusionModel.from_json if read == "from_json" else fanfuse.FusionModel.load
    if method in LOG_ODDS:
        assert load(text if read == "from_json" else str(path)).tables[0][0] == value
        return
    with pytest.raises(fanfuse.FusionError, match=rf"tables\[0\]\[0\] is {value}; a {method} table holds"):
        load(text if read == "from_json" else str(path))
