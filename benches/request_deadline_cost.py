"""What the request deadline (`fanfuse serve --request-timeout`) costs a request: `GET /healthz`, the
cheapest answer, driven by wrk (Debian: `apt-get install -y wrk`) on loopback against the service
served by uvicorn's httptools protocol as it is and with the deadline, in alternating rounds in one
session (each round in the other order), so that the two see the same machine.

    .venv/bin/python benches/request_deadline_cost.py [--rounds 3] [--seconds 5]

Prints each round's requests/s and the ratio of the means (with / without the deadline).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import app_for_index
from fanfuse.service.request_deadline import http_protocol
from measuring import load_text, machine
from service_server import serving

STACKS: dict[str, Any] = {"without": "httptools", "with": http_protocol()}


def requests_per_second(url: str, seconds: int) -> float:
    out = subprocess.run(
        ["wrk", "-t1", "-c8", f"-d{seconds}s", f"{url}/healthz"], capture_output=True, text=True, check=True
    ).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    print(machine(), load_text("at the start"))
    with tempfile.TemporaryDirectory() as folder:
        TantivyRetriever.build([{"id": "d", "text": "owls hunt mice"}], Path(folder) / "idx")
        app = app_for_index(Path(folder) / "idx")
        rates: dict[str, list[float]] = {name: [] for name in STACKS}
        for round_ in range(args.rounds):
            # Each round in the other order, so that neither stack always goes first.
            for name, http in list(STACKS.items())[:: 1 if round_ % 2 == 0 else -1]:
                with serving(app, http=http, loop="auto") as url:
                    requests_per_second(url, 1)  # warm-up
                    rates[name].append(requests_per_second(url, args.seconds))
                print(f"round {round_ + 1}: {name} the deadline: {rates[name][-1]:.0f} requests/s")
    means = {name: statistics.mean(values) for name, values in rates.items()}
    print(
        f"mean requests/s: without {means['without']:.0f}, with {means['with']:.0f}: "
        f"{means['with'] / means['without']:.3f}x; {load_text('at the end')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
