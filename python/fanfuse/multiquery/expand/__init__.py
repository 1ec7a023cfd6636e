"""Expand: a question (and its conversation) into query variants, by rules, feedback or a chat model."""

from typing import TYPE_CHECKING

from fanfuse import _renamed

if not TYPE_CHECKING:  # at run time only: a type checker still refuses any name the module lacks
    __getattr__ = _renamed.module_getattr(__name__)  # an old name is refused naming its new spelling
