"""The ``fleetView`` part of the ``capacityAware`` block: read the fleet's capacity from a
Prometheus-compatible query API and build pairs only for this cluster's share (docs/fleet.md).

Off by default. When on, what is advertised does not change (only this cluster's confirmed
slots, reconciler/capacity.py); only the demand decide sees and the warm pool it keeps do,
and only while the view is fresh (reconciler/fleet.py)."""

from __future__ import annotations

import re

from pydantic import Field, StrictBool, model_validator

from reconciler.settings_types import Seconds, SettingsModel

#: A Prometheus label value we put in a selector: no quotes, backslashes or newlines.
_LABEL_VALUE = re.compile(r'^[^"\\\n]{1,128}$')


class FleetViewSettings(SettingsModel):
    """Where the fleet view is read and how old it may be before it is ignored."""

    enabled: StrictBool = False
    #: Base URL of the query API (Prometheus, Thanos Query, Mimir's Prometheus API prefix):
    #: ``<url>/api/v1/query`` is asked.
    url: str | None = None
    #: This cluster's value of the ``cluster`` label in the store (its Prometheus's
    #: ``external_labels.cluster``): which row of the view is this listener's own.
    cluster: str | None = None
    #: The fleet key: the ``fleet`` label value the scale sets serving the same runner label
    #: share in every cluster. Default (None): this scale set's name.
    fleet: str | None = None
    #: A view older than this (its own cluster's row: scrape + rule evaluation + the
    #: store's own delay) is ignored and the listener acts alone, as with the view off.
    max_age: Seconds = Field(default=180.0, ge=10, le=3600)
    poll_interval: Seconds = Field(default=15.0, ge=1, le=600)
    #: Per HTTP request; a poll makes at most ``1 + retries`` attempts per query.
    timeout: Seconds = Field(default=3.0, gt=0, le=30)
    retries: int = Field(default=1, ge=0, le=5)
    #: Environment variable with a bearer token for the store (optional; never the token).
    token_env: str = "FLEET_VIEW_TOKEN"
    #: ``X-Scope-OrgID`` for Mimir / Cortex multi-tenancy (optional).
    tenant: str | None = None

    @model_validator(mode="after")
    def _check(self) -> FleetViewSettings:
        if not self.enabled:
            return self
        if not self.url or not self.url.startswith(("http://", "https://")):
            raise ValueError(
                f"fleetView.url must be an http(s) URL of a Prometheus query API when "
                f"fleetView.enabled is true (got {self.url!r})"
            )
        if not self.cluster:
            raise ValueError(
                "fleetView.cluster must name this cluster's `cluster` label value when "
                "fleetView.enabled is true"
            )
        for name, value in (("cluster", self.cluster), ("fleet", self.fleet)):
            if value is not None and not _LABEL_VALUE.match(value):
                raise ValueError(
                    f"fleetView.{name} {value!r}: 1-128 characters without quotes, "
                    "backslashes or newlines"
                )
        if self.max_age <= self.poll_interval:
            raise ValueError(
                "fleetView.maxAge must exceed fleetView.pollInterval "
                f"(got {self.max_age:g}s <= {self.poll_interval:g}s)"
            )
        return self

    def fleet_for(self, scale_set: str) -> str:
        """The fleet key of a scale set: the configured one, else its own name."""
        return self.fleet or scale_set
