"""`fanfuse tune` against ranx's `optimize_fusion` on generated runs of 10k queries, in one process.

ranx searches in-sample (every configuration scored on all queries, no folds); fanfuse's tune also
cross-validates (5 folds), scores the best single run and runs a randomization test. Both fuse and
evaluate every configuration once over every query, so the fair figure is the time per configuration;
the same levels are given to both: RRF k in 10..100 step 10 (10 configurations each), and wsum
weights on a 0.1 grid over 3 runs (ranx: the weight vectors summing to 1; fanfuse: every vector with
two weights > 0 or more, scaled duplicates removed: a different set of similar size). fanfuse fuses
on one thread, ranx's numba kernels on every core. Inputs are built outside the timing; ranx is
warmed up (numba compiles) on a small input first. Best of `--repeat`.

    python benches/tune_vs_ranx.py [--queries 10000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable

from fanfuse.tune import tune
from measuring import best_seconds, load_text, machine, versions
from tune_workload import tune_inputs

KS = list(range(10, 101, 10))
STEP = 0.1
WEIGHTS = [round(STEP * i, 1) for i in range(11)]


def best_and_result(repeat: int, call: Callable[[], object]) -> tuple[float, object]:
    """The best seconds of `repeat` calls, and what the last call returned (the same every call)."""
    returned: list[object] = []
    return best_seconds({"call": lambda: returned.append(call())}, repeat=repeat)["call"], returned[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from ranx import Qrels, Run, optimize_fusion

    def ranx_search(qrels: dict, runs: list[dict], **options: object) -> Callable[[], object]:
        ranx_qrels, ranx_runs = Qrels(qrels), [Run(run, name=f"run{r}") for r, run in enumerate(runs)]
        return lambda: optimize_fusion(
            ranx_qrels,
            ranx_runs,
            metric="ndcg@10",
            show_progress=False,
            return_optimization_report=True,
            **options,
        )

    _, _, small_qrels, small_runs = tune_inputs(3, 50, seed=1)
    for options in ({"method": "rrf", "norm": None}, {"method": "wsum", "norm": "min-max", "step": STEP}):
        ranx_search(small_qrels, small_runs, **options)()  # numba compiles here, outside the timing
    runs, qrels, dict_qrels, dict_runs = tune_inputs(3, args.queries)
    print(f"machine: {machine(*versions('ranx', 'numba'))}\n3 runs x {args.queries} queries x 100 hits")
    cases = [
        ("rrf", {"method": "rrf", "norm": None, "min_k": 10, "max_k": 100, "step": 10},
         {"method": "rrf", "ks": KS, "weight_levels": [1.0]}),
        ("wsum", {"method": "wsum", "norm": "min-max", "step": STEP},
         {"method": "wsum", "weight_levels": WEIGHTS}),
    ]  # fmt: skip
    for label, ranx_options, fanfuse_options in cases:
        ranx_s, (_, ranx_report) = best_and_result(
            args.repeat, ranx_search(dict_qrels, dict_runs, **ranx_options)
        )
        ranx_configs = len(ranx_report.configs)  # type: ignore[attr-defined]
        ours_s, report = best_and_result(args.repeat, lambda o=fanfuse_options: tune(runs, qrels, **o))
        ours_configs = report.fusions  # type: ignore[attr-defined]
        ranx_per, ours_per = ranx_s / ranx_configs, ours_s / ours_configs
        print(
            f"{label}: ranx optimize_fusion {ranx_s:.2f} s for {ranx_configs} configurations "
            f"({ranx_per * 1000:.0f} ms each); fanfuse tune {ours_s:.2f} s for {ours_configs} "
            f"(+ 3 single runs, 5-fold CV, test) ({ours_per * 1000:.0f} ms each); "
            f"per configuration ranx / fanfuse = {ranx_per / ours_per:.1f}x; {load_text()}"
        )


if __name__ == "__main__":
    main()
