"""Small valid inputs of every kind a command reads, under the names the command tests use: two runs
of 6 queries (`a.trec`, `b.trec`, ranking each query's documents in opposite orders), their qrels,
qrels of other queries (`other-qrels.txt`), a corpus of 5 documents and a probfuse model trained on
the runs (`model.json`)."""

from __future__ import annotations

from pathlib import Path

import fanfuse

RUN_A = "".join(f"q{q} Q0 d{q}-{i} {i + 1} {10 - i} a\n" for q in range(6) for i in range(5))
RUN_B = "".join(f"q{q} Q0 d{q}-{4 - i} {i + 1} {10 - i} b\n" for q in range(6) for i in range(5))
QRELS = "".join(f"q{q} 0 d{q}-{q % 5} 1\n" for q in range(6))
OTHER_QRELS = "".join(f"x{q} 0 d{q}-{q % 5} 1\n" for q in range(6))
CORPUS = "".join(f'{{"id": "doc{i}", "text": "alpha word{i} text"}}\n' for i in range(5))


def write_inputs(directory: Path) -> Path:
    texts = {"a.trec": RUN_A, "b.trec": RUN_B, "qrels.txt": QRELS, "other-qrels.txt": OTHER_QRELS}
    for name, text in {**texts, "corpus.jsonl": CORPUS}.items():
        (directory / name).write_text(text)
    runs = [fanfuse.read_run(str(directory / name)) for name in ("a.trec", "b.trec")]
    model = fanfuse.train_fusion(runs, fanfuse.read_qrels(str(directory / "qrels.txt")), method="probfuse")
    model.save(str(directory / "model.json"))
    return directory
