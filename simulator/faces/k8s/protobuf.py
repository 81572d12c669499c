"""Just enough of the API server's protobuf encoding to read a SelfSubjectAccessReview.

kubectl's typed clients send built-in objects as ``application/vnd.kubernetes.protobuf``:
the 4-byte magic ``k8s\\0`` then a ``runtime.Unknown`` message (1: typeMeta, 2: raw,
3: contentEncoding, 4: contentType) whose ``raw`` is the object's protobuf. Field numbers are
those of ``k8s.io/api/authorization/v1/generated.proto``. Other kinds sent as protobuf are
refused with 415 (the face answers in JSON, which every client also accepts).
"""

from __future__ import annotations

from typing import Any

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"
_RESOURCE_ATTRIBUTES = {
    1: "namespace",
    2: "verb",
    3: "group",
    4: "version",
    5: "resource",
    6: "subresource",
    7: "name",
}
_NON_RESOURCE_ATTRIBUTES = {1: "path", 2: "verb"}


class ProtobufError(ValueError):
    """Not a well-formed Kubernetes protobuf body."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def fields(data: bytes) -> dict[int, list[bytes | int]]:
    """Field number -> values (bytes for length-delimited fields, int for varints)."""
    out: dict[int, list[bytes | int]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.setdefault(number, []).append(value)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            out.setdefault(number, []).append(data[pos : pos + size])
            pos += size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def _message(data: bytes, names: dict[int, str]) -> dict[str, str]:
    found = fields(data)
    return {
        names[n]: v[-1].decode()
        for n, v in found.items()
        if n in names and isinstance(v[-1], bytes)
    }


def _first(found: dict[int, list[bytes | int]], number: int) -> bytes:
    value = (found.get(number) or [b""])[-1]
    return value if isinstance(value, bytes) else b""


def decode_access_review(body: bytes) -> dict[str, Any]:
    """A protobuf SelfSubjectAccessReview as its JSON form (``spec`` only)."""
    if not body.startswith(_MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    unknown = fields(body[len(_MAGIC) :])
    type_meta = fields(_first(unknown, 1))
    kind = _first(type_meta, 2).decode()
    if kind != "SelfSubjectAccessReview":
        raise ProtobufError(
            f"protobuf bodies are only read for SelfSubjectAccessReview, not {kind!r}"
        )
    review = fields(_first(unknown, 2))
    spec = fields(_first(review, 2))
    out: dict[str, Any] = {}
    if 1 in spec:
        out["resourceAttributes"] = _message(_first(spec, 1), _RESOURCE_ATTRIBUTES)
    if 2 in spec:
        out["nonResourceAttributes"] = _message(_first(spec, 2), _NON_RESOURCE_ATTRIBUTES)
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "spec": out,
    }
