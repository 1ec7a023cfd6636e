"""Reading variants out of chat-model answers of every common shape."""

from __future__ import annotations

import pytest
from fanfuse.multiquery.llm_parse import UnusableAnswer, parse_variants


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
