"""Structured logging for the listener: text or JSON lines, and a redaction filter.

:func:`configure_logging` applies ``log_level`` / ``log_format`` of the listener config
(PROTOCOL §5.1: ``debug``/``info``/``warn``/``error``, ``text``/``json``) to the root logger
with one stream handler. Every record passes a :class:`RedactionFilter` first, which masks

- every secret value registered with :func:`register_secret` or by the Actions / HUD
  clients (the PAT, the App private key and its lines, installation, registration, admin
  and queue tokens, the HUD token...) in the shared registry of
  :mod:`providers.actions.redact`, wherever it appears in the message, its arguments, extra
  fields or an exception's traceback; and
- anything that *looks* like a credential even if nobody registered it: ``Bearer <token>``,
  ``RemoteAuth <token>``, JWTs (``eyJ...``), GitHub tokens (``ghp_``, ``ghs_``,
  ``github_pat_``...), PEM private key blocks, and ``token=`` / ``password=`` style pairs.

Extra structured fields go in ``extra={"fields": {...}}``; the JSON format emits them as
top-level keys, the text format as ``key=value`` pairs. One transition = one line (the
reconciler's LoggingSubscriber uses ``TransitionEvent.log_line``).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import IO, Any

from pydantic import SecretStr

from providers.actions.redact import REDACTED, REGISTRY, SecretRegistry

LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
FORMATS = ("text", "json")
#: Chatty libraries that log request URLs per call; quiet unless we debug.
_NOISY = ("httpx", "httpcore", "urllib3", "kubernetes", "transitions")


class LoggingConfigError(ValueError):
    """``log_level`` / ``log_format`` has a value the listener does not know."""


# --- redaction -------------------------------------------------------------------------------


#: Credential shapes masked even when never registered. Each keeps its prefix so a log
#: still says *what* was there.
_SECRET_KEYS = r"[a-z_]*token|password|secret|private_key|jitconfig|authorization"
TOKEN_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # A PEM private key (whole block, or from BEGIN to the end of a cut-off text).
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)",
            re.DOTALL,
        ),
        REDACTED,
    ),
    # Authorization header values (the Actions service uses Bearer; 16+ chars spares prose).
    (re.compile(r"\b(Bearer|RemoteAuth)\s+[A-Za-z0-9._~+/=-]{16,}", re.I), r"\1 " + REDACTED),
    # JWTs: GitHub App JWTs, Actions admin tokens, service-account tokens.
    (re.compile(r"\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*"), REDACTED),
    # GitHub tokens: PAT classic, OAuth, user-to-server, server-to-server, refresh, fine-grained.
    (re.compile(r"\b(gh[pousr]_)[A-Za-z0-9]{20,}"), r"\1" + REDACTED),
    (re.compile(r"\b(github_pat_)[A-Za-z0-9_]{20,}"), r"\1" + REDACTED),
    # key=value (query strings, logfmt) and "key": "value" (JSON, Python reprs).
    (re.compile(rf"\b((?:{_SECRET_KEYS})=)([^\s&\"',}}]{{6,}})", re.I), r"\1" + REDACTED),
    (
        re.compile(rf"""((["'])(?:{_SECRET_KEYS})\2\s*:\s*(["']))(?:(?!\3).){{6,}}""", re.I),
        r"\1" + REDACTED,
    ),
)


def redact(text: str, registry: SecretRegistry | None = None) -> str:
    """Mask registered secrets, then credential-looking tokens."""
    text = (registry or SECRETS).redact(text)
    for pattern, replacement in TOKEN_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _redact_value(value: Any, registry: SecretRegistry) -> Any:
    if isinstance(value, str):
        return redact(value, registry)
    if isinstance(value, Mapping):
        return {k: _redact_value(v, registry) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(v, registry) for v in value]
    if isinstance(value, int | float | bool) or value is None:
        return value
    return redact(str(value), registry)


class RedactionFilter(logging.Filter):
    """Masks secrets in a record before any handler formats it (never drops a record).

    The message is rendered once (``msg % args``), redacted and frozen into ``record.msg``;
    an exception is rendered into ``record.exc_text`` and redacted too, so formatters only
    ever see masked text.
    """

    def __init__(self, registry: SecretRegistry | None = None) -> None:
        super().__init__()
        self.registry = registry or SECRETS

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the record
            message = f"{record.msg!r} % {record.args!r}"
        record.msg = redact(message, self.registry)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.registry)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self.registry)
        fields = getattr(record, "fields", None)
        if isinstance(fields, Mapping):
            record.fields = _redact_value(fields, self.registry)
        return True


#: The process-wide registry: the Actions and HUD clients register every token they obtain
#: there (``providers.actions.redact``); one registry means one place to look.
SECRETS = REGISTRY


def register_secret(value: str | SecretStr | None) -> None:
    """Never log ``value`` (call it when a credential is read or minted)."""
    SECRETS.add(value)


# --- formatters ------------------------------------------------------------------------------


def _timestamp(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def _fields(record: logging.LogRecord) -> Mapping[str, Any]:
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, Mapping) else {}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, extra fields, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in _fields(record).items():
            entry.setdefault(str(key), value)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``2026-01-02T03:04:05.678+00:00 INFO  reconciler.transitions msg key=value``."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname:<5} {record.name} {record.getMessage()}"
        extras = " ".join(f"{k}={_text_value(v)}" for k, v in _fields(record).items())
        if extras:
            line = f"{line} {extras}"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line = f"{line}\n{record.exc_text}"
        if record.stack_info:
            line = f"{line}\n{record.stack_info}"
        return line


def _text_value(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if (not text or any(c.isspace() for c in text) or '"' in text) else text


# --- setup -----------------------------------------------------------------------------------


#: What an empty ``log_level`` / ``log_format`` means (the keys are optional in the file).
DEFAULT_LEVEL = "info"
DEFAULT_FORMAT = "text"


def parse_level(level: str) -> int:
    value = LEVELS.get(level.strip().lower() or DEFAULT_LEVEL)
    if value is None:
        raise LoggingConfigError(
            f"listener config: log_level: got {level!r}; allowed: debug, info, warn, error"
        )
    return value


def configure_logging(
    level: str = "info",
    fmt: str = "text",
    *,
    stream: IO[str] | None = None,
    secrets: Iterable[str | SecretStr | None] = (),
    registry: SecretRegistry | None = None,
) -> logging.Handler:
    """Install one redacting handler on the root logger; returns it (tests remove it).

    Replaces handlers a previous call installed, so calling it again (e.g. after the
    config file was read) does not duplicate lines.
    """
    numeric = parse_level(level)
    name = fmt.strip().lower() or DEFAULT_FORMAT
    if name not in FORMATS:
        raise LoggingConfigError(
            f"listener config: log_format: got {fmt!r}; allowed: {', '.join(FORMATS)}"
        )
    reg = registry or SECRETS
    for value in secrets:
        reg.add(value)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.addFilter(RedactionFilter(reg))
    handler.setFormatter(JsonFormatter() if name == "json" else TextFormatter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    for noisy in _NOISY:
        logging.getLogger(noisy).setLevel(numeric if numeric <= logging.DEBUG else logging.WARNING)
    logging.captureWarnings(True)
    return handler


_HANDLER_NAME = "arc-capacity-listener"

__all__ = [
    "REDACTED",
    "JsonFormatter",
    "LoggingConfigError",
    "RedactionFilter",
    "TextFormatter",
    "configure_logging",
    "redact",
    "register_secret",
]
