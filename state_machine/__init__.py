"""The placeholder-pair state machine: states, the transition table, records and their store.

Nothing in this package does I/O. The table in :mod:`state_machine.table` is the single
source of truth for code, docs (``docs/state-machine.md``) and tests.
"""
