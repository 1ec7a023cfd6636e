"""rrf_batch equals a loop of rrf; concurrency: threads, the released GIL, and fork."""

from __future__ import annotations

import itertools
import os
import random
import select
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import fanfuse
import numpy as np
import pytest
from fanfuse._core import _internal
from hypothesis import given
from hypothesis import strategies as st
from rrf_strategies import OPTIONS, examples, int_calls, str_calls

# rrf_batch uses its thread pool from this many queries on (batch.rs MIN_PARALLEL_QUERIES).
POOL_MIN_QUERIES = 256


def random_batch(seed: int, n_queries: int, as_str: bool = True) -> list[list[list[Any]]]:
    """Queries of 1-4 ranked lists over a small pool, so that ids overlap and ties occur."""
    rng = random.Random(seed)
    batch = []
    for _ in range(n_queries):
        lists = []
        for _ in range(rng.randint(1, 4)):
            ids = [rng.randrange(60) for _ in range(rng.randint(0, 40))]
            lists.append([f"d{i}" for i in ids] if as_str else ids)
        batch.append(lists)
    return batch


@examples(0.1)
# One batch is one call: its ids are all str or all int (mixing them is a TypeError, see the error tests).
@given(st.lists(str_calls(), max_size=5) | st.lists(int_calls(), max_size=5), st.sampled_from([1, 2, None]))
def test_batch_equals_loop_of_rrf(calls: list[tuple[list[Any], dict[str, Any]]], threads: int | None) -> None:
    queries = [lists for lists, _ in calls]
    opts = {key: value for key, value in (calls[0][1] if calls else {}).items() if key != "weights"}
    assert fanfuse.rrf_batch(queries, threads=threads, **opts) == [fanfuse.rrf(q, **opts) for q in queries]


@examples(0.1)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(st.just(n), OPTIONS[n])))
def test_batch_weights_apply_to_every_query(call: tuple[int, dict[str, Any]]) -> None:
    n_lists, opts = call
    queries = [random_batch(seed, 1)[0][:1] * n_lists for seed in range(3)]
    assert fanfuse.rrf_batch(queries, **opts) == [fanfuse.rrf(q, **opts) for q in queries]


@examples(0.004)
@given(st.integers(0, 2**32), st.booleans(), st.sampled_from(["rank", "id"]))
def test_pool_path_equals_serial_and_loop(seed: int, as_str: bool, tie_break: str) -> None:
    queries = random_batch(seed, POOL_MIN_QUERIES + 50, as_str)
    serial = fanfuse.rrf_batch(queries, threads=1, tie_break=tie_break, top_k=10)
    assert fanfuse.rrf_batch(queries, threads=2, tie_break=tie_break, top_k=10) == serial
    assert serial == [fanfuse.rrf(q, tie_break=tie_break, top_k=10) for q in queries]


def test_default_threads_come_from_the_environment() -> None:
    code = "import fanfuse; print(fanfuse.default_threads())"
    for value, expected in (("3", "3"), ("", "1"), ("0", "1"), ("many", "1")):
        env = {**os.environ, "FANFUSE_NUM_THREADS": value}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == expected, value


def test_empty_batch_and_empty_queries() -> None:
    assert fanfuse.rrf_batch([]) == []
    assert [f.ids for f in fanfuse.rrf_batch([[], [[]], [["a"]]])] == [[], [], ["a"]]


def test_sixteen_threads_calling_concurrently_get_the_serial_results() -> None:
    singles = random_batch(1, 200)
    batches = [random_batch(seed, POOL_MIN_QUERIES) for seed in range(4)]
    expected_singles = [fanfuse.rrf(q, top_k=5) for q in singles]
    expected_batches = [fanfuse.rrf_batch(b, top_k=5, threads=1) for b in batches]

    def work(worker: int) -> bool:
        if worker % 2:
            return [fanfuse.rrf(q, top_k=5) for q in singles] == expected_singles
        batch = worker // 2 % len(batches)
        return fanfuse.rrf_batch(batches[batch], top_k=5) == expected_batches[batch]

    with ThreadPoolExecutor(max_workers=16) as pool:
        assert all(pool.map(work, range(64)))


def test_gil_is_released_while_a_batch_runs() -> None:
    # Queries big enough that the kernel runs for a while (tens of milliseconds) after extraction.
    rng = np.random.default_rng(3)
    queries = [[rng.integers(0, 5_000, size=2_000) for _ in range(4)] for _ in range(100)]
    ticks: list[int] = []
    started, stop = threading.Event(), threading.Event()

    def ticker() -> None:
        started.set()
        while not stop.is_set():
            ticks.append(time.perf_counter_ns())
            time.sleep(0)  # drops the GIL, so the main thread gets it back at once

    old_interval = sys.getswitchinterval()
    # With a 10 s switch interval the main thread never has to yield the GIL during the call: the
    # ticker can only tick inside the call if rrf_batch releases the GIL itself.
    sys.setswitchinterval(10.0)
    thread = threading.Thread(target=ticker)
    try:
        thread.start()
        started.wait()
        before = time.perf_counter_ns()
        fanfuse.rrf_batch(queries, threads=1)
        after = time.perf_counter_ns()
    finally:
        stop.set()
        sys.setswitchinterval(old_interval)
        thread.join()
    assert any(before < tick < after for tick in ticks)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_batch_in_a_forked_child_after_the_pool_ran() -> None:
    queries = random_batch(5, POOL_MIN_QUERIES * 2)
    expected = fanfuse.rrf_batch(queries, threads=2, top_k=10)  # starts the pool in the parent
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: a pool thread that no longer exists must not deadlock the batch
        # Whatever happens, the child never returns into pytest: a second copy of this worker would
        # talk over the same channel as its parent.
        try:
            ok = (
                fanfuse.rrf_batch(queries, threads=2, top_k=10) == expected and fanfuse.default_threads() == 1
            )
            os.write(write_end, b"ok" if ok else b"wrong")
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 60)
        answer = os.read(read_end, 16) if ready else b"timeout (deadlock?)"
    finally:
        if not ready:
            os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(read_end)
    assert answer == b"ok"


def test_no_reference_to_an_input_id_is_kept_or_leaked() -> None:
    # Every path that reads str ids (single call, serial batch, pooled batch, explain) leaves the
    # caller's objects with the reference counts they had once the results are gone.
    ids = [f"doc-{i}" for i in range(300)]  # fresh objects: their refcounts are ours alone
    queries = [[ids[i : i + 100], ids[i + 50 : i + 150]] for i in range(0, 150, 10)]
    before = [sys.getrefcount(s) for s in ids]
    single = fanfuse.rrf(queries[0])
    batch = fanfuse.rrf_batch(queries, threads=1)
    pooled = fanfuse.rrf_batch(queries * 40, threads=2)  # past the pool's minimum batch size
    explained = fanfuse.fuse(queries[1], explain=True)
    assert single.ids[0] == ids[50] and pooled[0] == batch[0] and explained.ids == batch[1].ids
    del single, batch, pooled, explained
    assert [sys.getrefcount(s) for s in ids] == before


def test_lists_rewritten_by_another_thread_during_a_batch() -> None:
    # Between chunks the GIL is released and another thread replaces the lists' contents with new
    # strs, dropping the last reference to the old ones: the ids a chunk read were copied into Rust
    # first, so every result is the fusion of whole lists as the call read them. Each list's ids name
    # its query, its position and the rewrite that wrote it, so the result tells which version of each
    # list was read, and must then be exactly the fusion of those versions.
    def version(tag: str, q: int, j: int) -> list[str]:
        return [f"{tag}-{q}-{j}-{i}" for i in range(200)]

    queries = [[version("original", q, j) for j in range(3)] for q in range(300)]
    stop, rewritten_once = threading.Event(), threading.Event()

    def rewrite() -> None:
        for rewrite_pass in itertools.count():
            for q, query in enumerate(queries):
                for j, lst in enumerate(query):
                    lst[:] = version(f"pass{rewrite_pass}", q, j)
                time.sleep(0)  # hands the GIL back, between chunks of the batch as well
                if stop.is_set():
                    return
            rewritten_once.set()

    thread = threading.Thread(target=rewrite)
    thread.start()
    try:
        results = [fanfuse.rrf_batch(queries, threads=1) for _ in range(3)]
        assert rewritten_once.wait(timeout=60)
        results.append(fanfuse.rrf_batch(queries, threads=1))  # after a whole pass: nothing original
    finally:
        stop.set()
        thread.join()
    for batch in results:
        for q, fused in enumerate(batch):
            tags = {j: {d.split("-")[0] for d in fused.ids if d.split("-")[2] == str(j)} for j in range(3)}
            assert all(len(found) == 1 for found in tags.values()), (q, tags)  # no list read half-way
            read = [version(tags[j].pop(), q, j) for j in range(3)]
            assert fused == fanfuse.rrf(read)
    assert all(not fused.ids[0].startswith("original") for fused in results[-1])


def test_the_kernel_timer_of_the_benchmarks_reads_a_batch_as_rrf_batch_does() -> None:
    # benches/compare.py times the bare kernel with it: the same chunks, checked the same way.
    queries = random_batch(3, POOL_MIN_QUERIES)
    assert _internal._kernel_seconds(queries, top_k=5, repeat=2) > 0
    for repeat in (0, -1, 2**64):  # read as every int argument is: a named refusal, no OverflowError
        with pytest.raises(fanfuse.OutOfRange, match=rf"^repeat must be an int >= 1 \(got {repeat}\)"):
            _internal._kernel_seconds(queries, repeat=repeat)
    mixed: list[Any] = [*queries, [[1]]]
    message = rf"queries\[{POOL_MIN_QUERIES}\]\[0\]\[0\] is an int, but queries\[0\]\[0\]\[0\] is a str"
    for call in (fanfuse.rrf_batch, _internal._kernel_seconds):
        with pytest.raises(TypeError, match=message):
            call(mixed)
