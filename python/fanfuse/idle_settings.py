"""Settings that do something only beside another: one given where it would do nothing is refused,
naming it, what it goes with and how to mend the call. The one form of that rule and of its message
for every face: the command's flags (``fanfuse.cli.idle_flags``), the service's request fields
(``fanfuse.service.idle_fields``) and a search's options (``fanfuse.multiquery.planning``). Each face
keeps its own table, in its own words (``--method rbc``, ``"method": "rbc"``, ``method="rbc"``),
over what it reads a setting from (the parsed command line, the request and the server, the call
and the retriever).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from fanfuse.errors import InvalidSetting
from fanfuse.options import methods_reading

__all__ = ["GoesWith", "first_idle", "idle_message", "read_by_method", "refuse_idle"]

Subject = TypeVar("Subject")


@dataclass(frozen=True)
class GoesWith(Generic[Subject]):
    """``names`` do something only where ``holds(subject)``: with ``needs``, which the message names.
    ``add`` is the words that make it hold, when a few words do (the message offers them)."""

    names: tuple[str, ...]
    needs: str
    holds: Callable[[Subject], bool]
    add: tuple[str, ...] = ()


def read_by_method(
    name: str,
    parameter: str,
    method_of: Callable[[Subject], str],
    setting: str,
    choose: Callable[[str], tuple[str, ...]],
    offered: Collection[str] | None = None,
) -> GoesWith[Subject]:
    """``name`` goes with the methods that read the fusion ``parameter``: a method that does not read it
    fuses as without it. ``method_of`` gives the method in effect, ``setting`` names the face's setting
    of it, ``choose`` gives the words that choose a method and ``offered`` the methods the face takes
    (None: every one, trained ones included)."""
    methods = tuple(m for m in methods_reading(parameter) if offered is None or m in offered)
    return GoesWith(
        (name,),
        f"{setting} {' or '.join(methods)}",
        lambda subject: method_of(subject) in methods,
        choose(methods[0]),
    )


def idle_message(name: str, rule: GoesWith[Subject], removal: str) -> str:
    """The refusal of ``name`` by ``rule``; ``removal`` says how the face leaves it out."""
    mend = f" or give {' '.join(rule.add)}" if rule.add else ""
    return f"{name} goes with {rule.needs} and would do nothing here; {removal}{mend}"


def first_idle(
    rules: Iterable[GoesWith[Subject]], given: Collection[str], subject: Subject
) -> tuple[str, GoesWith[Subject]] | None:
    """The first of the ``given`` names that ``subject`` would not read, and the rule it breaks."""
    for rule in rules:
        for name in rule.names:
            if name in given:
                if not rule.holds(subject):
                    return name, rule
                break
    return None


def refuse_idle(rules: Iterable[GoesWith[Subject]], given: Collection[str], subject: Subject) -> None:
    """InvalidSetting for the first of ``given`` that ``subject`` would not read (a call's keyword)."""
    idle = first_idle(rules, given, subject)
    if idle is not None:
        name, rule = idle
        raise InvalidSetting(idle_message(name, rule, f"leave {name} out"))
