"""An adapter's `search_kwargs` (the options it gives each of its searches) are checked as a search
checks them, names and values and what the search would not read, when the adapter is built or they
are assigned, against the real packages: a chain is never built to fail at its first question. The
refusal is the one the search itself gives."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import pytest
from fanfuse.multiquery import MultiQueryRetriever
from multiquery_toys import KeywordRetriever

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no telemetry calls from the tests

# Each refused the same way by a search: a bad value, a bad name, and an option no search of the
# default expander reads.
BAD = [{"method": "rfr"}, {"max_variants": 9}, {"top_k": 0}, {"topk": 1}, {"strategy": "paraphrase"}]


def build(framework: str, multi: MultiQueryRetriever, search_kwargs: dict[str, Any]) -> Any:
    if framework == "langchain":
        from fanfuse.integrations.langchain import FanfuseRetriever as LangChain

        return LangChain(retriever=multi, search_kwargs=search_kwargs)
    if framework == "llamaindex":
        from fanfuse.integrations.llamaindex import FanfuseRetriever as LlamaIndex

        return LlamaIndex(multi, search_kwargs=search_kwargs)
    from fanfuse.integrations.haystack import FanfuseRetriever as Haystack

    return Haystack(multi, search_kwargs=search_kwargs)


FRAMEWORKS = [
    name
    for name, package in [
        ("langchain", "langchain_core"),
        ("llamaindex", "llama_index"),
        ("haystack", "haystack"),
    ]
    if importlib.util.find_spec(package) is not None
]


def refusal(call: Any) -> str:
    with pytest.raises((TypeError, ValueError)) as refused:
        call()
    return (
        str(refused.value)
        .split("(search options")[0]
        .removeprefix("search() ")
        .removeprefix("search_kwargs ")
    )


@pytest.mark.parametrize("bad", BAD, ids=[next(iter(b)) for b in BAD])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_search_kwargs_are_refused_when_given_as_a_search_refuses_them(
    framework: str, bad: dict[str, Any]
) -> None:
    multi = MultiQueryRetriever(KeywordRetriever())
    by_search = refusal(lambda: multi.search("owls", **bad))
    by_adapter = refusal(lambda: build(framework, multi, bad))
    multi.close()
    # pydantic wraps LangChain's refusal in its own lines: the search's words are among them.
    assert by_search in by_adapter, (by_adapter, by_search)


def test_langchain_checks_an_assignment_too() -> None:
    pytest.importorskip("langchain_core")
    multi = MultiQueryRetriever(KeywordRetriever())
    retriever = build("langchain", multi, {"top_k": 3})
    with pytest.raises(ValueError, match="top_k"):
        retriever.search_kwargs = {"top_k": 0}
    assert retriever.search_kwargs == {"top_k": 3}
    multi.close()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_good_search_kwargs_still_reach_every_search(framework: str) -> None:
    multi = MultiQueryRetriever(KeywordRetriever())
    adapter = build(framework, multi, {"top_k": 1, "expansion": False})
    assert adapter.search_kwargs == {"top_k": 1, "expansion": False}
    multi.close()
