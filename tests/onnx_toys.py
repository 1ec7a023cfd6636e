"""Small real ONNX text encoders, built with `onnx.helper`, whose vectors NumPy can compute exactly.

Each maps a token to a row of a random table (plus a token-type row when the graph takes
`token_type_ids`): mean pooling of their output is a plain average of rows, so every option of
`OnnxEncoder` (pooling, prefixes, truncation, input names and types, pre-pooled outputs) has an
exact expected vector. They run on onnxruntime like any exported model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCABULARY = 30522  # the shipped BERT tokenizer's
WIDTH = 8
OPSET = 18


def table(seed: int) -> npt.NDArray[np.float32]:
    return np.random.default_rng(seed).normal(size=(VOCABULARY, WIDTH)).astype(np.float32)


def type_table(seed: int) -> npt.NDArray[np.float32]:
    return np.random.default_rng(seed + 1).normal(size=(2, WIDTH)).astype(np.float32)


def write_toy_model(
    path: Path,
    *,
    seed: int = 0,
    token_types: bool = True,
    output: str = "last_hidden_state",
    index_type: int = TensorProto.INT64,
    extra_input: str | None = None,
) -> Path:
    """Write a toy encoder to `path`. `output="sentence_embedding"` makes it pool by itself, with
    the maximum over tokens (not what the encoder would compute, so using it as-is is visible)."""
    index_names = ["input_ids", "attention_mask"] + (["token_type_ids"] if token_types else [])
    index_names += [extra_input] if extra_input else []
    inputs = [helper.make_tensor_value_info(name, index_type, ["batch", "tokens"]) for name in index_names]
    initializers = [numpy_helper.from_array(table(seed), "words")]
    nodes = [helper.make_node("Gather", ["words", "input_ids"], ["word_rows"])]
    hidden = "word_rows"
    if token_types:
        initializers.append(numpy_helper.from_array(type_table(seed), "types"))
        nodes.append(helper.make_node("Gather", ["types", "token_type_ids"], ["type_rows"]))
        nodes.append(helper.make_node("Add", ["word_rows", "type_rows"], ["summed_rows"]))
        hidden = "summed_rows"
    # The mask zeroes padded positions, as a real encoder's output there is meaningless anyway.
    initializers.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis"))
    nodes += [
        helper.make_node("Cast", ["attention_mask"], ["mask_float"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_float", "last_axis"], ["mask_column"]),
        helper.make_node("Mul", [hidden, "mask_column"], ["token_states"]),
    ]
    if extra_input:
        nodes.append(helper.make_node("Identity", [extra_input], ["unused"]))
    if output == "sentence_embedding":
        initializers.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "token_axis"))
        nodes.append(helper.make_node("ReduceMax", ["token_states", "token_axis"], [output], keepdims=0))
        outputs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", WIDTH])]
    elif output == "scalar":
        nodes.append(helper.make_node("ReduceSum", ["token_states"], [output], keepdims=0))
        outputs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, [])]
    else:
        nodes.append(helper.make_node("Identity", ["token_states"], [output]))
        outputs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", "tokens", WIDTH])]
    graph = helper.make_graph(nodes, "toy_encoder", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def expected_vectors(
    token_ids: list[list[int]], *, seed: int = 0, token_types: bool = True, pooling: str = "mean"
) -> npt.NDArray[np.float64]:
    """What a toy model plus the encoder's pooling and normalisation must give, in float64."""
    words, types = table(seed).astype(np.float64), type_table(seed).astype(np.float64)
    rows = []
    for ids in token_ids:
        states = words[ids] + (types[0] if token_types else 0.0)
        pooled = {"mean": states.mean(axis=0), "cls": states[0], "max": states.max(axis=0)}[pooling]
        rows.append(pooled / np.linalg.norm(pooled))
    return np.array(rows)
