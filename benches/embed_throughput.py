"""Passages per second of the default neural encoder on the standard-library corpus (what the demo
indexes), by max length, batch size, length-sorted or corpus-order batches, and threads.

    .venv/bin/python benches/embed_throughput.py                          # 600 passages, every setting
    .venv/bin/python benches/embed_throughput.py --sample 6575 --only 128,32   # the whole corpus, one setting

Needs `fanfuse[embed]`. Reports wall time and CPU time (user + system of all threads: the steadier
number on a shared machine) and the load average around each run, since other processes share the cores.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Sequence

import numpy as np
from fanfuse.retrievers.default_encoder import default_encoder
from fanfuse.retrievers.dense import document_text
from fanfuse.stdlib_corpus import stdlib_index
from measuring import load_averages, machine, versions


def corpus_sample(size: int, cache_dir: str) -> list[str]:
    index, _ = stdlib_index(cache_dir)
    texts = [document_text(d) for d in index.documents()]
    step = max(1, len(texts) // size)
    return texts[::step][:size]


def corpus_order(
    embed: Callable[[Sequence[str]], object], batch_size: int
) -> Callable[[Sequence[str]], None]:
    """Batches in corpus order: each call gets one batch, so sorting cannot regroup lengths."""

    def run(texts: Sequence[str]) -> None:
        for start in range(0, len(texts), batch_size):
            embed(texts[start : start + batch_size])

    return run


def measure(run: Callable[[Sequence[str]], object], texts: Sequence[str]) -> tuple[float, float, float]:
    load = load_averages()[0]
    start, cpu = time.perf_counter(), time.process_time()
    run(texts)
    return time.perf_counter() - start, time.process_time() - cpu, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=600, help="passages to embed per setting")
    parser.add_argument("--only", help="one setting: MAX_LENGTH,BATCH_SIZE")
    parser.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "fanfuse-bench-stdlib"))
    args = parser.parse_args()
    texts = corpus_sample(args.sample, args.cache_dir)
    if args.only:
        length, batch = (int(x) for x in args.only.split(","))
        settings = [(length, batch, True, None)]
    else:
        settings = [(length, 32, True, None) for length in (64, 128, 256)]
        settings += [(128, batch, True, None) for batch in (8, 64)]
        settings += [(128, 32, False, None), (128, 32, True, 1)]
    described = machine(*versions("onnxruntime"))
    print(f"{len(texts)} passages of the standard-library corpus; machine: {described}")
    print("| max tokens | batch | batches | threads | tokens/passage | passages/s | CPU ms/passage | load |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for length, batch, by_length, threads in settings:
        encoder = default_encoder(max_length=length, batch_size=batch, threads=threads)
        tokens = np.mean([len(e.ids) for e in encoder._tokenizer.encode_batch(list(texts))])
        run = encoder.embed_passages if by_length else corpus_order(encoder.embed_passages, batch)
        wall, cpu, load = measure(run, texts)
        order = "by length" if by_length else "corpus order"
        print(
            f"| {length} | {batch} | {order} | {threads or 'all'} | {tokens:.0f} | {len(texts) / wall:.0f} "
            f"| {cpu / len(texts) * 1e3:.1f} | {load:.1f} |"
        )


if __name__ == "__main__":
    main()
