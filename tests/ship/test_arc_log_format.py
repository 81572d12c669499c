"""Our log lines parse like ARC's listener's (Go log/slog with AddSource, app=ghalistener):
same keys in the same order, same level names, same time layouts, logfmt quoting; transition
lines keep their fields; third-party loggers stay at WARNING unless asked."""

from __future__ import annotations

import io
import json
import logging
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from listener.observability.logging import LIBRARY_LEVEL_ENV, LoggingConfigError, configure_logging
from providers.actions.redact import SecretRegistry

RECORDED = [
    line
    for line in (Path(__file__).parent / "data" / "arc_listener_lines.txt").read_text().splitlines()
    if line and not line.startswith("#")
]
ARC_JSON = json.loads(RECORDED[0])
ARC_TEXT = RECORDED[1]
#: Go's RFC3339Nano (trailing zeros trimmed) and slog's text RFC3339 with milliseconds.
JSON_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
TEXT_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    libs = {n: logging.getLogger(n).level for n in ("httpx", "httpcore", "urllib3", "kubernetes")}
    yield
    root.setLevel(saved[0])
    for handler in [h for h in root.handlers if h not in saved[1]]:
        root.removeHandler(handler)
    for name, level in libs.items():
        logging.getLogger(name).setLevel(level)
    logging.captureWarnings(False)


def emit(fmt: str, level: str = "debug", **kwargs: str) -> str:
    stream = io.StringIO()
    configure_logging(level, fmt, stream=stream, registry=SecretRegistry(), **kwargs)
    logging.getLogger("reconciler.transitions").info(
        "transition",
        extra={"fields": {"pair": "abcde-1", "from": "REQUESTED", "to": "READY"}},
    )
    return stream.getvalue()


def logfmt(line: str) -> list[tuple[str, str]]:
    """Split a logfmt line (quoted values use Go/JSON escapes, close enough to shell words)."""
    return [tuple(word.split("=", 1)) for word in shlex.split(line)]  # type: ignore[misc]


def test_json_has_arcs_keys_in_arcs_order() -> None:
    (line,) = emit("json").splitlines()
    ours = json.loads(line)
    assert list(ours)[:5] == list(ARC_JSON)[:5] == ["time", "level", "source", "msg", "app"]
    assert set(ours["source"]) == set(ARC_JSON["source"]) == {"function", "file", "line"}
    assert ours["app"] == ARC_JSON["app"] == "ghalistener"
    assert ours["level"] == "INFO" == ARC_JSON["level"]
    assert JSON_TIME.match(ours["time"]) and JSON_TIME.match(ARC_JSON["time"])


def test_text_has_arcs_keys_in_arcs_order() -> None:
    (line,) = emit("text").splitlines()
    ours, arc = logfmt(line), logfmt(ARC_TEXT)
    assert [k for k, _ in ours][:5] == [k for k, _ in arc][:5]
    ours_d, arc_d = dict(ours), dict(arc)
    assert ours_d["level"] == arc_d["level"] == "INFO"
    assert TEXT_TIME.match(ours_d["time"]) and TEXT_TIME.match(arc_d["time"])
    assert re.match(r"^/.+\.py:\d+$", ours_d["source"])
    assert arc_d["source"].rsplit(":", 1)[1].isdigit()


def test_transition_lines_keep_their_fields_in_both_formats() -> None:
    (json_line,) = emit("json").splitlines()
    entry = json.loads(json_line)
    assert (entry["pair"], entry["from"], entry["to"]) == ("abcde-1", "REQUESTED", "READY")
    (text_line,) = emit("text").splitlines()
    assert text_line.endswith(" pair=abcde-1 from=REQUESTED to=READY")


@pytest.mark.parametrize(
    ("method", "name"),
    [("debug", "DEBUG"), ("info", "INFO"), ("warning", "WARN"), ("error", "ERROR")],
)
def test_level_names_are_slogs(method: str, name: str) -> None:
    stream = io.StringIO()
    configure_logging("debug", "json", stream=stream, registry=SecretRegistry())
    getattr(logging.getLogger("listener"), method)("x")
    assert json.loads(stream.getvalue())["level"] == name


def test_text_values_are_quoted_like_slog() -> None:
    stream = io.StringIO()
    configure_logging("info", "text", stream=stream, registry=SecretRegistry())
    logging.getLogger("listener").info(
        "a=b", extra={"fields": {"empty": "", "eq": "k=v", "quote": 'say "hi"', "plain": "ok"}}
    )
    line = stream.getvalue().strip()
    assert ' msg="a=b" ' in line
    assert ' empty="" eq="k=v" quote="say \\"hi\\"" plain=ok' in line


def test_a_traceback_stays_on_the_same_line_in_text() -> None:
    stream = io.StringIO()
    configure_logging("info", "text", stream=stream, registry=SecretRegistry())
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("listener").exception("failed")
    assert len(stream.getvalue().splitlines()) == 1
    assert 'exc="Traceback' in stream.getvalue()


def test_libraries_stay_at_warning_at_arcs_default_debug_level() -> None:
    """Regression: at the chart's default ``debug`` level httpcore/urllib3 flooded the log
    (580 lines in 25 s)."""
    stream = io.StringIO()
    configure_logging("debug", "text", stream=stream, registry=SecretRegistry())
    for name in ("httpcore", "urllib3", "httpx", "kubernetes"):
        logging.getLogger(name + ".connection").debug("connect_tcp.started host=...")
    logging.getLogger("listener").debug("ours")
    assert len(stream.getvalue().splitlines()) == 1
    assert "msg=ours" in stream.getvalue()


def test_libraries_follow_when_asked() -> None:
    stream = io.StringIO()
    configure_logging(
        "debug", "text", stream=stream, registry=SecretRegistry(), library_level="debug"
    )
    logging.getLogger("httpcore.connection").debug("connect_tcp.started")
    assert "connect_tcp.started" in stream.getvalue()


def test_a_bad_library_level_is_one_clear_error() -> None:
    with pytest.raises(LoggingConfigError, match=rf"\${LIBRARY_LEVEL_ENV}: got 'loud'"):
        configure_logging("info", "text", stream=io.StringIO(), library_level="loud")
