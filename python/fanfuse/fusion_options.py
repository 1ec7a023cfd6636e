"""The fusion options of the run-file commands (``fanfuse.cli.fuse``, which hands them to the Dask
engine too)."""

from __future__ import annotations

import argparse


def method_parameters(args: argparse.Namespace) -> dict[str, float]:
    """The given --phi, --sigma and --gamma (unset ones keep the core's defaults)."""
    given = {"phi": args.phi, "sigma": args.sigma, "gamma": args.gamma}
    return {name: value for name, value in given.items() if value is not None}
