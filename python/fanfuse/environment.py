"""The environment variables fanfuse reads, in one table, and the ones set that look like a misspelling
of one of them: the command line names those on standard error before it runs, so that a variable
meant to change what it does is not left unread without a word.

Only a name close to one fanfuse reads counts (``FANFUSE_MAX_VARIANTS`` for
``FANFUSE_MAX_QUERY_VARIANTS``): other ``FANFUSE_`` names may belong to a wrapper or a test harness,
and are left alone. `tests/test_environment.py` holds the table to every name the package and the
core read.
"""

from __future__ import annotations

from collections.abc import Mapping

from fanfuse.limits import closest_names

PREFIX = "FANFUSE_"

# Each variable fanfuse reads, and what it sets (docs/cli.md lists them).
VARIABLES: dict[str, str] = {
    "FANFUSE_QUERY_EXPANSION": "query expansion on or off, where a search leaves it unset (default on)",
    "FANFUSE_MAX_QUERY_VARIANTS": "the most query variants per search, the question included (default 4)",
    "FANFUSE_QUERY_CACHE_SIZE": "query vectors the dense retriever keeps (an int >= 0; 0 keeps none)",
    "FANFUSE_NUM_THREADS": "threads of the core's fusion of many queries and of run files (default 1)",
    "FANFUSE_ENCODER_THREADS": "threads of the built-in encoder (default: every usable CPU)",
    "FANFUSE_LLM_BASE_URL": "the API root of the LLM expander (default OpenAI's)",
    "FANFUSE_LLM_MODEL": "the chat model of the LLM expander",
    "FANFUSE_LLM_API_KEY": "the API key of the LLM expander (else OPENAI_API_KEY)",
    "FANFUSE_CACHE_DIR": "where `fanfuse demo` keeps its index (default: the user cache dir)",
    "FANFUSE_DEBUG": "a traceback after the one line of an unforeseen failure of a command",
}


def misspelt(environ: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """Each variable of ``environ`` with the prefix that fanfuse does not read but whose name is close
    to one it reads, with those (the closest first)."""
    known = {name.removeprefix(PREFIX): name for name in VARIABLES}
    found = []
    for name in sorted(environ):
        if name.startswith(PREFIX) and name not in VARIABLES:
            close = closest_names(name.removeprefix(PREFIX), list(known))
            if close:
                found.append((name, [known[word] for word in close]))
    return found


def misspelt_lines(environ: Mapping[str, str]) -> list[str]:
    """The warnings the command line prints for :func:`misspelt` variables, one line each."""
    return [
        f"{name} is set but fanfuse reads no such variable; did you mean {' or '.join(close)}?"
        for name, close in misspelt(environ)
    ]
