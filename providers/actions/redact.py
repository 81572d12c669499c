"""Defence in depth for secrets in logs: a registry of known secret strings and a log filter.

The first line of defence is that no code formats a secret into a message or an exception
(secrets are :class:`pydantic.SecretStr` and are revealed only to build a header). This module
is the second: every token the client obtains (PAT, App private key, installation and
registration tokens, admin token, queue tokens) is registered, and :class:`RedactingFilter`
replaces any registered value that still reaches a log record with ``[REDACTED]``.

Install it once at start-up, after logging is configured: ``install_redaction()``. It is a
handler filter, because logger filters do not see records propagated from child loggers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from pydantic import SecretStr

REDACTED = "[REDACTED]"
#: Shorter values are not registered: replacing them would shred ordinary text.
MIN_SECRET_LENGTH = 8


class SecretRegistry:
    """Known secret strings (thread-safe; bounded: the oldest are forgotten first)."""

    def __init__(self, max_entries: int = 1024) -> None:
        self._values: dict[str, None] = {}
        self._lock = threading.Lock()
        self._max = max_entries

    def add(self, value: str | SecretStr | None) -> None:
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if not text:
            return
        pieces = [text.strip()]
        if "-----BEGIN" in text:  # a PEM key: also every body line, in case one leaks alone
            pieces += [line.strip() for line in text.splitlines() if "-----" not in line]
        with self._lock:
            for piece in pieces:
                if len(piece) >= MIN_SECRET_LENGTH:
                    self._values.pop(piece, None)
                    self._values[piece] = None
            while len(self._values) > self._max:
                self._values.pop(next(iter(self._values)))

    def values(self) -> list[str]:
        with self._lock:
            # longest first so a token that contains another is replaced whole
            return sorted(self._values, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for value in self.values():
            if value in text:
                text = text.replace(value, REDACTED)
        return text


#: The process-wide registry the Actions client and HUD client register into by default.
REGISTRY = SecretRegistry()


class RedactingFilter(logging.Filter):
    """Rewrites a record's message and exception text with registered secrets removed."""

    def __init__(self, registry: SecretRegistry = REGISTRY) -> None:
        super().__init__()
        self.registry = registry

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = self.registry.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.registry.redact(record.exc_text)
        return True


def install_redaction(
    handlers: Iterable[logging.Handler] | None = None, registry: SecretRegistry = REGISTRY
) -> RedactingFilter:
    """Attach one :class:`RedactingFilter` to ``handlers`` (default: the root logger's)."""
    flt = RedactingFilter(registry)
    for handler in logging.getLogger().handlers if handlers is None else handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(flt)
    return flt


__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "REGISTRY",
    "RedactingFilter",
    "SecretRegistry",
    "install_redaction",
]
