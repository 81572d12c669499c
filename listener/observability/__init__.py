"""What the listener shows of itself: Prometheus metrics (``metrics/``), the HTTP server
with its probes and pair table (``http.py``) and structured, redacted logs (``logging.py``)."""
