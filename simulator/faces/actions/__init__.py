"""An HTTP face of the Actions service on loopback, for the real httpx client (docs/protocol.md).

It serves, on ``127.0.0.1:<ephemeral>`` (GHES-style URLs, so ``configure_url`` is
``<face>/<org>`` and the REST API lives under ``/api/v3``):

- the auth chain: App installation token (verifies the RS256 JWT), registration token
  (PAT or installation token), runner-registration (``RemoteAuth``) answering
  ``{url: <face>/tenant/, token: <admin JWT with exp>}``;
- sessions (one per scale set: 409 while one is held), refresh (new queue token), delete;
- the message queue: a long poll honouring ``X-ScaleSetMaxCapacity`` that returns as soon as
  the job feed has news (the feed is polled at most every ``poll_interval``) and 202 at the end
  of ``poll_window``; job messages are packed <= 50 per outer message with increasing ids and
  kept until acknowledged (DELETE), so an unacknowledged message is delivered again;
- acquire jobs (queue token);
- what ARC's controller calls through the scaleset client (admin token, under ``/tenant``):
  runner groups by name, runner scale sets (find by group and name, get, create, update, delete;
  created ids start past the constructor's; a duplicate name in a group is a 400
  ``RunnerScaleSetExistsException``) and runners (generatejitconfig registers one and answers an
  opaque base64 JIT config; get by id, find by ``agentName``, remove). Any scale set the face
  knows, given or created, takes sessions and polls alike.

The job side is a :class:`JobFeed` (the simulated world implements it later);
:class:`ScriptedJobFeed` is a small real one for tests. Fault knobs: :meth:`ActionsFace.fail_next`
(5xx, 429 + Retry-After, empty 200, garbage body, connection reset, any status),
:meth:`expire_queue_tokens`, :meth:`expire_admin_tokens`, :meth:`hold_session`,
:meth:`mark_runner_busy`, :meth:`drop_runner`. The harness reads :meth:`registered_scale_sets`,
:meth:`registered_runners` and :meth:`runner_by_name`. Every request is
recorded (method, path, query, headers with credentials replaced by their scheme) and
``capacity_history`` holds the ``X-ScaleSetMaxCapacity`` of each GetMessage.

Modules: :mod:`.face` (the object, knobs, records), :mod:`.handler` (HTTP plumbing),
:mod:`.routes` (route names and matching), :mod:`.rest`, :mod:`.sessions`, :mod:`.queue`,
:mod:`.scale_sets` (the route handlers, by service), :mod:`.jobs` (the job side), :mod:`.state`
(records and state), :mod:`.keys`. Everything public is re-exported here.

Threads: one per connection (``ThreadingHTTPServer``); all face state is behind one lock. Long
polls end early when the client hangs up (plain HTTP) or the face closes.
"""

from __future__ import annotations

from simulator.faces.actions.face import ActionsFace
from simulator.faces.actions.jobs import JobFeed, ScriptedJob, ScriptedJobFeed, wire_time
from simulator.faces.actions.keys import generate_rsa_key_pem
from simulator.faces.actions.routes import ROUTES
from simulator.faces.actions.state import (
    FIRST_MESSAGE_ID,
    MAX_JOBS_PER_MESSAGE,
    AppIdentity,
    FaceRequest,
    Fault,
    RunnerInfo,
    ScaleSetInfo,
)

__all__ = [
    "FIRST_MESSAGE_ID",
    "MAX_JOBS_PER_MESSAGE",
    "ROUTES",
    "ActionsFace",
    "AppIdentity",
    "FaceRequest",
    "Fault",
    "JobFeed",
    "RunnerInfo",
    "ScaleSetInfo",
    "ScriptedJob",
    "ScriptedJobFeed",
    "generate_rsa_key_pem",
    "wire_time",
]
