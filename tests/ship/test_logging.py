"""Logging: the formats and levels of the listener config, and the redaction filter."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from listener.observability.logging import (
    REDACTED,
    LoggingConfigError,
    RedactionFilter,
    configure_logging,
    redact,
)
from providers.actions.redact import SecretRegistry

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----\n"
)
PAT = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjM0NSJ9.c2lnbmF0dXJlLXBhcnQ"


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """configure_logging changes process-wide state; put it back for the other tests."""
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    noisy = {
        name: logging.getLogger(name).level
        for name in ("httpx", "httpcore", "urllib3", "kubernetes")
    }
    yield
    root.setLevel(saved[0])
    for handler in [h for h in root.handlers if h not in saved[1]]:
        root.removeHandler(handler)
    for name, level in noisy.items():
        logging.getLogger(name).setLevel(level)
    logging.captureWarnings(False)


@pytest.fixture
def registry() -> SecretRegistry:
    return SecretRegistry()


@pytest.fixture
def capture(registry: SecretRegistry) -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger whose records go through the redaction filter into a JSON handler."""
    stream = io.StringIO()
    handler = configure_logging("debug", "json", stream=stream, registry=registry)
    logger = logging.getLogger("tests.ship.logging")
    try:
        yield logger, stream
    finally:
        logging.getLogger().removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_json_lines_carry_level_logger_message_and_fields(
    capture: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, stream = capture
    logger.info(
        "transition %s",
        "pair=abcde-1 READY->PREEMPTED",
        extra={"fields": {"pair": "abcde-1", "from": "READY", "to": "PREEMPTED"}},
    )
    (entry,) = lines(stream)
    assert entry["level"] == "INFO"
    assert entry["logger"] == "tests.ship.logging"
    assert entry["app"] == "ghalistener"
    assert entry["msg"] == "transition pair=abcde-1 READY->PREEMPTED"
    assert entry["pair"] == "abcde-1" and entry["to"] == "PREEMPTED"
    assert str(entry["time"]).endswith("Z")
    source = entry["source"]
    assert isinstance(source, dict) and source["file"].endswith("test_logging.py")


def test_text_format_is_one_logfmt_line_with_key_values(registry: SecretRegistry) -> None:
    stream = io.StringIO()
    handler = configure_logging("info", "text", stream=stream, registry=registry)
    try:
        logging.getLogger("reconciler.transitions").info(
            "transition", extra={"fields": {"pair": "abcde-1", "reason": "both pods Running"}}
        )
        logging.getLogger("reconciler.transitions").debug("not shown at info")
    finally:
        logging.getLogger().removeHandler(handler)
    (line,) = stream.getvalue().splitlines()
    assert " level=INFO source=" in line
    assert " msg=transition app=ghalistener logger=reconciler.transitions " in line
    assert line.endswith('pair=abcde-1 reason="both pods Running"')


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ("debug", logging.DEBUG),
        ("info", logging.INFO),
        ("warn", logging.WARNING),
        ("ERROR", logging.ERROR),
    ],
)
def test_arc_levels(level: str, expected: int, registry: SecretRegistry) -> None:
    handler = configure_logging(level, "text", stream=io.StringIO(), registry=registry)
    try:
        assert logging.getLogger().level == expected
    finally:
        logging.getLogger().removeHandler(handler)


def test_configuring_twice_does_not_duplicate_lines(registry: SecretRegistry) -> None:
    stream = io.StringIO()
    first = configure_logging("info", "json", stream=stream, registry=registry)
    second = configure_logging("info", "json", stream=stream, registry=registry)
    try:
        assert first not in logging.getLogger().handlers
        logging.getLogger("tests.ship.logging").warning("once")
        assert len(lines(stream)) == 1
    finally:
        logging.getLogger().removeHandler(second)


@pytest.mark.parametrize(
    ("level", "fmt", "key"), [("verbose", "text", "log_level"), ("info", "yaml", "log_format")]
)
def test_unknown_level_or_format_is_one_clear_error(level: str, fmt: str, key: str) -> None:
    with pytest.raises(LoggingConfigError, match=key):
        configure_logging(level, fmt, stream=io.StringIO())


# --- redaction -------------------------------------------------------------------------------


def test_registered_secrets_are_masked_in_message_args_and_fields(
    capture: tuple[logging.Logger, io.StringIO], registry: SecretRegistry
) -> None:
    logger, stream = capture
    registry.add(SecretStr("s3cr3t-installation-token"))
    logger.info("token is %s", "s3cr3t-installation-token")
    logger.info("fields", extra={"fields": {"header": "x s3cr3t-installation-token y"}})
    output = stream.getvalue()
    assert "s3cr3t-installation-token" not in output
    first, second = lines(stream)
    assert first["msg"] == f"token is {REDACTED}"
    assert second["header"] == f"x {REDACTED} y"


def test_a_private_key_is_masked_whole_and_line_by_line(
    capture: tuple[logging.Logger, io.StringIO], registry: SecretRegistry
) -> None:
    logger, stream = capture
    registry.add(PEM)
    body_line = PEM.splitlines()[1]
    logger.error("bad key %r", PEM)
    logger.error("partial dump: %s", body_line)
    output = stream.getvalue()
    assert body_line not in output
    assert "MIIEowIBAAKCAQEA" not in output


def test_secrets_in_exception_tracebacks_are_masked(
    capture: tuple[logging.Logger, io.StringIO], registry: SecretRegistry
) -> None:
    logger, stream = capture
    registry.add("hud-bot-token-123456")
    try:
        raise RuntimeError("HUD said 401 for token hud-bot-token-123456")
    except RuntimeError:
        logger.exception("HUD request failed")
    (entry,) = lines(stream)
    assert "hud-bot-token-123456" not in json.dumps(entry)
    assert REDACTED in str(entry["exc"])


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        (f"Authorization: Bearer {JWT}", JWT),
        ("Authorization: RemoteAuth abcdefghijklmnop0123456789", "abcdefghijklmnop0123456789"),
        (f"app jwt {JWT} expired", JWT),
        (f"using {PAT}", PAT[4:]),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "0123456789_abcdefghij"),
        ("GET /sessions?token=abcdef123456&x=1", "abcdef123456"),
        ('{"github_token": "tok-abcdef123456"}', "tok-abcdef123456"),
        ("{'access_token': 'tok-abcdef123456'}", "tok-abcdef123456"),
        (PEM, "MIIEowIBAAKCAQEA"),
    ],
)
def test_credential_shapes_are_masked_without_registration(text: str, leaked: str) -> None:
    masked = redact(text, SecretRegistry())
    assert leaked not in masked
    assert REDACTED in masked


@pytest.mark.parametrize(
    "text",
    [
        "refreshing the admin token: expires in 60s",
        "Bearer token missing",
        "pair=abcde-1 READY->PREEMPTED kind=passive v=4 reason='runner placeholder preempted'",
        "0/3 nodes are available: 3 Insufficient cpu",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text, SecretRegistry()) == text


def test_the_filter_never_drops_a_record_even_with_a_bad_format_string(
    registry: SecretRegistry,
) -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%d apples", ("many",), None)
    assert RedactionFilter(registry).filter(record) is True
    assert "apples" in record.getMessage()


def test_empty_level_and_format_mean_info_and_text(registry: SecretRegistry) -> None:
    stream = io.StringIO()
    handler = configure_logging("", "", stream=stream, registry=registry)
    try:
        assert logging.getLogger().level == logging.INFO
        logging.getLogger("tests.ship.logging").info("plain")
        assert not stream.getvalue().startswith("{")
    finally:
        logging.getLogger().removeHandler(handler)


def test_a_pair_transition_keeps_its_fields_as_json_keys_not_only_in_msg(
    capture: tuple[logging.Logger, io.StringIO],
) -> None:
    """Regression (issue 32): the reconciler's LoggingSubscriber packed pair, from, to and
    reason into ``msg`` only, so a JSON log pipeline had to parse the message to filter on
    them although docs/configuration.md#logs says they are kept as fields."""
    from reconciler.subscribers import LoggingSubscriber
    from state_machine.events import Kind, TransitionEvent
    from state_machine.states import PairState

    event = TransitionEvent(
        pair_id="k3x9a-7",
        scale_set="arc-runners",
        source=PairState.REQUESTED,
        target=PairState.TIMED_OUT,
        kind=Kind.ACTIVE,
        reason="not READY within 300s",
        at=0.0,
        version=3,
        runner_pod="r",
        workflow_pod="w",
    )
    LoggingSubscriber().notify([event], [])
    (entry,) = lines(capture[1])
    assert entry["logger"] == "reconciler.transitions"
    assert {k: entry[k] for k in ("pair", "scale_set", "from", "to", "kind", "v", "reason")} == {
        "pair": "k3x9a-7",
        "scale_set": "arc-runners",
        "from": "REQUESTED",
        "to": "TIMED_OUT",
        "kind": "active",
        "v": 3,
        "reason": "not READY within 300s",
    }
    assert str(entry["msg"]).startswith("transition pair=k3x9a-7 ")
    # The slog source object is not overwritten by a field.
    assert isinstance(entry["source"], dict)


def test_a_hot_slot_transition_is_one_line_with_its_fields_like_a_pairs(
    capture: tuple[logging.Logger, io.StringIO],
) -> None:
    """Hot slots' moves once had their own log line from the keeper, with no fields; they
    are transition events now, logged by the same subscriber in the same shape."""
    from reconciler.subscribers import LoggingSubscriber
    from state_machine.events import HotTransitionEvent, Kind
    from state_machine.states import HotState

    event = HotTransitionEvent(
        slot_id="hot-i0-4",
        scale_set="arc-runners",
        source=HotState.HOT,
        target=HotState.LOST,
        kind=Kind.PASSIVE,
        reason="placeholder p lost or no longer counts",
        at=0.0,
        runner="arc-runners-abcde-runner-x",
        placeholder="p",
    )
    LoggingSubscriber().notify([event], [])
    (entry,) = lines(capture[1])
    assert entry["logger"] == "reconciler.transitions"
    assert {k: entry[k] for k in ("hot_slot", "from", "to", "kind", "runner", "reason")} == {
        "hot_slot": "hot-i0-4",
        "from": "HOT",
        "to": "LOST",
        "kind": "passive",
        "runner": "arc-runners-abcde-runner-x",
        "reason": "placeholder p lost or no longer counts",
    }
    assert str(entry["msg"]).startswith("transition hot_slot=hot-i0-4 scale_set=arc-runners ")
