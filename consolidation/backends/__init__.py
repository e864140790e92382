"""Backends by name. The llm backend is imported only when asked for, so the
heuristic path (and every test that uses it) never loads the openai client."""

from __future__ import annotations

from consolidation.backends.base import Backend, BackendError

__all__ = ("BACKEND_NAMES", "get_backend")

BACKEND_NAMES = ("heuristic", "llm")


def get_backend(name: str) -> Backend:
    if name == "heuristic":
        from consolidation.backends.heuristic import HeuristicBackend

        return HeuristicBackend()
    if name == "llm":
        from consolidation.backends.llm import LLMBackend

        # Inside a run the task retries with backoff; client retries on top
        # would multiply the attempts (and the spend).
        return LLMBackend.from_settings(max_retries=0)
    raise BackendError(f"There is no consolidation backend named {name!r}; use one of {', '.join(BACKEND_NAMES)}.")
