"""`fanfuse serve`: multi-query search over an index as an HTTP service (needs `fanfuse[serve]`)."""

from fanfuse.service.app import app_for_index, create_app

__all__ = ["app_for_index", "create_app"]
