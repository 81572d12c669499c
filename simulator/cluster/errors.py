"""Typed errors of the simulated cluster's public API."""

from __future__ import annotations


class ClusterError(Exception):
    """Base of every error the simulated cluster raises to its callers."""


class PodNotFound(ClusterError):
    """A pod named in a call does not exist in the store."""


class NodeNotFound(ClusterError):
    """A node named in a call does not exist in the store."""


class PodStateError(ClusterError):
    """A call does not make sense for the pod's current state (e.g. finishing a pod that never
    started)."""
