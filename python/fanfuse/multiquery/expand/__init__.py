"""Expand: a question (and its conversation) into query variants, by rules, feedback or a chat model."""
