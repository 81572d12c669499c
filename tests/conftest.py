"""Suite-wide test configuration."""

from __future__ import annotations

import freezegun
import pytest

from tests.stable_ids import unstable_ids

# The kubernetes client builds pydantic-backed models lazily; under freezegun its datetime
# becomes FakeDatetime and schema generation fails. Time travel is for our code only.
freezegun.configure(extend_ignore_list=["kubernetes", "pydantic"])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    unstable = unstable_ids(item.nodeid for item in items)
    if unstable:
        raise pytest.UsageError(
            f"{len(unstable)} test id(s) depend on the process (a set's order or an address), "
            "so pytest-xdist workers would collect different tests; give the parametrize an "
            f"ids= that sorts or names the values: {unstable[:3]}"
        )
