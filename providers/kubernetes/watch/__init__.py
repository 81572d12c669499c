"""The watch-fed cache: informers list and watch, objects are slimmed and kept (client-go style)."""
