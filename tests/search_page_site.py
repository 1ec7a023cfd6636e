"""What the search page tests search: the indexed documents (animals, and documents holding markup
that would run if the page parsed it as HTML), a `fanfuse serve` process over them, and the
server's own JSON answer to a request, which the page is checked against."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from service_server import serve_command

TIMEOUT = 60.0
QUERY = "which animal hunts at night"
DOCUMENTS = [
    {
        "id": "owl",
        "title": "Owls",
        "text": "Owls hunt mice at night in the forest.",
        "kind": "bird",
    },
    {
        "id": "hawk",
        "title": "Hawks",
        "text": "Hawks hunt mice by day over open fields.",
        "kind": "bird",
    },
    {
        "id": "bat",
        "title": "Bats",
        "text": "Bats fly at night and hunt insects.",
        "kind": "mammal",
    },
    {
        "id": "fox",
        "title": "Foxes",
        "text": "Foxes hunt at dusk and at night; an animal of the edges.",
        "kind": "mammal",
    },
    {
        "id": "mole",
        "title": "Moles",
        "text": "Moles dig tunnels and eat worms.",
        "kind": "mammal",
    },
    {
        "id": "cat",
        "title": "Cats",
        "text": "A cat is an animal that hunts mice in barns at night.",
        "kind": "mammal",
    },
]
# Documents whose text, title, id and payload are markup that would run if the page parsed it as
# HTML: each sets window.pwned or the document's title.
XSS_QUERY = "poisoned night"
XSS_DOCUMENTS = [
    {
        "id": "script-doc",
        "title": "<script>document.title='pwned'</script>",
        "text": "poisoned night <script>window.pwned = 'text script'</script>",
        "note": "<img src=x onerror=\"window.pwned='payload img'\">",
    },
    {
        "id": "<img src=x onerror=\"window.pwned='id img'\">",
        "title": "<b onmouseover=\"window.pwned='title'\">poisoned</b>",
        "text": "poisoned night <img src=x onerror=\"window.pwned='text img'\">"
        "<svg onload=\"window.pwned='svg'\">",
    },
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("search-page") / "idx"
    TantivyRetriever.build(DOCUMENTS + XSS_DOCUMENTS, directory)
    return directory


@pytest.fixture(scope="module")
def server(index_dir: Path) -> Iterator[str]:
    with serve_command("--index", str(index_dir)) as (url, _):
        yield url


def answer(url: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{url}/search", json=body, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data
