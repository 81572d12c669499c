"""One answer for `containerMode: kubernetes`: every page that says which container modes the
listener refuses agrees with the start-up check (providers/kubernetes/checks.py, check 3),
which is what runs in production.

Issue 46: `values` and docs/quickstart.md said the listener refuses `kubernetes` mode even with
ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true and pointed at a five-step migration, while the check,
docs/design.md, docs/troubleshooting.md and the migration page accepted that combination (the
workflow pod then goes through kube-scheduler, as in kubernetes-novolume).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from providers.kubernetes.checks import (
    CHART_HOOKS,
    HOOKS_ENV,
    KUBE_SCHEDULER_ENV,
    check_container_mode,
)

ROOT = Path(__file__).resolve().parents[2]
VALUES = ROOT / "listener" / "commands" / "values.py"
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "config").glob("*.yaml")),
]
_MODE = re.compile(r"\bmodes?\b|containerMode|kubernetes-novolume|classic `?kubernetes", re.I)
_REFUSE = re.compile(r"refus|stops? the listener", re.I)
#: How a paragraph may state the rule: the variable that makes `kubernetes` acceptable, or the
#: criterion itself (workflow pods through kube-scheduler).
_RULE = re.compile(rf"{KUBE_SCHEDULER_ENV}|through kube-scheduler|bypass the scheduler")
_WRONG = re.compile(rf"even with `?{KUBE_SCHEDULER_ENV}|refuses to start on any other mode", re.I)


def _runner(mode: str | None, kube_scheduler: str | None) -> dict[str, object]:
    env = [{"name": HOOKS_ENV, "value": CHART_HOOKS[mode]}] if mode in CHART_HOOKS else []
    if kube_scheduler is not None:
        env.append({"name": KUBE_SCHEDULER_ENV, "value": kube_scheduler})
    return {"containers": [{"name": "runner", "env": env}]}


def _texts() -> list[tuple[str, str]]:
    """(where, paragraph) of every page, and of the `values` command's docstring (its
    warning is pinned by tests/listener/test_values.py)."""
    out = []
    for page in PAGES:
        for para in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")):
            out.append((page.relative_to(ROOT).as_posix(), para))
    doc = ast.get_docstring(ast.parse(VALUES.read_text(encoding="utf-8"))) or ""
    out += [("listener/commands/values.py", para) for para in re.split(r"\n\s*\n", doc)]
    return out


def _says_what_is_refused(para: str) -> bool:
    flat = re.sub(r"\s*\n\s*#?\s*", " ", para)
    return any(_MODE.search(s) and _REFUSE.search(s) for s in re.split(r"(?<=[.;])\s", flat))


@pytest.mark.parametrize(
    ("mode", "kube_scheduler", "accepted"),
    [
        ("kubernetes-novolume", None, True),
        ("kubernetes", "true", True),
        ("kubernetes", None, False),
        ("kubernetes", "false", False),
        ("dind", None, False),
    ],
)
def test_the_start_up_check_accepts_kubernetes_mode_only_with_the_kube_scheduler(
    mode: str, kube_scheduler: str | None, accepted: bool
) -> None:
    """The behaviour every page below must describe."""
    assert (check_container_mode(_runner(mode, kube_scheduler)) == []) is accepted


def test_every_page_that_says_which_modes_are_refused_names_the_kube_scheduler_way() -> None:
    """A page that tells the reader a mode is refused and only offers the migration sends
    teams on `kubernetes` + ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true through five needless steps."""
    seen = [(where, para) for where, para in _texts() if _says_what_is_refused(para)]
    assert {"docs/quickstart.md", "docs/design.md", "listener/commands/values.py"} <= {
        where for where, _ in seen
    }
    bad = [(where, para[:160]) for where, para in seen if not _RULE.search(para)]
    assert not bad, bad


def test_no_page_says_kubernetes_mode_is_refused_even_with_the_kube_scheduler() -> None:
    bad = [(where, para[:160]) for where, para in _texts() if _WRONG.search(para)]
    assert not bad, bad


def test_every_value_a_page_gives_the_variable_is_one_the_check_accepts() -> None:
    values = {
        m.group(1)
        for _, para in _texts()
        for m in re.finditer(rf"{KUBE_SCHEDULER_ENV}=`?(\w+)", para)
    }
    assert values, f"no page names {KUBE_SCHEDULER_ENV}=<value>"
    for value in values:
        assert check_container_mode(_runner("kubernetes", value)) == [], value
