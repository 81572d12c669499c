"""Pod/NodeClaim status conditions as the real components write them."""

from __future__ import annotations

from simulator.engine.store import Obj, iso

_ISO: dict[int, str] = {}


def iso_cached(ts: float) -> str:
    """``store.iso`` memoised per second (timestamps have one-second resolution)."""
    key = int(ts)
    text = _ISO.get(key)
    if text is None:
        if len(_ISO) > 4096:
            _ISO.clear()
        text = _ISO[key] = iso(ts)
    return text


def set_condition(obj: Obj, ctype: str, status: str, reason: str, message: str, now: float) -> None:
    """Upsert a pod condition; lastTransitionTime moves only when the status changes."""
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    for cond in conditions:
        if cond.get("type") == ctype:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = iso_cached(now)
            cond.update(status=status, reason=reason, message=message)
            return
    conditions.append(
        {
            "type": ctype,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": iso_cached(now),
        }
    )
