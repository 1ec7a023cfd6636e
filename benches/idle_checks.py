"""What the refusal of a flag or field that would do nothing costs each call, beside what it rides on.

    PYTHONPATH=python .venv/bin/python benches/idle_checks.py [--repeat 7]

One process, best of ``repeat`` interleaved timings: ``fanfuse.cli.idle_flags.refuse_idle_flags`` on a
``fanfuse fuse`` line against argparse's own ``parse_args`` of the same line (the check reads the words
again), and ``fanfuse.service.idle_fields.idle_field`` on a request against pydantic's validation of
that request (needs ``fanfuse[serve]``). Ratios are check / baseline.
"""

from __future__ import annotations

import argparse

from fanfuse.cli import build_parser, command_parsers
from fanfuse.cli.idle_flags import refuse_idle_flags
from measuring import best_seconds, load_text, machine

WORDS = ["a.run", "b.run", "-o", "o.run", "--method", "rbc", "--phi", "0.5"]
BODY = {"query": "owls at night", "method": "rbc", "phi": 0.5, "max_variants": 3}


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    options.add_argument("--repeat", type=int, default=7)
    repeat = options.parse_args().repeat
    parser = command_parsers(build_parser("fuse"))["fuse"]
    args = parser.parse_args(WORDS)
    pairs = {
        "command line": {
            "refuse_idle_flags": lambda: refuse_idle_flags("fuse", parser, WORDS, args),
            "parse_args": lambda: parser.parse_args(WORDS),
        }
    }
    try:
        from fanfuse.service.idle_fields import Server, idle_field
        from fanfuse.service.schema import SearchRequest
    except ImportError:
        print("service: skipped (fanfuse[serve] is not installed)")
    else:
        request = SearchRequest(**BODY)
        server = Server("heuristic", True, 4, "rrf")
        pairs["service"] = {
            "idle_field": lambda: idle_field(request, server),
            "SearchRequest(**body)": lambda: SearchRequest(**BODY),
        }
    print(machine(), load_text(), sep="\n")
    for face, contenders in pairs.items():
        best = best_seconds(contenders, repeat=repeat, number=None)
        (check, checked), (base, based) = best.items()
        timings = f"{check} {checked * 1e6:.1f} us, {base} {based * 1e6:.1f} us"
        print(f"{face}: {timings}, ratio {checked / based:.2f}")


if __name__ == "__main__":
    main()
