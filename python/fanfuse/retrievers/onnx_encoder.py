"""`OnnxEncoder`: sentence embeddings from an ONNX model on onnxruntime (no PyTorch, no download).

Any sentence-embedding model exported to ONNX works (MiniLM, BGE, E5, GTE...): point it at a
directory holding `model.onnx` (or `onnx/model.onnx`) and the Hugging Face `tokenizer.json`, or at
the two files. The pipeline is sentence-transformers': WordPiece/BPE tokens truncated to
`max_length`, the model, pooling over the attention mask (mean, or the first token for CLS-pooled
models such as BGE; read from `1_Pooling/config.json` when the directory has one), L2 normalisation.
A graph that already outputs `sentence_embedding` is used as it is. `query_prefix` and
`passage_prefix` are the instructions some models were trained with (E5: "query: " / "passage: ";
BGE: "Represent this sentence for searching relevant passages: " on queries only).

Needs onnxruntime and tokenizers (`pip install 'fanfuse[embed]'`); imported on construction only.
An encoder is immutable once built, and `embed_*` may be called from several threads at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from fanfuse.errors import InvalidEncoder, MissingExtra, OutOfRange
from fanfuse.limits import LIMITS, check_choice, check_int, optional_int
from fanfuse.text import check_strs

EMBED_EXTRA = "pip install 'fanfuse[embed]'"
#: How token vectors become one: their mean over the attention mask, or the first token's (CLS).
Pooling = Literal["mean", "cls"]
POOLINGS: tuple[Pooling, ...] = get_args(Pooling)
# Where Hugging Face repositories and sentence-transformers exports keep the graph.
_MODEL_FILES = ("model.onnx", "onnx/model.onnx")
_TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
_POOLED_OUTPUT = "sentence_embedding"
_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_INPUT_TYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}
# Queries are embedded at most this many to a batch: the micro-batches of a service mix a search's
# short and long variants, and one batch padded to its longest text cost more per query than
# embedding them one by one (9.5 vs 8.3 CPU ms a query), batches of 4-8 sorted by length less
# (4.9-5.5 ms; docs/performance.md).
QUERY_BATCH_SIZE = 8
#: The environment variable that sets the default intra-op thread count of every encoder.
THREADS_VARIABLE = "FANFUSE_ENCODER_THREADS"


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class OnnxEncoder:
    """Embeds queries and passages with an ONNX sentence-embedding model.

    `model`: an `.onnx` file or a directory with one; `tokenizer`: its `tokenizer.json` (default:
    beside the model, or one level up from an `onnx/` folder). `pooling`: "mean" or "cls"
    (default: the model's `1_Pooling/config.json`, else mean). `max_length` truncates every text to
    that many tokens (the model's own limit is usually 512; shorter is faster). Texts are sorted by
    length and embedded `batch_size` at a time, so little time goes into padding. `threads`: the
    intra-op threads of onnxruntime (default: `FANFUSE_ENCODER_THREADS`, else the CPUs this process
    may use; `fanfuse serve --workers N` sets it to the CPUs / N). `sha256` pins the
    model file: a different file is refused. `name` is what the index manifest records.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        tokenizer: str | os.PathLike[str] | None = None,
        name: str | None = None,
        pooling: Pooling | None = None,
        normalize: bool = True,
        query_prefix: str = "",
        passage_prefix: str = "",
        max_length: int = 256,
        batch_size: int = 32,
        threads: int | None = None,
        sha256: str | None = None,
    ) -> None:
        _check_options(pooling, max_length, batch_size, threads, query_prefix, passage_prefix)
        ort, tokenizers = _import_runtime()
        self.model_path = _model_file(Path(model))
        self.tokenizer_path = _tokenizer_file(self.model_path, tokenizer)
        self.sha256 = file_sha256(self.model_path)
        if sha256 is not None and self.sha256 != sha256.lower():
            raise InvalidEncoder(
                f"{self.model_path}: sha256 is {self.sha256}, expected {sha256}; the file is damaged "
                f"or another model (reinstall it, or drop the pin)"
            )
        self.max_length, self.batch_size = max_length, batch_size
        self.query_prefix, self.passage_prefix, self.normalize = query_prefix, passage_prefix, normalize
        self._tokenizer, self._pad_id = _load_tokenizer(tokenizers, self.tokenizer_path, max_length)
        self._session = _load_session(ort, self.model_path, threads)
        self._input_types = _input_types(self._session, self.model_path)
        self._output, pooled = _choose_output(self._session, self.model_path)
        self.pooling = "model" if pooled else (pooling or _configured_pooling(self.model_path) or "mean")
        # A file named model.onnx says nothing: its directory (a model's repository) is the name.
        self.name = name or (_model_root(self.model_path).name if self.model_path.stem == "model" else "")
        self.name = self.name or self.model_path.stem
        self._tokenizer_sha256 = file_sha256(self.tokenizer_path)
        self.dimensions = 0
        self.dimensions = int(self._embed(["dimension probe"], "", None, 1).shape[1])

    @property
    def identity(self) -> dict[str, Any]:
        """What decides the vector space: two encoders with equal identities give comparable vectors."""
        return {
            "name": self.name,
            "model_sha256": self.sha256,
            "tokenizer_sha256": self._tokenizer_sha256,
            "dimensions": self.dimensions,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
        }

    @property
    def settings(self) -> dict[str, Any]:
        """The arguments that rebuild this encoder: `OnnxEncoder(**encoder.settings)` (JSON-ready)."""
        return {
            "model": str(self.model_path),
            "tokenizer": str(self.tokenizer_path),
            "name": self.name,
            "pooling": None if self.pooling == "model" else self.pooling,
            "normalize": self.normalize,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "max_length": self.max_length,
        }

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text, with `query_prefix` prepended."""
        return self._embed(texts, self.query_prefix, None, min(self.batch_size, QUERY_BATCH_SIZE))

    def embed_passages(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> npt.NDArray[np.float32]:
        """One row per text, with `passage_prefix` prepended; `progress(done)` after each batch."""
        return self._embed(texts, self.passage_prefix, progress, self.batch_size)

    def _embed(
        self, texts: Sequence[str], prefix: str, progress: Callable[[int], None] | None, batch_size: int
    ) -> npt.NDArray[np.float32]:
        texts = check_strs(texts, "texts")
        encodings = self._tokenizer.encode_batch([prefix + text for text in texts])
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)
        # Shortest first: each batch is padded to its longest text, so similar lengths waste little.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = self._run([encodings[i] for i in rows])
            if vectors.shape[1] != batch.shape[1]:  # only while probing the dimensions
                vectors = np.empty((len(texts), batch.shape[1]), dtype=np.float32)
            vectors[rows] = batch
            if progress is not None:
                progress(start + len(rows))
        return vectors

    def _run(self, encodings: Sequence[Any]) -> npt.NDArray[np.float32]:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            ids[row, :length], mask[row, :length], types[row, :length] = (
                encoding.ids,
                encoding.attention_mask,
                encoding.type_ids,
            )
        tensors = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feeds = {name: tensors[name].astype(dtype, copy=False) for name, dtype in self._input_types.items()}
        try:
            (output,) = self._session.run([self._output], feeds)
        except Exception as error:  # onnxruntime raises its own exception types, all undocumented
            raise InvalidEncoder(
                f"{self.model_path}: inference failed on a batch of {len(encodings)} texts of up to "
                f"{width} tokens ({error}); a max_length above the model's limit fails like this"
            ) from None
        hidden = np.asarray(output, dtype=np.float32)
        if self.pooling == "model":
            pooled = hidden
        elif self.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        if self.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
        return np.ascontiguousarray(pooled, dtype=np.float32)

    def __repr__(self) -> str:
        return (
            f"OnnxEncoder({str(self.model_path)!r}, name={self.name!r}, dimensions={self.dimensions}, "
            f"pooling={self.pooling!r}, max_length={self.max_length})"
        )


def _check_options(
    pooling: Pooling | None,
    max_length: int,
    batch_size: int,
    threads: int | None,
    query_prefix: str,
    passage_prefix: str,
) -> None:
    if pooling is not None:  # None: the model's own
        check_choice("pooling", pooling, POOLINGS)
    check_int("max_length", max_length)
    check_int("batch_size", batch_size)
    optional_int("encoder_threads", threads)  # None: every CPU
    for option, prefix in (("query_prefix", query_prefix), ("passage_prefix", passage_prefix)):
        if not isinstance(prefix, str):
            raise TypeError(f"{option} must be a str (got {type(prefix).__name__})")


def _import_runtime() -> tuple[Any, Any]:
    # onnxruntime's telemetry SDK writes a session file (a first-launch time and an id) to $TMPDIR,
    # else /tmp, when imported: the one this import wrote is removed, so a process leaves none there.
    session_file = Path(os.environ.get("TMPDIR") or "/tmp") / ".ses"
    written_here = not session_file.exists()
    try:
        import onnxruntime
        import tokenizers
    except ImportError as error:
        raise MissingExtra(
            f"OnnxEncoder needs onnxruntime and tokenizers ({error}): {EMBED_EXTRA}", extra="embed"
        ) from None
    finally:
        if written_here:
            with contextlib.suppress(OSError):  # none written (an unwritable or missing folder)
                session_file.unlink()
    return onnxruntime, tokenizers


def _model_file(model: Path) -> Path:
    if model.is_file():
        return model
    if not model.is_dir():
        raise InvalidEncoder(
            f"model path {str(model)!r} does not exist (expected an .onnx file, or a directory with "
            f"model.onnx and tokenizer.json)"
        )
    for name in _MODEL_FILES:
        if (model / name).is_file():
            return model / name
    found = sorted(model.glob("*.onnx")) + sorted(model.glob("onnx/*.onnx"))
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(str(path.relative_to(model)) for path in found)
        raise InvalidEncoder(
            f"model directory {str(model)!r} holds several ONNX files ({names}); pass the file"
        )
    raise InvalidEncoder(
        f"model directory {str(model)!r} has no ONNX file (looked for {', '.join(_MODEL_FILES)}, *.onnx)"
    )


def _model_root(model_file: Path) -> Path:
    """The directory of the model's other files: one level up from a Hugging Face `onnx/` folder."""
    return model_file.parent.parent if model_file.parent.name == "onnx" else model_file.parent


def _tokenizer_file(model_file: Path, tokenizer: str | os.PathLike[str] | None) -> Path:
    if tokenizer is not None:
        path = Path(tokenizer)
        path = path / "tokenizer.json" if path.is_dir() else path
        if not path.is_file():
            raise InvalidEncoder(f"tokenizer file {str(path)!r} does not exist (expected a tokenizer.json)")
        return path
    candidates = [model_file.parent / "tokenizer.json", _model_root(model_file) / "tokenizer.json"]
    for path in candidates:
        if path.is_file():
            return path
    raise InvalidEncoder(
        f"no tokenizer.json beside the model {str(model_file)!r} (looked for {str(candidates[-1])!r}); "
        f"pass tokenizer=PATH (the Hugging Face tokenizers file of the same model)"
    )


def _configured_pooling(model_file: Path) -> Pooling | None:
    """The pooling a sentence-transformers export declares in `1_Pooling/config.json`, if any."""
    config = _model_root(model_file) / "1_Pooling" / "config.json"
    if not config.is_file():
        return None
    try:
        modes = json.loads(config.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidEncoder(f"{config}: not valid JSON ({error})") from None
    if modes.get("pooling_mode_cls_token"):
        return "cls"
    if modes.get("pooling_mode_mean_tokens"):
        return "mean"
    raise InvalidEncoder(f"{config}: only mean and CLS pooling are supported; pass pooling= to override")


def _load_tokenizer(tokenizers: Any, path: Path, max_length: int) -> tuple[Any, int]:
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(path))
    except Exception as error:  # tokenizers raises a bare Exception for a malformed file
        raise InvalidEncoder(f"{path}: not a Hugging Face tokenizer.json ({error})") from None
    padding = tokenizer.padding
    pad_id = (
        padding["pad_id"] if padding else tokenizer.token_to_id("[PAD]") or tokenizer.token_to_id("<pad>")
    )
    # Padding is per batch (to the longest text), never to a fixed length a tokenizer file may set.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer, int(pad_id or 0)


def _load_session(ort: Any, path: Path, threads: int | None) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or _threads_from_env() or usable_cpus()
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: the graph optimizer's notices are not the user's concern
    # Idle threads sleep instead of spinning: on shared cores (a service's other branches, other
    # processes) spinning burned a third more CPU for the same batches (docs/retrievers.md).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime raises its own exception types, all undocumented
        raise InvalidEncoder(f"{path}: not a loadable ONNX model ({error})") from None


def _threads_from_env() -> int | None:
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if not text:
        return None
    accepted = LIMITS["encoder_threads"].accepted()
    if not text.isdigit():
        raise OutOfRange(f"{THREADS_VARIABLE} must be {accepted} (got {text!r})")
    return check_int("encoder_threads", int(text), THREADS_VARIABLE)


def usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):  # Linux: the CPUs this process may run on
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _input_types(session: Any, path: Path) -> dict[str, Any]:
    types: dict[str, Any] = {}
    for tensor in session.get_inputs():
        if tensor.name not in _KNOWN_INPUTS or tensor.type not in _INPUT_TYPES:
            raise InvalidEncoder(
                f"{path}: input {tensor.name!r} ({tensor.type}) is not one a text encoder takes "
                f"(expected {', '.join(_KNOWN_INPUTS)} as int64 or int32 tensors)"
            )
        types[tensor.name] = _INPUT_TYPES[tensor.type]
    for required in _KNOWN_INPUTS[:2]:
        if required not in types:
            raise InvalidEncoder(f"{path}: the model has no {required!r} input; not a text encoder")
    return types


def _choose_output(session: Any, path: Path) -> tuple[str, bool]:
    """The output to read, and whether it is already one vector per text."""
    outputs = {tensor.name: len(tensor.shape) for tensor in session.get_outputs()}
    if outputs.get(_POOLED_OUTPUT) == 2:
        return _POOLED_OUTPUT, True
    for name in _TOKEN_OUTPUTS:
        if outputs.get(name) == 3:
            return name, False
    token_outputs = [name for name, rank in outputs.items() if rank == 3]
    if len(token_outputs) == 1:
        return token_outputs[0], False
    raise InvalidEncoder(
        f"{path}: no output to embed from (outputs: {outputs}); expected {_POOLED_OUTPUT!r} "
        f"(batch, dims) or one of {', '.join(_TOKEN_OUTPUTS)} (batch, tokens, dims)"
    )
