"""Reading API objects into what the reconciler sees: the snapshot, and which events matter."""
