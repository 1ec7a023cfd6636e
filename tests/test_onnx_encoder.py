"""OnnxEncoder on small real ONNX graphs: pooling, inputs, outputs, prefixes, truncation, bad paths."""

from __future__ import annotations

import json
import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from fanfuse import OutOfRange
from fanfuse.errors import InvalidEncoder, InvalidSetting

pytest.importorskip("onnxruntime", reason="OnnxEncoder needs onnxruntime (extra 'embed')")
pytest.importorskip("tokenizers", reason="OnnxEncoder needs tokenizers (extra 'embed')")
pytest.importorskip("onnx", reason="the toy models are built with the onnx package (extra 'dev')")

from fanfuse.retrievers.default_encoder import TOKENIZER_PATH
from fanfuse.retrievers.onnx_encoder import OnnxEncoder
from onnx import TensorProto
from onnx_toys import expected_vectors, write_toy_model
from tokenizers import Tokenizer

TEXTS = ["a cat", "the quick brown fox jumps over the lazy dog", "", "std::vector<int>", "café au lait"]


def token_ids(texts: list[str], max_length: int = 256) -> list[list[int]]:
    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return [encoding.ids for encoding in tokenizer.encode_batch(texts)]


def model_dir(tmp_path: Path, **toy: object) -> Path:
    """A model directory as Hugging Face lays it out: model.onnx and tokenizer.json side by side."""
    directory = tmp_path / "toy-model"
    write_toy_model(directory / "model.onnx", **toy)  # type: ignore[arg-type]
    shutil.copyfile(TOKENIZER_PATH, directory / "tokenizer.json")
    return directory


def test_mean_pooling_over_the_attention_mask_in_mixed_length_batches(tmp_path: Path) -> None:
    encoder = OnnxEncoder(model_dir(tmp_path), batch_size=2)
    vectors = encoder.embed_passages(TEXTS)
    np.testing.assert_allclose(vectors, expected_vectors(token_ids(TEXTS)), atol=1e-5)
    assert encoder.dimensions == 8 and encoder.pooling == "mean" and encoder.name == "toy-model"


@pytest.mark.parametrize("index_type", [TensorProto.INT64, TensorProto.INT32])
def test_graphs_without_token_types_and_with_int32_inputs(tmp_path: Path, index_type: int) -> None:
    encoder = OnnxEncoder(model_dir(tmp_path, token_types=False, index_type=index_type))
    expected = expected_vectors(token_ids(TEXTS), token_types=False)
    np.testing.assert_allclose(encoder.embed_passages(TEXTS), expected, atol=1e-5)


def test_cls_pooling_from_the_sentence_transformers_config_or_the_option(tmp_path: Path) -> None:
    directory = model_dir(tmp_path)
    (directory / "1_Pooling").mkdir()
    (directory / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    cls = OnnxEncoder(directory)
    assert cls.pooling == "cls"
    np.testing.assert_allclose(
        cls.embed_passages(TEXTS), expected_vectors(token_ids(TEXTS), pooling="cls"), atol=1e-5
    )
    assert OnnxEncoder(directory, pooling="mean").pooling == "mean"


def test_a_pre_pooled_sentence_embedding_output_is_used_as_it_is(tmp_path: Path) -> None:
    encoder = OnnxEncoder(model_dir(tmp_path, output="sentence_embedding"))
    assert encoder.pooling == "model"
    for text, ids in zip(TEXTS, token_ids(TEXTS), strict=True):
        expected = expected_vectors([ids], pooling="max")
        np.testing.assert_allclose(encoder.embed_passages([text]), expected, atol=1e-5)


def test_query_and_passage_prefixes(tmp_path: Path) -> None:
    encoder = OnnxEncoder(model_dir(tmp_path), query_prefix="query: ", passage_prefix="passage: ")
    np.testing.assert_allclose(
        encoder.embed_queries(["a cat"]), expected_vectors(token_ids(["query: a cat"])), atol=1e-5
    )
    np.testing.assert_allclose(
        encoder.embed_passages(["a cat"]), expected_vectors(token_ids(["passage: a cat"])), atol=1e-5
    )
    assert encoder.identity["query_prefix"] == "query: "


def test_texts_are_cut_to_max_length_tokens(tmp_path: Path) -> None:
    long_text = " ".join(f"word{i}" for i in range(200))
    encoder = OnnxEncoder(model_dir(tmp_path), max_length=16)
    ids = token_ids([long_text], max_length=16)
    assert len(ids[0]) == 16
    np.testing.assert_allclose(encoder.embed_passages([long_text]), expected_vectors(ids), atol=1e-5)


def test_unnormalised_vectors_and_progress_and_no_texts(tmp_path: Path) -> None:
    encoder = OnnxEncoder(model_dir(tmp_path), normalize=False, batch_size=2)
    done: list[int] = []
    vectors = encoder.embed_passages(TEXTS, progress=done.append)
    assert done == [2, 4, 5]
    assert not np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    np.testing.assert_allclose(unit, expected_vectors(token_ids(TEXTS)), atol=1e-5)
    assert encoder.embed_queries([]).shape == (0, 8)


def test_concurrent_calls_give_the_same_vectors(tmp_path: Path) -> None:
    encoder = OnnxEncoder(model_dir(tmp_path), batch_size=2)
    expected = encoder.embed_passages(TEXTS)
    results: list[np.ndarray] = []
    start = threading.Barrier(4)

    def embed() -> None:
        start.wait()
        results.extend(encoder.embed_passages(TEXTS) for _ in range(5))

    threads = [threading.Thread(target=embed) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 20
    for vectors in results:
        np.testing.assert_array_equal(vectors, expected)


def test_the_hugging_face_layout_with_the_graph_in_an_onnx_folder(tmp_path: Path) -> None:
    root = tmp_path / "e5-small"
    write_toy_model(root / "onnx" / "model.onnx")
    shutil.copyfile(TOKENIZER_PATH, root / "tokenizer.json")
    for model in (root, root / "onnx", root / "onnx" / "model.onnx"):
        encoder = OnnxEncoder(model)
        assert encoder.model_path == root / "onnx" / "model.onnx"
        assert encoder.tokenizer_path == root / "tokenizer.json"
        assert encoder.name == "e5-small"


def test_bad_model_paths_are_named(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(InvalidEncoder, match=f"model path '{re.escape(str(missing))}' does not exist"):
        OnnxEncoder(missing)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidEncoder, match=f"model directory '{re.escape(str(empty))}' has no ONNX file"):
        OnnxEncoder(empty)
    several = tmp_path / "several"
    write_toy_model(several / "a.onnx")
    write_toy_model(several / "b.onnx")
    with pytest.raises(InvalidEncoder, match=r"holds several ONNX files \(a.onnx, b.onnx\); pass the file"):
        OnnxEncoder(several)
    untokenized = tmp_path / "untokenized"
    write_toy_model(untokenized / "model.onnx")
    beside = re.escape(str(untokenized / "model.onnx"))
    with pytest.raises(InvalidEncoder, match=f"no tokenizer.json beside the model '{beside}'"):
        OnnxEncoder(untokenized)
    with pytest.raises(InvalidEncoder, match=r"tokenizer file '.*nope\.json' does not exist"):
        OnnxEncoder(untokenized, tokenizer=tmp_path / "nope.json")


def test_files_that_are_not_what_they_claim(tmp_path: Path) -> None:
    directory = model_dir(tmp_path)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a protobuf at all")
    with pytest.raises(InvalidEncoder, match=f"{re.escape(str(garbage))}: not a loadable ONNX model"):
        OnnxEncoder(garbage, tokenizer=directory)
    bad_tokenizer = tmp_path / "tokenizer.json"
    bad_tokenizer.write_text("{}")
    with pytest.raises(
        InvalidEncoder, match=f"{re.escape(str(bad_tokenizer))}: not a Hugging Face tokenizer"
    ):
        OnnxEncoder(directory, tokenizer=bad_tokenizer)
    (directory / "1_Pooling").mkdir()
    (directory / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    with pytest.raises(InvalidEncoder, match="only mean and CLS pooling are supported"):
        OnnxEncoder(directory)


def test_graphs_that_are_not_text_encoders(tmp_path: Path) -> None:
    image = write_toy_model(tmp_path / "image.onnx", extra_input="pixel_values")
    named = f"{re.escape(str(image))}: input 'pixel_values' .* is not one a text encoder takes"
    with pytest.raises(InvalidEncoder, match=named):
        OnnxEncoder(image, tokenizer=TOKENIZER_PATH)
    scalar = write_toy_model(tmp_path / "scalar.onnx", output="scalar")
    with pytest.raises(InvalidEncoder, match=f"{re.escape(str(scalar))}: no output to embed from"):
        OnnxEncoder(scalar, tokenizer=TOKENIZER_PATH)


@pytest.mark.parametrize(
    ("option", "value", "error", "message"),
    [
        ("pooling", "max", InvalidSetting, "pooling must be one of mean, cls"),
        ("max_length", 1, OutOfRange, r"max_length must be an int from 2 to 1048576 \(got 1\)"),
        ("batch_size", 0, OutOfRange, r"batch_size must be an int >= 1 \(got 0\)"),
        ("threads", 0, OutOfRange, "threads must be an int from 1 to 1024 \\(got 0\\)"),
    ],
)
def test_bad_options_are_named(
    tmp_path: Path, option: str, value: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        OnnxEncoder(model_dir(tmp_path), **{option: value})  # type: ignore[arg-type]


def test_texts_must_be_a_list_of_strings(tmp_path: Path) -> None:
    encoder = OnnxEncoder(model_dir(tmp_path))
    with pytest.raises(TypeError, match=r"texts must be a sequence of str \(got str\)"):
        encoder.embed_queries("a cat")
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str \(got int\)"):
        encoder.embed_passages(["a cat", 3])  # type: ignore[list-item]
