"""The fusion options of the run-file commands as one value (``fanfuse.cli.fuse``, which hands them to
the Dask engine too), and the defaults their help states, read from the core."""

from __future__ import annotations

import argparse

from fanfuse._core import RUN_FILE_TOP_K
from fanfuse.options import FusionOptions

#: The value every option left unset takes, for help texts.
DEFAULTS = FusionOptions()


def run_fusion_options(args: argparse.Namespace) -> FusionOptions:
    """The fusion flags given, as one value checked by the core (unset flags keep its defaults;
    ``--top-k`` unset keeps ``RUN_FILE_TOP_K`` a query, 0 keeps every hit)."""
    given = {
        "method": args.method,
        "norm": args.norm,
        "k": args.rrf_k,
        "weights": args.weights,
        "phi": args.phi,
        "sigma": args.sigma,
        "gamma": args.gamma,
    }
    options = {name: value for name, value in given.items() if value is not None}
    if args.top_k is not None:
        options["top_k"] = args.top_k or None
    return FusionOptions(**options)


__all__ = ["DEFAULTS", "RUN_FILE_TOP_K", "run_fusion_options"]
