"""How `fanfuse serve` ends on a signal sent at a random moment of its start (docs/service.md).

    .venv/bin/python benches/serve_signal_sweep.py [--runs 120] [--spread-ms 30] [--signal TERM]

Builds a small index in a temporary directory; then, run by run, starts `fanfuse serve` on a free
port of 127.0.0.1 (one process), waits for the line that says it listens, sleeps a random 0 to
`--spread-ms` milliseconds (the server is still starting: uvicorn's loop is being made), and sends the
signal. A run ends right when the process ends by that signal with exactly `fanfuse serve:
interrupted` on stderr; the table counts the runs that ended otherwise, by the first other line they
wrote.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import fanfuse_command, print_measured, run_line


def end_of_one_start(index: Path, place: Path, signum: int, delay: float) -> str:
    """How one server ended, signalled `delay` seconds after it said it listens: "" if right."""
    command = fanfuse_command("serve", "--index", str(index), "--port", "0", "--no-dense")
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(place)},
    )
    assert process.stdout is not None
    process.stdout.readline()  # "fanfuse serve: listening on ..."
    time.sleep(delay)
    process.send_signal(signum)
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return "still running 60 s after the signal"
    if process.returncode == -signum and stderr == "fanfuse serve: interrupted\n":
        return ""
    other = [line for line in stderr.splitlines() if line != "fanfuse serve: interrupted"]
    return f"exit {process.returncode}: {(other or ['(nothing else on stderr)'])[0][:100]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=120)
    parser.add_argument("--spread-ms", type=float, default=30.0)
    parser.add_argument("--signal", choices=["TERM", "INT"], default="TERM")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    signum = getattr(signal, f"SIG{args.signal}")
    rng = random.Random(args.seed)
    started = time.perf_counter()
    endings: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as directory:
        index = Path(directory) / "index"
        TantivyRetriever.build(({"id": f"d{i}", "text": f"word{i % 7} text {i}"} for i in range(50)), index)
        for _ in range(args.runs):
            place = Path(tempfile.mkdtemp(dir=directory))
            endings[end_of_one_start(index, place, signum, rng.uniform(0, args.spread_ms / 1000))] += 1
            if any(place.iterdir()):
                endings["the server's copy of the index was left in TMPDIR"] += 1
    rows = [
        {"ending": ending or "right: by the signal, one line", "runs": n}
        for ending, n in endings.most_common()
    ]
    print_measured(rows, "ending | runs", "lr")
    print(run_line(started, f"{args.runs} runs, SIG{args.signal} 0-{args.spread_ms:g} ms after listening"))


if __name__ == "__main__":
    main()
