"""The words of a question that carry its meaning, and how to write one for a Lucene-style parser.

``content_words`` drops stopwords unless they are the subject, keeps code symbols and quoted spans
whole; ``query_term`` writes a word so that Tantivy's (or Elasticsearch's) query parser reads it as
one unit, and ``query_words`` a whole text so; ``plain_text`` reads such a query back as plain words,
for a retriever without query syntax (a dense encoder). The expanders read questions through these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["STOPWORDS", "ContentWords", "content_words", "plain_text", "query_term", "query_words"]

# Words that carry little meaning for retrieval. Short on purpose: removing too much hurts BM25.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be been before being below between
    both but by can could did do does doing down during each few for from further had has have having he
    her here hers him his how i if in into is it its itself just me more most my no nor not of off on once
    only or other our ours out over own same she should so some such than that the their theirs them then
    there these they this those through to too under until up very was we were what when where which while
    who whom why will with would you your yours"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# A stopword right after an article names a thing ("the with statement", "a for loop"), except these,
# which commonly follow an article as ordinary modifiers ("the most common", "the same name").
_ARTICLES = frozenset({"a", "an", "the"})
_MODIFIERS_AFTER_ARTICLE = frozenset({"few", "more", "most", "only", "other", "own", "same", "very"})
# Query-syntax operators of Lucene-style engines (Tantivy, Elasticsearch) when written in capitals.
_OPERATORS = frozenset({"AND", "OR", "NOT"})
# One token of a question, first match wins: a quoted or backticked span; a code symbol (a dotted,
# `::` or `->` path, optionally called: `os.path.split`, `std::vector`, `obj->field`, `run()`); a
# version number (`3.11`); a word (with inner apostrophes or hyphens, underscores included:
# `__init__`, `snake_case`).
_TOKEN = re.compile(
    r"""(?P<quoted>"[^"\w]*\w[^"]*"|`[^`\w]*\w[^`]*`)"""
    r"|(?P<symbol>[A-Za-z_]\w*(?:(?:\.|::|->)[A-Za-z_]\w*)+(?:\(\))?|\w+\(\)|\d+(?:\.\d+)+)"
    r"|(?P<word>\w+(?:['\u2019-]\w+)*)"
)
_PLAIN = re.compile(r"\w+")
# What the expanders write that is syntax, not words: a boost (`term^0.25`), the quotes of a phrase,
# and `OR` between words.
_SYNTAX = re.compile(r"\^\d+(?:\.\d*)?|[\"`]|(?<=\s)OR(?=\s)")
_APOSTROPHE = re.compile("['\u2019]")
# The first part of contractions that are as empty as stopwords ("don't", "isn't"; "what's" and
# "I'm" are caught by the stopword list).
_NEGATED_AUXILIARIES = frozenset(
    {"aren", "couldn", "didn", "doesn", "don", "hadn", "hasn", "haven", "isn", "mustn", "shouldn"}
    | {"wasn", "weren", "won", "wouldn"}
)


@dataclass(frozen=True, slots=True)
class ContentWords:
    """What ``content_words`` finds in a question."""

    #: The words that carry its meaning, in order.
    words: list[str]
    #: Two-word names that begin with a kept stopword ("with statement", "for loop").
    names: list[str]
    #: How many words the question has.
    total: int


def content_words(query: str, stopwords: frozenset[str] = STOPWORDS) -> ContentWords:
    """The words of ``query`` that carry its meaning.

    Stopwords are dropped unless they are the subject: right after an article and before a content
    word ("the with statement" keeps ``with``; the pair is a name), or written in capitals as an
    acronym ("US", "IT"). Quoted and backticked spans, code symbols (``os.path.split``,
    ``std::vector``, ``__init__``) and version numbers are one word each and always kept.
    """
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(query)]
    all_capitals = query.upper() == query
    words, names = [], []
    for i, (kind, text) in enumerate(tokens):
        if kind != "word" or not _is_stopword(text, stopwords) or _is_acronym(text, all_capitals):
            words.append(text)
        elif _is_named_by_article(tokens, i, stopwords):
            words.append(text)
            names.append(f"{text} {tokens[i + 1][1]}")
    return ContentWords(words, names, len(tokens))


def _is_stopword(word: str, stopwords: frozenset[str]) -> bool:
    folded = word.casefold()
    head = _APOSTROPHE.split(folded, maxsplit=1)[0]
    return folded in stopwords or (head != folded and (head in stopwords or head in _NEGATED_AUXILIARIES))


def _is_acronym(word: str, all_capitals: bool) -> bool:
    return not all_capitals and len(word) >= 2 and word.isupper() and word not in _OPERATORS


def _is_named_by_article(tokens: list[tuple[str | None, str]], i: int, stopwords: frozenset[str]) -> bool:
    word = tokens[i][1].casefold()
    if i == 0 or i + 1 == len(tokens) or word in _ARTICLES or word in _MODIFIERS_AFTER_ARTICLE:
        return False
    before, after = tokens[i - 1][1].casefold(), tokens[i + 1][1].casefold()
    return before in _ARTICLES and after not in stopwords


def query_term(word: str) -> str:
    """``word`` written so that a Lucene-style query parser (Tantivy's, Elasticsearch's) reads it as
    one unit: code symbols and spans as a quoted phrase (``std::vector`` would be a field name),
    operator words in lower case. Plain words stay as they are."""
    if word[0] in '"`':
        return '"' + word[1:-1].replace('"', " ").strip() + '"'
    if _PLAIN.fullmatch(word) is None:  # `'` starts a quoted term in Tantivy; `::` a field name
        return f'"{word}"'
    return word.lower() if word in _OPERATORS else word


def query_words(text: str) -> str:
    """Every word of ``text`` (stopwords too), each written by ``query_term``: text a user typed, safe
    to join with other query syntax (a stray quote or colon would make the whole query invalid)."""
    return " ".join(query_term(m.group()) for m in _TOKEN.finditer(text))


def plain_text(query: str) -> str:
    """``query`` without the query syntax the expanders write (boosts, phrase quotes, ``OR``
    between words): what a retriever that reads text, not syntax, should embed. ``"with
    statement"^0.2 with^0.4`` becomes ``with statement with``; plain text is returned unchanged."""
    return " ".join(_SYNTAX.sub(" ", query).split())
