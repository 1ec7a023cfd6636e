"""HeuristicExpander's variants on a real Tantivy index: each finds a list of its own.

The corpora are small stand-ins for the standard-library documentation of `fanfuse demo`, written
so that the questions the demo asks go wrong the way they did with the former variants.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fanfuse.multiquery import CombinedExpander, FeedbackExpander, HeuristicExpander, MultiQueryRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever

WITH_STATEMENT = (
    "The with statement is used to wrap the execution of a block with methods defined by a context "
    "manager. This allows common try, except and finally usage patterns to be encapsulated for convenient "
    "reuse. The execution of the with statement with one item proceeds as follows: the context expression "
    "is evaluated to obtain a context manager, its enter method is loaded, its exit method is loaded, and "
    "the suite is executed."
)
STATEMENTS = {
    "topic:with": WITH_STATEMENT,
    "sqlite3.complete_statement": "Return True if the string statement appears to contain one or more "
    "complete SQL statements.",
    "sndhdr.what": "Guess what type of sound data a file holds.",
    "pdb.Pdb.do_debug": "Enter a recursive debugger that steps through the code.",
    "cmd.Cmd.do_help": "List the available commands with help text.",
    "pathlib.PurePath.with_name": "Return a new path with the name changed.",
    "pathlib.PurePath.with_suffix": "Return a new path with the suffix changed.",
    "contextlib": "Utilities for common tasks involving the with statement and context managers.",
    "topic:global": "The global statement is a declaration which holds for the entire current code block.",
    "topic:pass": "pass is a null operation: when it is executed, nothing happens.",
}
PATHS = {
    "os.path.split": "Split the pathname path into a pair, head and tail, where the tail is the last "
    "component and the head is the directory.",
    "http.server.SimpleHTTPRequestHandler.translate_path": "Translate a URL path to a local file path: path "
    "split by slashes, each file name joined to a directory.",
    "os.path.dirname": "Return the directory name of pathname path.",
    "os.path.basename": "Return the base name of pathname path.",
    "shutil.copyfile": "Copy the contents of the file src to a file named dst.",
    "zipfile.ZipInfo.from_file": "Construct a ZipInfo instance for a file on the filesystem, for adding to "
    "a zip file.",
    "str.split": "Return a list of the words in the string, using sep as the delimiter string.",
    "os.listdir": "Return a list containing the names of the entries in the directory given by path.",
}


def build(tmp_path: Path, documents: dict[str, str]) -> TantivyRetriever:
    return TantivyRetriever.build(
        [{"id": doc_id, "title": doc_id, "text": text} for doc_id, text in documents.items()], tmp_path / "i"
    )


def multi_query(index: TantivyRetriever, question: str) -> list[str]:
    with MultiQueryRetriever({"bm25": index}, expander=HeuristicExpander(max_variants=5), top_k=3) as search:
        return search.search(question, max_variants=4).ids


def test_the_subject_stopword_keeps_the_with_statement_first(tmp_path: Path) -> None:
    # Dropping "with" left the variant "statement", whose best hit is sqlite3.complete_statement.
    index = build(tmp_path, STATEMENTS)
    assert multi_query(index, "what does the with statement do")[0] == "topic:with"


def test_the_content_word_list_counts_once_so_the_questions_best_hit_stays_first(tmp_path: Path) -> None:
    # The OR-joined variant returned the content words' list again: that list counted twice and
    # moved translate_path above the question's own best hit.
    index = build(tmp_path, PATHS)
    question = "split a file path into the directory and the file name"
    assert index.search(question, 1)[0].id == "os.path.split"
    assert multi_query(index, question)[0] == "os.path.split"


def test_with_feedback_and_the_question_weighing_three_the_with_statement_stays_first(
    tmp_path: Path,
) -> None:
    # The feedback variant searches the name as a phrase too: its words alone pull in the others.
    index = build(tmp_path, STATEMENTS)
    variants = CombinedExpander([HeuristicExpander(), FeedbackExpander(index, feedback_docs=3)])
    with MultiQueryRetriever({"bm25": index}, expander=variants, variant_weights=[3.0, 1.0]) as search:
        result = search.search("what does the with statement do")
    assert '"with statement"^' in result.diagnostics.variants[2].text
    assert result.ids[0] == "topic:with"


@pytest.mark.parametrize(
    "question",
    ["split a file path into the directory and the file name", "how do I copy the contents of a file"],
)
def test_on_tantivy_the_or_joined_words_find_the_content_words_list(tmp_path: Path, question: str) -> None:
    # Why only an AND backend gets the OR variant: on Tantivy a plain query is already an OR.
    index = build(tmp_path, {**STATEMENTS, **PATHS})
    content, joined = HeuristicExpander(default_operator="and").candidates(question)
    assert " OR " in joined
    assert [h.id for h in index.search(joined, 10)] == [h.id for h in index.search(content, 10)]
