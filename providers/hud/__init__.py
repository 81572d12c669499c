"""Queued-job demand from PyTorch's HUD (best effort, fails open): see :mod:`.client`."""
