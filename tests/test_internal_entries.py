"""The private entry points of the core (``fanfuse._core._internal``): the ones only the package's own
layers call live there and nowhere in ``_core``, whose names are its API; a run file's blocks hold each
line once with its place in the file, and each row entry names what is wrong with its input."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import fanfuse
import fanfuse._core
import pytest
from fanfuse import FusionError, InvalidSetting, OutOfRange

STUB = Path(fanfuse.__file__).parent / "_core" / "_internal.pyi"


def test_the_private_entry_points_live_in_the_private_submodule() -> None:
    """Every function and class of ``_internal``'s stub is found there by ``import`` and by attribute,
    is named there, and is none of ``_core``'s names; and ``_internal`` holds nothing else."""
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)]
    internal = importlib.import_module("fanfuse._core._internal")
    assert internal is fanfuse._core._internal
    for name in names:
        assert getattr(internal, name).__module__ == "fanfuse._core._internal", name
        assert not hasattr(fanfuse._core, name), name
    assert sorted(names) == sorted(n for n in dir(internal) if not n.startswith("__"))


def test_every_private_name_of_the_core_is_a_constant_or_the_base_of_its_public_face() -> None:
    """An underscored function or class in ``_core`` would sit beside the API: each one belongs in
    ``_internal``, but for a class whose public face of the same name derives from it
    (``_FusionOptions``, ``fanfuse.FusionOptions``). Enumerated from the module, so a new one fails here."""
    for name in dir(fanfuse._core):
        if not name.startswith("_") or name.startswith("__") or name == "_internal":
            continue
        value = getattr(fanfuse._core, name)
        if inspect.isclass(value):
            face = getattr(fanfuse, name.lstrip("_"), None)
            assert inspect.isclass(face) and issubclass(face, value), f"_core.{name} belongs in _internal"
        else:
            assert not callable(value), f"_core.{name} belongs in _internal"


def test_the_blocks_of_a_run_file_hold_each_line_once_with_its_place_in_the_file(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    from fanfuse._core._internal import file_blocks, read_run_block

    path = tmp_path / "run.trec"
    lines = [f"q{i // 7} Q0 d{i} {i % 7 + 1} {1 / (i + 1)!r} t\n" for i in range(500)]
    lines[0] = "\ufeff" + lines[0]  # a byte-order mark: skipped at the top of the file only
    lines.insert(250, "# a comment\n")
    lines.insert(100, "\n")
    path.write_text("".join(lines), encoding="utf-8")
    for block_bytes in (1, 37, 1000, 1 << 20):
        rows, before, groups = [], 0, []
        for start, end in file_blocks(str(path), block_bytes=block_bytes):
            (_, lines_in, groups_in, _, _), batches = read_run_block(str(path), start=start, end=end)
            batch = pa.record_batch(batches[0])
            rows += [
                (q, d, before + n)
                for q, d, n in zip(
                    *(batch.column(c).to_pylist() for c in ("qid", "docid", "line")), strict=True
                )
            ]
            before += lines_in
            groups.append(groups_in)
        assert before == len(lines)
        expected = [(f"q{i // 7}", f"d{i}") for i in range(500)]
        assert [(q, d) for q, d, _ in rows] == expected, block_bytes
        assert [n for _, _, n in rows] == [i + 1 + (i >= 100) + (i >= 250) for i in range(500)]


def test_the_row_entry_names_what_is_wrong(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    from fanfuse._core._internal import file_blocks, fuse_rows, read_run_block, write_run_text

    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq2 Q0 c 1 bad t\n", encoding="utf-8")
    with pytest.raises(FusionError, match=r"run.trec:3: "):
        read_run_block(str(path), start=20)  # the bad line, in a block that starts at line 2
    with pytest.raises(OutOfRange, match=r"partitions must be an int from 1 to 100000 \(got 0\)"):
        read_run_block(str(path), partitions=0)
    with pytest.raises(OutOfRange, match=r"block_bytes must be an int >= 1 \(got 0\)"):
        file_blocks(str(path), block_bytes=0)
    packed = tmp_path / "run.trec.gz"
    packed.write_bytes(__import__("gzip").compress(b"q1 Q0 a 1 2.0 t\n"))
    assert file_blocks(str(packed), block_bytes=1) == [(0, packed.stat().st_size)]
    with pytest.raises(FusionError, match=r"gzip, which is read whole"):
        read_run_block(str(packed), start=5)
    good = tmp_path / "good.trec"
    good.write_text("q1 Q0 a 1 2.0 t\n", encoding="utf-8")
    summary, batches = read_run_block(str(good))
    with pytest.raises(FusionError, match=r"2 row batches for 1 blocks"):
        fuse_rows([batches[0], batches[0]], blocks=[summary], names=["good"])
    with pytest.raises(FusionError, match=r"rows\[0\] has no column 'group'"):
        fuse_rows([pa.record_batch(batches[0]).drop_columns(["group"])], blocks=[summary], names=["good"])
    with pytest.raises(FusionError, match=r"blocks\[0\] is of run 0, but there are 0 runs"):
        fuse_rows(batches, blocks=[summary], names=[])
    with pytest.raises(InvalidSetting, match=r"format='mtrag' needs the passthrough fields"):
        fuse_rows(batches, blocks=[summary], names=["good"], format="mtrag")
    with pytest.raises(TypeError, match=r"blocks\[0\] must be a block summary"):
        fuse_rows(batches, blocks=[(0, 1)], names=["good"])
    with pytest.raises(FusionError, match=r"nothing to write"):
        write_run_text(str(tmp_path / "out.trec"), [])
    assert not (tmp_path / "out.trec").exists()
    # An exported batch is read again at every export; len() is its rows.
    assert len(batches[0]) == 1 and pa.record_batch(batches[0]).equals(pa.record_batch(batches[0]))
