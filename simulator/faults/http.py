"""Faults applied to the HTTP faces (real time): the Actions face's and the HUD face's knobs."""

from __future__ import annotations

from typing import Any

from simulator.faults.plan import Fault, FaultKind

# --- HTTP faces (real time) -------------------------------------------------------------------


def apply_actions_fault(face: Any, fault: Fault) -> None:
    """Arm the Actions face (:class:`simulator.faces.actions.ActionsFace`) for one
    fault; ``actions_409`` lasts until :func:`clear_actions_fault`."""
    from simulator.faces.actions import Fault as Answer

    p = fault.params
    route = p.route or "get_message"
    kind = fault.kind
    if kind is FaultKind.ACTIONS_5XX:
        face.fail_next(route, Answer.server_error(p.status or 503), times=p.times)
    elif kind is FaultKind.ACTIONS_429:
        retry_after = f"{p.retry_after if p.retry_after is not None else 1:g}"
        face.fail_next(route, Answer.too_many_requests(retry_after), times=p.times)
    elif kind is FaultKind.ACTIONS_401:
        if p.which == "admin":
            face.expire_admin_tokens()
        else:
            face.expire_queue_tokens()
    elif kind is FaultKind.ACTIONS_409:
        for scale_set_id in face.scale_sets:
            face.hold_session(scale_set_id)
    elif kind is FaultKind.ACTIONS_EMPTY_200:
        face.fail_next("get_message", Answer.empty_ok(), times=p.times)
    elif kind is FaultKind.ACTIONS_MALFORMED:
        face.fail_next(route, Answer.garbage(), times=p.times)
    elif kind is FaultKind.ACTIONS_RESET:
        face.fail_next(route, Answer.reset(), times=p.times)
    else:
        raise ValueError(f"{kind} is not an Actions-service fault")


def clear_actions_fault(face: Any, fault: Fault) -> None:
    if fault.kind is FaultKind.ACTIONS_409:
        for scale_set_id in face.scale_sets:
            face.release_session(scale_set_id)


def apply_hud_fault(face: Any, fault: Fault) -> None:
    """Arm the HUD face (:class:`simulator.faces.hud.HudFace`); cleared by
    ``face.healthy()``."""
    p = fault.params
    if fault.kind is FaultKind.HUD_DOWN:
        face.outage(p.status or 503)
    elif fault.kind is FaultKind.HUD_SLOW:
        face.slow(p.delay or 1.0)
    elif fault.kind is FaultKind.HUD_MALFORMED:
        face.malformed(p.shape or "not-json")
    elif fault.kind is FaultKind.HUD_ABSURD:
        face.absurd(p.value if p.value is not None else 10**9)
    else:
        raise ValueError(f"{fault.kind} is not a HUD fault")
