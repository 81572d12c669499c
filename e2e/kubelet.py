"""What a kubelet writes when a pod's containers exit, for the pods kwok only pretends to run
(the runner double's runner pods, ARC's listener pod)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any


def exited_status(containers: Iterable[Any], code: int) -> dict[str, Any]:
    """The status patch of a pod whose every container exited with ``code``: phase Succeeded
    on 0, else Failed, and each container terminated (ARC's controllers read both)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    terminated = {
        "exitCode": code,
        "reason": "Completed" if code == 0 else "Error",
        "startedAt": now,
        "finishedAt": now,
    }
    return {
        "status": {
            "phase": "Succeeded" if code == 0 else "Failed",
            "containerStatuses": [
                {
                    "name": c.name,
                    "image": c.image,
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {"terminated": terminated},
                }
                for c in containers
            ],
        }
    }
