"""The API writes: placeholder pods' and the ARC scaler's, each off the reconcile path."""
