"""Ctrl-C (SIGINT) and SIGTERM stop `fanfuse fuse`, `eval`, `tune` and `index` mid-run: the process
ends by that signal (the shell's 130 / 143) with one line on stderr and no traceback, the previous
output is left byte for byte, and no temporary file stays. SIGKILL leaves one, which the next run
removes. Each command runs in its own process on inputs big enough that the signal lands mid-run: it
is sent once the process is seen working (its temporary file exists, or it has the big input open)."""

from __future__ import annotations

import json
import random
import signal
import subprocess
from pathlib import Path

import pytest
from cli_process import CLI, has_open, signal_when
from fanfuse.retrievers.tantivy_index import TantivyRetriever

PREVIOUS = b"a previous output the user wants to keep\n"
SIGNALS = [signal.SIGINT, signal.SIGTERM]
# Copies of the big run given to one command: more work per process without a bigger file to write.
COPIES = 4


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 10k-query run of 100 hits (26 MB), qrels for it, and a corpus of 100k documents."""
    directory = tmp_path_factory.mktemp("big")
    rng = random.Random(1)
    run, qrels, corpus = directory / "big.trec", directory / "qrels.txt", directory / "corpus.jsonl"
    with run.open("w") as out:
        for q in range(10_000):
            out.write(
                "".join(f"q{q} Q0 d{rng.randrange(10**5)}x{i} {i + 1} {100 - i} t\n" for i in range(100))
            )
    qrels.write_text("".join(f"q{q} 0 d{q}x0 1\n" for q in range(10_000)))
    corpus.write_text(
        "".join(json.dumps({"id": f"x{i}", "text": f"w{i % 97} " * 20}) + "\n" for i in range(100_000))
    )
    return {"run": run, "qrels": qrels, "corpus": corpus}


def temporaries(directory: Path) -> list[Path]:
    return [p for p in directory.iterdir() if p.name.endswith(".fanfuse-tmp")]


def assert_interrupted(done: subprocess.CompletedProcess[bytes], command: str, signum: int) -> None:
    assert done.returncode == -signum, done.stderr.decode()
    assert done.stderr.decode() == f"fanfuse {command}: interrupted\n"


def fuse_big_until(signum: int, big: dict[str, Path], out: Path) -> subprocess.CompletedProcess[bytes]:
    """`fanfuse fuse` of the big run over a previous `out`, sent `signum` once its temporary exists."""
    out.write_bytes(PREVIOUS)
    args = ["fuse", *[str(big["run"])] * COPIES, "-o", str(out)]
    return signal_when(args, out.parent, lambda _: bool(temporaries(out.parent)), signum)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_fuse_stops_and_keeps_the_previous_output(big: dict[str, Path], tmp_path: Path, signum: int) -> None:
    out = tmp_path / "fused.trec"
    assert_interrupted(fuse_big_until(signum, big, out), "fuse", signum)
    assert out.read_bytes() == PREVIOUS
    assert temporaries(tmp_path) == []


def test_killed_fuse_leaves_a_temporary_that_the_next_run_removes(
    big: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "fused.trec"
    done = fuse_big_until(signal.SIGKILL, big, out)
    assert done.returncode == -signal.SIGKILL
    assert out.read_bytes() == PREVIOUS
    assert len(temporaries(tmp_path)) == 1
    small = tmp_path / "small.trec"
    small.write_text("q1 Q0 d1 1 1 t\n")
    rerun = subprocess.run([*CLI, "fuse", str(small), "-o", str(out)], capture_output=True, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert temporaries(tmp_path) == []
    assert out.read_text().startswith("q1 Q0 d1 1 ")


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("command", ["eval", "tune"])
def test_eval_and_tune_stop_while_reading(
    big: dict[str, Path], tmp_path: Path, command: str, signum: int
) -> None:
    runs = [str(big["run"])] * COPIES
    done = signal_when([command, *runs, "--qrels", str(big["qrels"])], tmp_path, has_open(big["run"]), signum)
    assert_interrupted(done, command, signum)
    assert done.stdout == b""


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_index_stops_and_keeps_the_previous_index(big: dict[str, Path], tmp_path: Path, signum: int) -> None:
    directory = tmp_path / "index"
    TantivyRetriever.build([{"id": "old", "text": "previous"}], directory)
    before = sorted(p.name for p in directory.iterdir())
    done = signal_when(
        ["index", str(big["corpus"]), "--index", str(directory)],
        tmp_path,
        has_open(big["corpus"]),
        signum,
    )
    assert_interrupted(done, "index", signum)
    assert sorted(p.name for p in directory.iterdir()) == before
    assert [h.id for h in TantivyRetriever(directory).search("previous", 5)] == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
