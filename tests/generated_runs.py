"""Runs, qrels and an MT-RAG-like folder generated from a seed, for tests that must not depend on the
real MT-RAG data beside the repository. They have its shapes: query ids with `<::>`, document ids
with `-` and `_`, queries missing from some runs, tied scores, contexts carrying text and other
fields; and what the real files never show: lines of different queries interleaved, contexts out of
rank order, a query's contexts split over two records.
"""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

# One run: query id -> (docid, score) pairs, in no particular order.
Hits = dict[str, list[tuple[str, float]]]


def query_id(n: int) -> str:
    return f"{n * 2654435761 % 2**32:08x}<::>{n % 5 + 1}"


def doc_id(n: int) -> str:
    return f"{n:05d}_{n * 37}-{n * 37 + 512}-0-512"


def generated_runs(
    rng: random.Random, *, runs: int, queries: int, docs: int = 40, depth: int = 12
) -> list[Hits]:
    """`runs` runs over `queries` queries; each run lacks about one query in seven (none lacks one
    that every other run lacks), scores come from a coarse grid, so that ties are common."""
    qids = [query_id(n) for n in range(queries)]
    generated: list[Hits] = [{} for _ in range(runs)]
    for q in qids:
        present = [r for r in range(runs) if rng.random() > 0.15] or [rng.randrange(runs)]
        for r in present:
            chosen = rng.sample(range(docs), rng.randint(1, depth))
            generated[r][q] = [(doc_id(d), rng.randint(0, 12) / 4) for d in chosen]
    return generated


def ranked(hits: list[tuple[str, float]]) -> list[str]:
    """Docids as trec_eval orders them: score descending, ties by docid descending."""
    return [d for d, _ in sorted(hits, key=lambda hit: (hit[1], hit[0]), reverse=True)]


def write_trec(path: Path, run: Hits, rng: random.Random, *, interleaved: bool) -> str:
    """TREC lines with a rank column that says nothing (ranks come from scores) and mixed whitespace;
    `interleaved` shuffles all lines, otherwise queries follow each other in sorted order."""
    lines = []
    for q in sorted(run):
        hits = run[q][:]
        rng.shuffle(hits)
        lines += [
            f"{q}{rng.choice([' ', chr(9)])}Q0 {d} {i + 1} {s!r} gen\n" for i, (d, s) in enumerate(hits)
        ]
    if interleaved:
        rng.shuffle(lines)
    path.write_text("".join(lines), encoding="utf-8")
    return str(path)


@dataclass
class Contexts:
    """The fields other than `document_id` and `score` that every run gives a document, both as the
    raw JSON of each value (exponents and escapes as written) and parsed."""

    raw: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def of(self, doc: str, rng: random.Random) -> list[tuple[str, str]]:
        if doc not in self.raw:
            text = f"Passage {doc}: naïve café — “quoted” \\ back\nslash, line two"
            fields = [("text", json.dumps(text, ensure_ascii=rng.random() < 0.5))]
            if rng.random() < 0.7:
                fields.append(("title", json.dumps(f"Title é {doc[:5]}", ensure_ascii=True)))
            if rng.random() < 0.5:
                fields.append(
                    ("source", '{"url": "https://example.org/a?b=1&c=%20", "tags": ["x", "\\u00e9"]}')
                )
            if rng.random() < 0.5:
                fields.append(("weight", rng.choice(["1.50e+02", "-0.0", "7", "1E-7", "null", "true"])))
            rng.shuffle(fields)
            self.raw[doc] = fields
        return self.raw[doc]

    def parsed(self, doc: str) -> list[tuple[str, object]]:
        return [(key, json.loads(value)) for key, value in self.raw[doc]]


def write_mtrag(
    path: Path, run: Hits, rng: random.Random, contexts: Contexts, *, collection: str, interleaved: bool
) -> str:
    """MT-RAG JSONL: one record per query with its contexts in random order (each with the fields of
    `contexts`, `document_id` and `score` anywhere among them); `interleaved` also splits some
    queries over two records and shuffles the records."""
    records = []
    for q in sorted(run):
        items = []
        for d, s in run[q]:
            members = list(contexts.of(d, rng))
            for member in (("document_id", json.dumps(d)), ("score", repr(s))):
                members.insert(rng.randint(0, len(members)), member)
            items.append("{" + ", ".join(f'"{key}": {value}' for key, value in members) + "}")
        rng.shuffle(items)
        cut = rng.randint(1, len(items) - 1) if interleaved and len(items) > 1 and rng.random() < 0.4 else 0
        for part in (items[:cut], items[cut:]) if cut else (items,):
            head = f'{{"task_id": {json.dumps(q)}, "Collection": {json.dumps(collection)}, "contexts": ['
            records.append(head + ", ".join(part) + "]}\n")
    if interleaved:
        rng.shuffle(records)
    path.write_text("".join(records), encoding="utf-8")
    return str(path)


def write_beir_qrels(path: Path, qrels: dict[str, dict[str, int]]) -> str:
    lines = ["query-id\tcorpus-id\tscore\n"]
    lines += [f"{q}\t{d}\t{grade}\n" for q, judged in qrels.items() for d, grade in judged.items()]
    path.write_text("".join(lines), encoding="utf-8")
    return str(path)


def generated_qrels(
    rng: random.Random, runs: list[Hits], *, judged_share: float = 0.8
) -> dict[str, dict[str, int]]:
    """Graded judgments (1-3, some 0) for most queries: documents some run retrieved, and one that
    no run retrieved."""
    qrels: dict[str, dict[str, int]] = {}
    for q in sorted({q for run in runs for q in run}):
        if rng.random() > judged_share:
            continue
        retrieved = sorted({d for run in runs for d, _ in run.get(q, [])})
        judged = rng.sample(retrieved, min(len(retrieved), rng.randint(1, 4)))
        qrels[q] = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
        qrels[q][doc_id(10_000 + len(qrels))] = 1
    return qrels


def write_mtrag_folder(root: Path, domain: str, topics: list[tuple[str, str]], filler: list[str]) -> Path:
    """The MT-RAG layout `benches/mtrag_retrieval.py --data` reads, for one domain: a passage pool,
    last-turn and rewritten queries, BEIR qrels. Topic `i` (two words found nowhere else) has two
    relevant passages holding both words and a query asking for them; the filler passages share
    none of those words."""
    passages, lastturn, rewrite, qrels = [], [], [], {}
    for i, (first, second) in enumerate(topics):
        relevant = [f"{domain}-{i}-rel{j}" for j in range(2)]
        passages += [
            {
                "document_id": d,
                "title": f"{first} {j}",
                "text": f"{first} {second} {filler[(i + j) % len(filler)]}",
            }
            for j, d in enumerate(relevant)
        ]
        qid = f"{domain}{i:04d}<::>{i % 3 + 1}"
        lastturn.append({"_id": qid, "text": f"|user|: {first} {second}?"})
        rewrite.append({"_id": qid, "text": f"|user|: {second} {first}"})
        qrels[qid] = dict.fromkeys(relevant, 1)
    passages += [
        {
            "document_id": f"{domain}-filler-{n}",
            "title": word,
            "text": f"{word} {filler[n - 1]} {filler[n - 2]}",
        }
        for n, word in enumerate(filler)
    ]
    (root / "passages").mkdir(parents=True, exist_ok=True)
    with gzip.open(root / "passages" / f"{domain}_pool.jsonl.gz", "wt", encoding="utf-8") as pool:
        pool.writelines(json.dumps(p) + "\n" for p in passages)
    queries = root / "queries" / domain
    queries.mkdir(parents=True)
    for strategy, records in (("lastturn", lastturn), ("rewrite", rewrite)):
        lines = "".join(json.dumps(r) + "\n" for r in records)
        (queries / f"{domain}_{strategy}.jsonl").write_text(lines, encoding="utf-8")
    (root / "qrels" / domain).mkdir(parents=True)
    write_beir_qrels(root / "qrels" / domain / "dev.tsv", qrels)
    return root
