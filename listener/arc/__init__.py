"""ARC's own listener, spoken as ARC speaks it (docs/protocol.md).

ARC's listener config (``config.py``) and release (``version.py``), the long-poll loop over the
message session (``message_loop.py``), the advertised capacity and when a change cuts the poll
(``gate.py``, ``poll_cut.py``), the scaler's EphemeralRunnerSet patches (``scaler.py``) and the
statistics read by session refresh while blind (``statistics_refresh.py``).
"""
