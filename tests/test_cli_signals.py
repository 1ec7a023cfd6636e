"""Ctrl-C (SIGINT) and SIGTERM stop every command mid-run: the process ends by that signal (the
shell's 130 / 143) with one line on stderr and no traceback, the previous output is left byte for
byte, and no temporary file stays, in the output's directory or in TMPDIR. SIGKILL leaves one,
which the next run removes. Each command runs in its own process on inputs big enough (or with a
number large enough) that the signal lands mid-run: it is sent once the process is seen working (its
temporary file exists, it has the big input open, it has used a second of CPU, or it listens)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_process import CLI, has_open, signal_when
from fanfuse.cli import COMMANDS
from fanfuse.retrievers.tantivy_index import TantivyRetriever

PREVIOUS = b"a previous output the user wants to keep\n"
SIGNALS = [signal.SIGINT, signal.SIGTERM]
# onnxruntime's one session file in TMPDIR (a time and a uuid), reused by every run: not a leftover.
ONNXRUNTIME_SESSION = ".ses"
# Copies of the big run given to one command: more work per process without a bigger file to write.
COPIES = 4


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 10k-query run of 100 hits (26 MB), qrels for it, and a corpus of 400k documents (about 3 s
    of CPU to index: past the long-running check of one second)."""
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
        "".join(json.dumps({"id": f"x{i}", "text": f"w{i % 97} " * 20}) + "\n" for i in range(400_000))
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


def cpu_seconds_at_least(seconds: float) -> Callable[[subprocess.Popen[bytes]], bool]:
    """Whether the process has used `seconds` of CPU (user + system): past its imports, at work.
    CPU time, unlike wall time, does not stretch on a loaded machine."""

    def check(process: subprocess.Popen[bytes]) -> bool:
        try:
            fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return False
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") >= seconds

    return check


# A long run of every command, on the `big` files (and `small` ones where a number makes it long):
# the significance tests at the most iterations accepted, training, the demo's index build, the
# embedding of an index's documents, a server. Each is sent the signal once at work.
LONG_RUNNING = {
    "demo": ["demo", "--cache-dir", "cache"],
    "index": ["index", "{corpus}", "--index", "index"],
    "search": ["search", "--index", "{index}", "--dense", "word"],
    "serve": ["serve", "--index", "{index}", "--port", "0", "--no-dense"],
    "fuse": ["fuse", *["{run}"] * COPIES, "--method", "probfuse", "--train-runs", *["{run}"] * COPIES,
             "--train-qrels", "{qrels}", "-o", "out.trec"],
    "eval": ["eval", "{small}", "{other}", "--qrels", "{small_qrels}", "--test", "fisher",
             "--iterations", "4294967295"],
    "tune": ["tune", "{run}", "{run}", "{run}", "--qrels", "{qrels}", "--method", "wsum"],
}  # fmt: skip
REPORT = ["eval", "{small}", "{other}", "--qrels", "{small_qrels}", "--baseline", "0", "--test", "fisher",
          "--iterations", "4294967295"]  # fmt: skip


@pytest.fixture(scope="module")
def long_inputs(big: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The big files, two runs of 200 queries (small, fast to read) with their qrels, and an index
    of 20k documents without stored vectors (`search --dense` embeds them first)."""
    directory = tmp_path_factory.mktemp("long")
    small, other, qrels = directory / "small.trec", directory / "other.trec", directory / "qrels.txt"
    small.write_text("".join(f"q{q} Q0 d{i} {i + 1} {10 - i} t\n" for q in range(200) for i in range(10)))
    other.write_text("".join(f"q{q} Q0 d{9 - i} {i + 1} {10 - i} u\n" for q in range(200) for i in range(10)))
    qrels.write_text("".join(f"q{q} 0 d{q % 10} 1\n" for q in range(200)))
    TantivyRetriever.build(
        ({"id": f"x{i}", "text": f"word{i % 97} text {i}"} for i in range(20_000)), directory / "index"
    )
    names = {"small": small, "other": other, "small_qrels": qrels, "index": directory / "index"}
    return {**{k: str(v) for k, v in big.items()}, **{k: str(v) for k, v in names.items()}}


def serving(process: subprocess.Popen[bytes]) -> bool:
    """Whether a server runs its event loop: its listening socket and the loop's own two are open."""
    try:
        fds = list(Path(f"/proc/{process.pid}/fd").iterdir())
        return sum(fd.readlink().name.startswith("socket:") for fd in fds) >= 3
    except OSError:
        return False


def test_every_command_has_a_long_run() -> None:
    assert set(LONG_RUNNING) == set(COMMANDS)


# Each long run with one of the two signals, in turn (both reach the same check; the tests above
# send both to fuse, eval, tune and index), and the issue's own example, eval at 2^32 - 1 iterations,
# with both.
SIGNALLED = [
    *((argv, SIGNALS[i % 2]) for i, argv in enumerate([*LONG_RUNNING.values(), REPORT])),
    (LONG_RUNNING["eval"], SIGNALS[0]),
]


@pytest.mark.parametrize(
    ("argv", "signum"),
    SIGNALLED,
    ids=[f"{a[0]}{'-report' if a is REPORT else ''}-{signal.Signals(s).name}" for a, s in SIGNALLED],
)
def test_every_command_stops_on_a_signal_at_work(
    long_inputs: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], signum: int
) -> None:
    if argv[0] in ("search", "demo"):
        pytest.importorskip("onnxruntime")  # both embed documents with the built-in model
    # What a command puts in the temporary directory (a server's copy of its index) goes too.
    place = tmp_path / "tmp"
    place.mkdir()
    monkeypatch.setenv("TMPDIR", str(place))
    args = [word.format(**long_inputs) for word in argv]
    working = serving if argv[0] == "serve" else cpu_seconds_at_least(1.0)
    done = signal_when(args, tmp_path, working, signum)
    assert_interrupted(done, argv[0], signum)
    assert temporaries(tmp_path) == []
    assert [p for p in place.iterdir() if p.name != ONNXRUNTIME_SESSION] == []
