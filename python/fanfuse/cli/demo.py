"""`fanfuse demo`: fuses built-in example lists and prints the result (the main job until retrieval lands)."""

from __future__ import annotations

import argparse
from typing import Any

import fanfuse

EXAMPLE = {
    "bm25 'rrf fusion'": ["doc-rrf-paper", "doc-bm25", "doc-elastic-rrf", "doc-tfidf"],
    "dense 'rrf fusion'": ["doc-elastic-rrf", "doc-rrf-paper", "doc-hybrid", "doc-colbert"],
    "bm25 'combine rankings'": ["doc-borda", "doc-rrf-paper", "doc-condorcet", "doc-hybrid"],
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="fuse built-in example lists and print the ranking")
    parser.add_argument("--k", type=float, default=60.0, help="RRF k (default 60)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    fused = fanfuse.rrf(list(EXAMPLE.values()), k=args.k)
    print(f"RRF (k={args.k:g}) of {len(EXAMPLE)} ranked lists:")
    for name, ids in EXAMPLE.items():
        print(f"  {name:<26} {', '.join(ids)}")
    print()
    for rank, (doc, score) in enumerate(fused, start=1):
        print(f"{rank:>3}. {doc!s:<18} {score:.6f}")
    return 0
