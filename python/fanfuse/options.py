"""``FusionOptions``: the one value of the fusion options every fusion entry point takes.

The core reads and checks the options when the value is built (``_core._FusionOptions``, the base
the entry points read without a Python call); this class is the value's face: its properties,
``replace``, ``repr`` and pickling, all read from the values the core returns.
"""

from __future__ import annotations

import copyreg
from typing import TYPE_CHECKING, Any

from fanfuse import _core

if TYPE_CHECKING:
    from typing_extensions import Self, Unpack

    from fanfuse._core import _FusionKeywords
    from fanfuse.choices import AnyMethod, DuplicatePolicy, Norm, TieBreak


class FusionOptions(_core._FusionOptions):
    """The options of every fusion entry point as one value, read and checked by the core when built.

    Built from keywords, each optional: ``method`` (unset: ``"rrf"``, or the trained model's method
    in a run fusion), ``norm``, ``k`` (60), ``weights`` (None: all 1.0), ``top_k``, ``tie_break``
    (``"rank"``), ``duplicates`` (``"first"``), ``explain`` (False), ``phi`` (0.8), ``sigma`` (0.01),
    ``gamma`` (1.0); their meaning is that of ``fuse``. ``top_k`` left unset keeps every hit in
    ``fuse``/``fuse_batch``/``rrf``/``rrf_batch`` and 1000 a query in a run fusion (as trec_eval
    reads a run); ``top_k=None`` keeps every hit everywhere. A bad value or combination raises
    FusionError or TypeError naming the option, as the entry points do; weights are counted against
    the lists at the call. Frozen, compared by value, picklable.
    """

    # No instance dictionary: the value is frozen, its options held by the core only.
    __slots__ = ()
    # Pickles and the class's repr name the public path, whatever module defines it.
    __module__ = "fanfuse"

    # Gives the constructor a typed signature at run time (help, inspect): the base's is `(**options)`.
    def __new__(cls, **options: Unpack[_FusionKeywords]) -> Self:
        return super().__new__(cls, **options)

    def replace(self, **changes: Unpack[_FusionKeywords]) -> Self:
        """A new checked value: these options with ``changes`` applied."""
        merged: dict[str, Any] = {**self.given(), **changes}
        return type(self)(**merged)

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from the options given, checked again by the core.
        return copyreg.__newobj_ex__, (type(self), (), self.given())  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        given = ", ".join(f"{name}={value!r}" for name, value in self.given().items())
        return f"{type(self).__name__}({given})"

    @property
    def method(self) -> AnyMethod:
        """The method's name (``"rrf"`` when unset)."""
        return self._value("method")

    @property
    def reads_scores(self) -> bool:
        """Whether the method fuses scores, so the lists must carry them."""
        return self._value("reads_scores")

    @property
    def takes_weights(self) -> bool:
        """Whether the method has per-list weights."""
        return self._value("takes_weights")

    @property
    def norm(self) -> Norm | None:
        return self._value("norm")

    @property
    def k(self) -> float:
        return self._value("k")

    @property
    def weights(self) -> list[float] | None:
        return self._value("weights")

    @property
    def top_k(self) -> int | None:
        """The count given, or None (given as None, or unset: see the class)."""
        return self._value("top_k")

    @property
    def tie_break(self) -> TieBreak:
        return self._value("tie_break")

    @property
    def duplicates(self) -> DuplicatePolicy:
        return self._value("duplicates")

    @property
    def explain(self) -> bool:
        return self._value("explain")

    @property
    def phi(self) -> float:
        return self._value("phi")

    @property
    def sigma(self) -> float:
        return self._value("sigma")

    @property
    def gamma(self) -> float:
        return self._value("gamma")


def methods_reading(parameter: str) -> tuple[str, ...]:
    """The methods whose fusion reads ``parameter`` (``"k"``: rrf; ``"phi"``: rbc), from the core's
    table ``METHOD_PARAMETERS``: a value given for another method is checked but changes nothing."""
    return tuple(method for method, read in _core.METHOD_PARAMETERS.items() if parameter in read)
