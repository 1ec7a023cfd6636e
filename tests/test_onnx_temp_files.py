"""A process that embeds with the ONNX encoder leaves nothing in its temporary directory: onnxruntime's
telemetry SDK writes a session file there (`.ses`: a first-launch time and an id) when it is imported,
and the package removes the one its import wrote. Run in a process of its own with an empty TMPDIR, as
a server started by a service manager with a private temporary directory would be."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fanfuse.retrievers.default_encoder import embed_extra_installed

pytestmark = pytest.mark.skipif(not embed_extra_installed(), reason="needs fanfuse[embed]")

EMBED = """
from fanfuse.retrievers.default_encoder import default_encoder
encoder = default_encoder()
assert encoder.embed_queries(["owls at night"]).shape[0] == 1
"""


def test_embedding_leaves_no_file_in_the_temporary_directory(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    environment = {**os.environ, "TMPDIR": str(temporary)}
    subprocess.run([sys.executable, "-c", EMBED], env=environment, check=True, timeout=300)
    assert sorted(p.name for p in temporary.iterdir()) == []


def test_a_session_file_already_there_is_left_alone(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    theirs = temporary / ".ses"
    theirs.write_text("another program's\n")
    environment = {**os.environ, "TMPDIR": str(temporary)}
    subprocess.run([sys.executable, "-c", EMBED], env=environment, check=True, timeout=300)
    assert theirs.exists()
