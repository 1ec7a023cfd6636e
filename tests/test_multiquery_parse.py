"""Reading variants out of chat-model answers of every common shape."""

from __future__ import annotations

import pytest
from fanfuse.multiquery.expand.llm_parse import UnusableAnswer, parse_variants


@pytest.mark.parametrize(
    "answer",
    [
        '{"queries": ["rank fusion", "combining rankings"]}',
        '```json\n{"queries": ["rank fusion", "combining rankings"]}\n```',
        'Sure! Here they are: {"queries": ["rank fusion", "combining rankings"]} Hope this helps.',
        '["rank fusion", "combining rankings"]',
        '{"variants": ["rank fusion", "combining rankings"]}',
        "1. rank fusion\n2. combining rankings",
        'Here are 2 queries:\n- "rank fusion"\n- "combining rankings"',
        "Query 1: rank fusion\nQuery 2: “combining rankings”",
        "(1) rank fusion,\n(2) combining rankings,",
        "rank fusion\n\ncombining rankings\n",
    ],
)
def test_answers_of_every_shape_give_the_same_queries(answer: str) -> None:
    assert parse_variants(answer) == ["rank fusion", "combining rankings"]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ('{"queries": ["rank fusion", "combin', "looks like JSON but does not parse"),
        ("", "empty"),
        ("   ", "empty"),
        ('{"answer": 42}', "no list of queries"),
        ("Here you go:", "no query lines"),
    ],
)
def test_junk_is_rejected_with_a_reason(answer: str, reason: str) -> None:
    with pytest.raises(UnusableAnswer, match=reason):
        parse_variants(answer)


def test_numbers_that_belong_to_the_query_stay() -> None:
    assert parse_variants("1. gpt 3.5 pricing\n2) 2024 election results\n3.5 turbo limits") == [
        "gpt 3.5 pricing",
        "2024 election results",
        "3.5 turbo limits",
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "<think>\nThe user wants rank fusion.\nTwo queries.\n</think>\n1. rank fusion\n2. combining rankings",
        '<think>{"queries": ["draft"]}</think>\n{"queries": ["rank fusion", "combining rankings"]}',
        "<THINKING>first this</THINKING><reasoning>then that</reasoning>\nrank fusion\ncombining rankings",
        "the reasoning arrives without its opening tag\n</think>\n\nrank fusion\ncombining rankings",
    ],
)
def test_reasoning_blocks_are_not_variants(answer: str) -> None:
    assert parse_variants(answer) == ["rank fusion", "combining rankings"]


@pytest.mark.parametrize(
    "answer",
    [
        "Okay.\nrank fusion\ncombining rankings",
        "Sure!\n\nrank fusion\ncombining rankings\n\nHope this helps!",
        "Certainly, here are two search queries.\n1. rank fusion\n2. combining rankings",
        "Here are the queries\nrank fusion\ncombining rankings",
        "OK, here you go -\n- rank fusion\n- combining rankings\nLet me know if you need more.",
    ],
)
def test_preamble_and_closing_lines_are_not_variants(answer: str) -> None:
    assert parse_variants(answer) == ["rank fusion", "combining rankings"]


def test_query_objects_in_the_json_list_are_read() -> None:
    answer = '{"queries": [{"query": "rank fusion"}, {"text": "combining rankings"}, {"score": 1}]}'
    assert parse_variants(answer) == ["rank fusion", "combining rankings"]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("<think>still weighing rank fusion against", "only reasoning"),
        ('{"queries": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_reasoning_only_and_deep_nesting_are_rejected(answer: str, reason: str) -> None:
    with pytest.raises(UnusableAnswer, match=reason):
        parse_variants(answer)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("null", "the model's answer is the JSON null, no list of queries"),
        ("false", "the model's answer is the JSON false, no list of queries"),
        ("I am sorry, but I cannot help with that request.", "no query lines"),
        ("I'm sorry, I can't do that.", "no query lines"),
        ("Sorry, I can only answer questions about cooking.", "no query lines"),
        ("As an AI language model I cannot browse.", "no query lines"),
    ],
)
def test_an_answer_without_queries_is_no_query(answer: str, reason: str) -> None:
    # A value with nothing to search, or an apology in place of an answer, falls back with its
    # reason rather than be searched as a query.
    with pytest.raises(UnusableAnswer, match=reason):
        parse_variants(answer)


def test_a_refusal_beside_queries_is_left_out_and_control_characters_are_no_part_of_a_query() -> None:
    assert parse_variants("I'm sorry, I can only give one.\n1. owl\x00 food\x1b") == ["owl food"]
    assert parse_variants("sorry state of affairs meaning") == ["sorry state of affairs meaning"]
    assert parse_variants('"owl diet"') == ["owl diet"]  # a JSON string is one query
    assert parse_variants("1984") == ["1984"]  # and so is a number


def test_first_person_rewrites_and_error_messages_are_queries() -> None:
    answer = (
        "1. I can't log in to Gmail after a password reset\n2. Gmail login fails\n3. I'm unable to sign in"
    )
    assert len(parse_variants(answer)) == 3
    assert parse_variants("Error: ENOENT no such file or directory node") == [
        "Error: ENOENT no such file or directory node"
    ]
