"""API errors answered as ``metav1.Status`` bodies, with the API server's wording."""

from __future__ import annotations

from typing import Any

from simulator.engine.store import StoreError

Obj = dict[str, Any]


class ApiError(Exception):
    """An error answered as a metav1.Status body."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def invalid(kind: str, name: str, causes: list[tuple[str, str, str]], group: str = "") -> ApiError:
    """422 like ``apierrors.NewInvalid``: one cause per (field, reason type, message).

    The message joins the causes as ``<Kind> "<name>" is invalid: [field: message, ...]``
    (brackets only with more than one cause), as apimachinery's ``NewInvalid`` does."""
    parts = [f"{field}: {message}" for field, _, message in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details: Obj = {
        "name": name,
        "kind": kind,
        "causes": [
            {"reason": reason, "message": message, "field": field}
            for field, reason, message in causes
        ],
    }
    if group:
        details["group"] = group
    qualified = f"{kind}.{group}" if group else kind
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {joined}', details)


def from_store(exc: StoreError, resource: str, details: Obj, name: str) -> ApiError:
    """The API error for a store error on ``resource`` (``pods``, ``x.actions.github.com``)."""
    details = details | {"name": name}
    if exc.reason == "NotFound":
        return ApiError(404, "NotFound", f'{resource} "{name}" not found', details)
    if exc.reason == "AlreadyExists":
        return ApiError(409, "AlreadyExists", f'{resource} "{name}" already exists', details)
    return ApiError(exc.code, exc.reason, str(exc), details)
