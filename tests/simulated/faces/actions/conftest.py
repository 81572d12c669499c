"""The Actions face fixtures (tests/providers/actions/conftest.py) for this folder."""

from tests.providers.actions.conftest import app_keys, face, feed, sleeps  # noqa: F401
