"""The Kubernetes face fixtures (tests/providers/kubernetes/face_fixtures.py) for this folder."""

from tests.providers.kubernetes.face_fixtures import api, cache, changes, face, store  # noqa: F401
