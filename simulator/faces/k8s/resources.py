"""The resource verbs of the face: list, get, create, replace, patch (incl. apply), delete.

All store access happens under the store lock; each verb returns ``(HTTP code, body)``.
"""

from __future__ import annotations

import copy
import json
import random
import string
from collections.abc import Callable, Mapping
from typing import Any

from reconciler.clock import Clock
from simulator.engine.store import KindInfo, ObjectStore, StoreError, iso
from simulator.faces.k8s import admission, apply, discovery, schemas, table
from simulator.faces.k8s.errors import ApiError, from_store
from simulator.faces.k8s.patching import PatchError, json_patch, merge_patch
from simulator.faces.k8s.requests import wants_dry_run
from simulator.faces.k8s.routing import Route
from simulator.faces.k8s.selectors import FieldSelector, LabelSelector

Obj = dict[str, Any]
Counter = Callable[[str, str, str | None, str], None]

APPLY = "application/apply-patch+yaml"
_MERGE = ("application/merge-patch+json", "application/strategic-merge-patch+json")
_JSON_PATCH = "application/json-patch+json"
#: Identity fields a write never changes (the store's, not the client's).
_IDENTITY = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "resourceVersion",
    "generation",
)


def dump(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def is_builtin(info: KindInfo) -> bool:
    """Built-in API groups (core and ``*.k8s.io``), as opposed to custom resources."""
    return info.group == "" or info.group.endswith(".k8s.io")


def list_item(info: KindInfo, obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """Items of built-in lists carry no kind/apiVersion; custom resources keep them."""
    if is_builtin(info):
        return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    return obj


class Resources:
    """Verbs over one ObjectStore, with the face's admission and validation."""

    def __init__(
        self,
        store: ObjectStore,
        count: Counter,
        *,
        strict_priority_classes: bool,
        clock: Clock,
    ) -> None:
        self.store = store
        self.count = count
        self.strict_priority_classes = strict_priority_classes
        self.clock = clock
        self._rng = random.Random(0)

    # --- reads ----------------------------------------------------------------------------

    def list(self, route: Route, query: Mapping[str, str], accept: str) -> bytes:
        info = route.info
        labels = LabelSelector.parse(query.get("labelSelector"))
        fields = FieldSelector.parse(query.get("fieldSelector"), kind=info.kind)
        self.count("list", info.kind, route.namespace, "")
        with self.store.lock:
            objs = [
                o
                for o in self.store.list(info.kind, route.namespace)
                if labels.matches(o) and fields.matches(o)
            ]
            rv = str(self.store.resource_version)
            if info.kind == "Pod" and table.wants_table(accept):
                return dump(
                    table.pod_table(objs, self.clock.now(), rv, query.get("includeObject", ""))
                )
            return dump(
                {
                    "kind": f"{info.kind}List",
                    "apiVersion": info.api_version,
                    "metadata": {"resourceVersion": rv},
                    "items": [list_item(info, o) for o in objs],
                }
            )

    def get(self, route: Route, query: Mapping[str, str], accept: str) -> bytes:
        self.count("get", route.info.kind, route.namespace, route.name or "")
        with self.store.lock:
            obj = self.current(route)
            if route.info.kind == "Pod" and table.wants_table(accept):
                rv = str(obj["metadata"].get("resourceVersion", ""))
                return dump(
                    table.pod_table([obj], self.clock.now(), rv, query.get("includeObject", ""))
                )
            return dump(obj)

    def current(self, route: Route) -> Obj:
        try:
            return self.store.get(route.info.kind, route.namespace, route.name or "")
        except StoreError:
            raise ApiError(
                404, "NotFound", f'{route.resource} "{route.name}" not found', route.details()
            ) from None

    # --- writes ---------------------------------------------------------------------------

    def create(self, route: Route, body: Any, query: Mapping[str, str]) -> bytes:
        info = route.info
        dry_run = wants_dry_run(query)
        obj = self._object_body(route, body, query)
        meta = obj["metadata"]
        self.count("create", info.kind, route.namespace, str(meta.get("name") or ""))
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(
                self._rng.choice(string.ascii_lowercase + string.digits) for _ in range(5)
            )
            meta["name"] = f"{meta['generateName']}{suffix}"
        if not meta.get("name"):
            raise ApiError(
                422,
                "Invalid",
                f"{info.kind} is invalid: metadata.name: Required value",
                {"kind": info.plural},
            )
        return self._insert(route, obj, dry_run=dry_run)

    def _insert(self, route: Route, obj: Obj, *, dry_run: bool = False) -> bytes:
        info = route.info
        meta = obj["metadata"]
        for field in ("resourceVersion", "uid", "deletionTimestamp", "creationTimestamp"):
            meta.pop(field, None)
        admission.default(info, obj)
        admission.validate_create(info, obj)
        if info.kind == "Pod":
            obj["status"] = {"phase": "Pending"}
        elif info.kind in discovery.STATUS_SUBRESOURCE:
            obj.pop("status", None)
        with self.store.lock:
            if info.kind == "Pod":
                admission.admit_priority(self.store, obj, strict=self.strict_priority_classes)
            if dry_run:
                # Every admission and validation step ran; nothing is persisted (upstream's
                # dryRun=All: the answer is the object as it would have been stored).
                if self.store.find(info.kind, route.namespace, meta["name"]) is not None:
                    raise ApiError(
                        409,
                        "AlreadyExists",
                        f'{route.resource} "{meta["name"]}" already exists',
                        route.details(),
                    )
                meta["creationTimestamp"] = iso(self.clock.now())
                return dump(obj)
            try:
                return dump(self.store.create(obj))
            except StoreError as exc:
                raise from_store(exc, route.resource, route.details(), meta["name"]) from None

    def _object_body(self, route: Route, body: Any, query: Mapping[str, str]) -> Obj:
        info = route.info
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", f"the body must be a {info.kind} object")
        check_fields(info, body, query.get("fieldValidation", ""))
        obj = copy.deepcopy(body)
        obj["kind"] = info.kind
        obj["apiVersion"] = info.api_version
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if info.namespaced:
            given = meta.get("namespace")
            if given and given != route.namespace:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request",
                )
            meta["namespace"] = route.namespace
        else:
            meta.pop("namespace", None)
        return obj

    def replace(self, route: Route, body: Any, query: Mapping[str, str]) -> bytes:
        info = route.info
        self.count("update", info.kind, route.namespace, route.name or "")
        obj = self._object_body(route, body, query)
        if obj["metadata"].get("name") != route.name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
        rv = obj["metadata"].get("resourceVersion") or None
        with self.store.lock:
            current = self.current(route)
            if rv is not None and rv != current["metadata"].get("resourceVersion"):
                raise self._conflict(route)
            final = self._scoped(route, current, obj)
            return self._commit(route, current, final, verb="update", dry_run=wants_dry_run(query))

    def _scoped(self, route: Route, current: Obj, changed: Obj) -> Obj:
        """The main resource cannot change status; ``/status`` changes only status."""
        if route.subresource == "status":
            final = copy.deepcopy(current)
            final["status"] = changed.get("status")
            return final
        if route.info.kind in discovery.STATUS_SUBRESOURCE:
            changed["status"] = copy.deepcopy(current.get("status"))
            if changed["status"] is None:
                changed.pop("status")
        return changed

    def patch(
        self, route: Route, raw: bytes, body: Any, content_type: str, query: Mapping[str, str]
    ) -> tuple[int, bytes]:
        info = route.info
        self.count("patch", info.kind, route.namespace, route.name or "")
        kind = content_type.split(";")[0].strip()
        if kind == APPLY:
            return self._apply(route, raw, query)
        if "force" in query:
            raise ApiError(
                422,
                "Invalid",
                'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: '
                "may not be specified for non-apply patch",
            )
        with self.store.lock:
            current = self.current(route)
            patched = self._patched(route, current, body, kind)
            if not isinstance(patched, dict):
                raise ApiError(400, "BadRequest", "the patched object is not an object")
            check_fields(info, patched, query.get("fieldValidation", ""))
            final = self._scoped(route, current, patched)
            dry_run = wants_dry_run(query)
            return 200, self._commit(route, current, final, verb="patch", dry_run=dry_run)

    def _patched(self, route: Route, current: Obj, body: Any, kind: str) -> Any:
        try:
            if kind == _JSON_PATCH:
                return json_patch(current, body)
            if kind in _MERGE:
                if not isinstance(body, dict):
                    raise PatchError("a merge patch must be a JSON object")
                rv = (body.get("metadata") or {}).get("resourceVersion")
                if rv is not None and rv != current["metadata"].get("resourceVersion"):
                    raise self._conflict(route)
                return merge_patch(current, body)
        except PatchError as exc:
            failed = "test failed" in str(exc)
            raise ApiError(
                422 if failed else 400, "Invalid" if failed else "BadRequest", str(exc)
            ) from None
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{_JSON_PATCH}, {', '.join(_MERGE)}, {APPLY} (got {kind!r})",
        )

    def _apply(self, route: Route, raw: bytes, query: Mapping[str, str]) -> tuple[int, bytes]:
        info = route.info
        dry_run = wants_dry_run(query)
        manager = apply.require_manager(query.get("fieldManager"))
        config = apply.parse_body(raw)
        check_fields(info, config, query.get("fieldValidation", ""))
        if (config.get("metadata") or {}).get("name") not in (None, route.name):
            raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
        now = iso(self.clock.now())
        with self.store.lock:
            existing = self.store.find(info.kind, route.namespace, route.name or "")
            result, fields = apply.applied(existing, config, manager)
            result["kind"], result["apiVersion"] = info.kind, info.api_version
            meta = result.setdefault("metadata", {})
            meta["name"] = route.name
            if info.namespaced:
                meta["namespace"] = route.namespace
            apply.with_managed(result, manager, fields, now)
            if existing is None:
                self.count("create", info.kind, route.namespace, route.name or "")
                return 201, self._insert(route, result, dry_run=dry_run)
            final = self._scoped(route, existing, result)
            return 200, self._commit(route, existing, final, verb="patch", dry_run=dry_run)

    def _commit(
        self, route: Route, current: Obj, final: Obj, *, verb: str, dry_run: bool = False
    ) -> bytes:
        """Write ``final`` over ``current`` keeping identity fields; one MODIFIED event.
        ``dry_run``: defaulted and validated the same way, answered, not written."""
        meta = final.setdefault("metadata", {})
        for key in _IDENTITY:
            if key in current["metadata"]:
                meta[key] = current["metadata"][key]
            else:
                meta.pop(key, None)
        final["kind"], final["apiVersion"] = current["kind"], current["apiVersion"]
        admission.default(route.info, final)
        admission.validate_update(route.info, current, final)
        if final.get("spec") != current.get("spec"):
            meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
        if dry_run:
            return dump(final)
        snapshot = copy.deepcopy(final)

        def change(obj: Obj) -> None:
            obj.clear()
            obj.update(snapshot)

        try:
            obj = self.store.mutate(
                route.info.kind, route.namespace, route.name or "", change, verb=verb
            )
        except StoreError as exc:
            raise from_store(exc, route.resource, route.details(), route.name or "") from None
        return dump(obj)

    def delete(self, route: Route, body: Any, query: Mapping[str, str]) -> bytes:
        info = route.info
        self.count("delete", info.kind, route.namespace, route.name or "")
        if route.subresource is not None:
            raise ApiError(405, "MethodNotAllowed", "DELETE of a subresource is not supported")
        options = body if isinstance(body, dict) else {}
        pre = options.get("preconditions") or {}
        grace = options.get("gracePeriodSeconds")
        if grace is None and "gracePeriodSeconds" in query:
            try:
                grace = int(query["gracePeriodSeconds"])
            except ValueError:
                raise ApiError(400, "BadRequest", "gracePeriodSeconds must be an integer") from None
        with self.store.lock:
            current = self.current(route)
            rv = pre.get("resourceVersion")
            if rv is not None and rv != current["metadata"].get("resourceVersion"):
                raise ApiError(
                    409,
                    "Conflict",
                    f"Precondition failed: ResourceVersion in precondition: {rv}, "
                    f"ResourceVersion in object meta: {current['metadata'].get('resourceVersion')}",
                    route.details(),
                )
            try:
                obj = self.store.delete(
                    info.kind,
                    route.namespace,
                    route.name or "",
                    uid=pre.get("uid"),
                    grace_period_seconds=grace,
                )
            except StoreError as exc:
                raise from_store(exc, route.resource, route.details(), route.name or "") from None
            return dump(obj)

    @staticmethod
    def _conflict(route: Route) -> ApiError:
        return ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {route.resource} "{route.name}": the object has '
            "been modified; please apply your changes to the latest version and try again",
            route.details(),
        )


def check_fields(info: KindInfo, body: Mapping[str, Any], directive: str) -> None:
    """Schema checks: wrong types always fail (a decode error upstream); unknown fields fail
    with ``fieldValidation=Strict`` only (``Warn``, the default, and ``Ignore`` accept them)."""
    if directive not in ("", "Strict", "Warn", "Ignore"):
        raise ApiError(
            400,
            "BadRequest",
            f'fieldValidation: Unsupported value: "{directive}": supported values: "Ignore", '
            '"Strict", "Warn"',
        )
    unknown, bad = schemas.check(body, info.kind)
    prefix = f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
    if bad:
        raise ApiError(400, "BadRequest", prefix + "; ".join(bad))
    if unknown and directive == "Strict":
        listed = ", ".join(f'unknown field "{f}"' for f in unknown)
        raise ApiError(400, "BadRequest", f"{prefix}strict decoding error: {listed}")
