"""A loopback fake of the GitHub REST calls the ``github`` demand source makes.

Serves ``GET /repos/{o}/{r}/actions/runs?status=...`` and ``.../runs/{id}/jobs`` from a dict
of runs, with strong ETags (``If-None-Match`` -> 304), GitHub's rate-limit headers, an App
installation-token endpoint, and knobs for a rate-limited answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.providers.demand.loopback import Answer, Request, json_answer

RUNS = re.compile(r"^/repos/([^/]+/[^/]+)/actions/runs$")
JOBS = re.compile(r"^/repos/([^/]+/[^/]+)/actions/runs/(\d+)/jobs$")
TOKENS = re.compile(r"^/app/installations/(\d+)/access_tokens$")


def job(job_id: int, status: str, *labels: str) -> dict[str, Any]:
    return {"id": job_id, "status": status, "labels": list(labels)}


@dataclass
class GitHubFake:
    token: str = "ghp_" + "x" * 36
    #: repo -> run id -> (run status, jobs)
    runs: dict[str, dict[int, tuple[str, list[dict[str, Any]]]]] = field(default_factory=dict)
    limit: int = 5000
    remaining: int = 5000
    reset_at: int = 2_000_000_000
    #: When set, every API call answers 403 with this Retry-After.
    secondary_limit_retry_after: int | None = None
    installation_token: str = "ghs_" + "i" * 36
    minted: int = 0

    def __call__(self, request: Request) -> Answer:
        url = urlsplit(request.path)
        if request.method == "POST" and TOKENS.match(url.path):
            self.minted += 1
            body = {"token": self.installation_token, "expires_at": "2099-01-01T00:00:00Z"}
            return json_answer(201, body)
        auth = request.headers.get("authorization", "")
        if auth not in (f"Bearer {self.token}", f"Bearer {self.installation_token}"):
            return json_answer(401, {"message": "Bad credentials"})
        if self.secondary_limit_retry_after is not None:
            return json_answer(
                403,
                {"message": "You have exceeded a secondary rate limit"},
                **{"Retry-After": str(self.secondary_limit_retry_after)},
            )
        payload = self._payload(url.path, parse_qs(url.query))
        if payload is None:
            return json_answer(404, {"message": "Not Found"})
        text = json.dumps(payload, sort_keys=True)
        etag = '"' + hashlib.sha256(text.encode()).hexdigest()[:20] + '"'
        if request.headers.get("if-none-match") == etag:
            return 304, {"ETag": etag, **self._rate_headers()}, b""
        self.remaining = max(0, self.remaining - 1)  # only 200s count, like GitHub's
        return json_answer(200, payload, ETag=etag, **self._rate_headers())

    def _payload(self, path: str, query: dict[str, list[str]]) -> Any:
        if match := RUNS.match(path):
            status = query.get("status", [""])[0]
            runs = self.runs.get(match.group(1), {})
            listed = [{"id": rid, "status": st} for rid, (st, _) in runs.items() if st == status]
            return {"total_count": len(listed), "workflow_runs": listed}
        if match := JOBS.match(path):
            found = self.runs.get(match.group(1), {}).get(int(match.group(2)))
            if found is None:
                return None
            return {"total_count": len(found[1]), "jobs": found[1]}
        return None

    def _rate_headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset_at),
        }
