"""Rust panics that reach Python: pyo3 raises them as `pyo3_runtime.PanicException`, a `BaseException`.

A panic in a compiled library (Tantivy reading a damaged segment, a backend's own binding) is a failure
of that call, like an `Exception`, not a request to stop the process like `KeyboardInterrupt`; but
`except Exception` lets it through. Each pyo3 extension has its own `PanicException` class, so it is
recognised by name rather than imported.
"""

from __future__ import annotations

__all__ = ["is_failure", "is_rust_panic"]


def is_rust_panic(error: BaseException) -> bool:
    kind = type(error)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"


def is_failure(error: BaseException) -> bool:
    """Whether `error` is the called code failing (an `Exception` or a Rust panic), as opposed to a
    signal, an exit or a cancellation, which must go on up."""
    return isinstance(error, Exception) or is_rust_panic(error)
