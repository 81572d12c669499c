"""Suite-wide test configuration."""

from __future__ import annotations

import freezegun

# The kubernetes client builds pydantic-backed models lazily; under freezegun its datetime
# becomes FakeDatetime and schema generation fails. Time travel is for our code only.
freezegun.configure(extend_ignore_list=["kubernetes", "pydantic"])
