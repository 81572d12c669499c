"""Structured logging for the listener: text or JSON lines, and a redaction filter.

:func:`configure_logging` applies ``log_level`` / ``log_format`` of the listener config
(docs/protocol.md#config-file: ``debug``/``info``/``warn``/``error``, ``text``/``json``) to the root
logger with one stream handler. Every record passes a :class:`RedactionFilter` first, which masks

- every secret value registered with :func:`register_secret` or by the Actions / HUD
  clients (the PAT, the App private key and its lines, installation, registration, admin
  and queue tokens, the HUD token...) in the shared registry of
  :mod:`providers.actions.redact`, wherever it appears in the message, its arguments, extra
  fields or an exception's traceback; and
- anything that *looks* like a credential even if nobody registered it: ``Bearer <token>``,
  ``RemoteAuth <token>``, JWTs (``eyJ...``), GitHub tokens (``ghp_``, ``ghs_``,
  ``github_pat_``...), PEM private key blocks, and ``token=`` / ``password=`` style pairs.

Both formats are those of ARC's listener (Go ``log/slog`` with ``AddSource``): keys ``time``,
``level`` (``INFO``...), ``source``, ``msg``, then ``app=ghalistener`` (see "formatters" below).
Extra structured fields go in ``extra={"fields": {...}}``; the JSON format emits them as
top-level keys, the text format as ``key=value`` pairs. One transition = one line (the
reconciler's LoggingSubscriber uses ``TransitionEvent.log_line``). Third-party loggers
(httpx, httpcore, urllib3, kubernetes, transitions) stay at WARNING unless
``$CAPACITY_AWARE_LIBRARY_LOG_LEVEL`` asks for more.
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
_NOISY = ("httpx", "httpcore", "urllib3", "kubernetes", "transitions", "azure", "msal")


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
#
# ARC's listener logs through Go's log/slog (cmd/ghalistener/config/config.go ``Logger()``):
# ``slog.NewJSONHandler`` / ``slog.NewTextHandler`` with ``AddSource: true``, and
# ``logger.With("app", "ghalistener")``. So every line has, in this order, ``time``, ``level``
# (``DEBUG``/``INFO``/``WARN``/``ERROR``), ``source``, ``msg``, then ``app`` and the line's own
# attributes. JSON times are RFC 3339 with up to nanoseconds (trailing zeros trimmed); text
# times have exactly milliseconds; text values are quoted when empty or when they contain a
# space, ``=``, ``"`` or a non-printable character (slog's ``needsQuoting``). We emit the same
# keys and formats so ARC users' log pipelines keep parsing; ``logger`` (the Python logger
# name) and the structured fields follow ``app``.

APP = "ghalistener"
_SLOG_LEVELS = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARN",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "ERROR",
}


def slog_level(levelno: int) -> str:
    """slog's level names; levels between two names take the lower one plus an offset."""
    if levelno in _SLOG_LEVELS:
        return _SLOG_LEVELS[levelno]
    base = max((lv for lv in _SLOG_LEVELS if lv <= levelno), default=logging.DEBUG)
    return f"{_SLOG_LEVELS[base]}+{levelno - base}" if levelno > base else _SLOG_LEVELS[base]


def _json_time(record: logging.LogRecord) -> str:
    """RFC 3339 with the fraction trimmed of trailing zeros, ``Z`` for UTC (Go's RFC3339Nano)."""
    moment = datetime.fromtimestamp(record.created, UTC)
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def _text_time(record: logging.LogRecord) -> str:
    """RFC 3339 with exactly three fractional digits (slog's appendRFC3339Millis)."""
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond // 1000:03d}Z"


def _fields(record: logging.LogRecord) -> Mapping[str, Any]:
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, Mapping) else {}


def _exception_text(formatter: logging.Formatter, record: logging.LogRecord) -> str | None:
    if record.exc_info and not record.exc_text:
        record.exc_text = formatter.formatException(record.exc_info)
    return record.exc_text or None


def _attributes(record: logging.LogRecord, exc: str | None) -> dict[str, Any]:
    """What follows ``msg``: app, logger, the structured fields, exception and stack."""
    entry: dict[str, Any] = {"app": APP, "logger": record.name}
    for key, value in _fields(record).items():
        entry.setdefault(str(key), value)
    if exc:
        entry["exc"] = exc
    if record.stack_info:
        entry["stack"] = record.stack_info
    return entry


class JsonFormatter(logging.Formatter):
    """One JSON object per line, slog's JSONHandler layout (see above)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _json_time(record),
            "level": slog_level(record.levelno),
            "source": {
                "function": f"{record.module}.{record.funcName}",
                "file": record.pathname,
                "line": record.lineno,
            },
            "msg": record.getMessage(),
        }
        for key, value in _attributes(record, _exception_text(self, record)).items():
            entry.setdefault(key, value)
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """logfmt, slog's TextHandler layout:
    ``time=2026-01-02T03:04:05.678Z level=INFO source=/app/x.py:12 msg=... app=ghalistener``.
    A traceback is one quoted ``exc`` value, so a record stays one line."""

    def format(self, record: logging.LogRecord) -> str:
        pairs: list[tuple[str, Any]] = [
            ("time", _text_time(record)),
            ("level", slog_level(record.levelno)),
            ("source", f"{record.pathname}:{record.lineno}"),
            ("msg", record.getMessage()),
        ]
        pairs += list(_attributes(record, _exception_text(self, record)).items())
        return " ".join(f"{_text_key(k)}={_text_value(v)}" for k, v in pairs)


def _needs_quoting(text: str) -> bool:
    """slog's needsQuoting: empty, a space, '=', '"', or anything not printable."""
    return not text or any(c in ' ="' or not c.isprintable() for c in text)


def _text_key(key: str) -> str:
    return json.dumps(key, ensure_ascii=False) if _needs_quoting(key) else key


def _text_value(value: Any) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, Mapping | list | tuple):
        text = json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    else:
        text = str(value)
    return json.dumps(text, ensure_ascii=False) if _needs_quoting(text) else text


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
    library_level: str | None = None,
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
    # Libraries stay at WARNING whatever our level (at ARC's default ``debug`` httpcore and
    # urllib3 would log every request), unless ``library_level`` asks for more.
    libraries = _parse_library_level(library_level)
    for noisy in _NOISY:
        logging.getLogger(noisy).setLevel(max(libraries, numeric))
    logging.captureWarnings(True)
    return handler


_HANDLER_NAME = "arc-capacity-listener"
#: Environment variable that lowers the level of third-party loggers (default warn).
LIBRARY_LEVEL_ENV = "CAPACITY_AWARE_LIBRARY_LOG_LEVEL"


def _parse_library_level(level: str | None) -> int:
    if level is None or not level.strip():
        return logging.WARNING
    value = LEVELS.get(level.strip().lower())
    if value is None:
        raise LoggingConfigError(
            f"${LIBRARY_LEVEL_ENV}: got {level!r}; allowed: debug, info, warn, error"
        )
    return value


__all__ = [
    "LIBRARY_LEVEL_ENV",
    "REDACTED",
    "JsonFormatter",
    "LoggingConfigError",
    "RedactionFilter",
    "TextFormatter",
    "configure_logging",
    "redact",
    "register_secret",
]
