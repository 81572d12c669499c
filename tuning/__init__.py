"""Tune the listener to your own CI: history import, sweep, Pareto plot, recommendation."""
