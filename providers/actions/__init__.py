"""GitHub Actions scale-set protocol client (docs/protocol.md), the listener's side of it.

- :mod:`.config_url`  ``configure_url`` parsing: scope, hosted vs GHES, API URLs.
- :mod:`.auth`        PAT / GitHub App credentials and the admin-token chain.
- :mod:`.retry`       the retry policy of the Go client (429/5xx, Retry-After).
- :mod:`.models`      pydantic models of every wire object and the message decoder.
- :mod:`.client`      one async method per call (sessions, messages, acquire jobs).
- :mod:`.session`     a message session: 409 bounded retry, 401 refresh-once, delete on exit.
- :mod:`.errors`      typed errors; :mod:`.redact` keeps secrets out of logs.
"""
