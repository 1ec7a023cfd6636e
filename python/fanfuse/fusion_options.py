"""The fusion options of the run-file commands, shared by the one-process path (``fanfuse.cli.fuse``)
and the Dask engine (``fanfuse.dask.command``)."""

from __future__ import annotations

import argparse


def method_parameters(args: argparse.Namespace) -> dict[str, float]:
    """The given --phi, --sigma and --gamma (unset ones keep the core's defaults)."""
    given = {"phi": args.phi, "sigma": args.sigma, "gamma": args.gamma}
    return {name: value for name, value in given.items() if value is not None}
