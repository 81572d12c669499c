"""One scale set's runtime, shared by the listener process and the simulator.

Both drivers of the scale-set controller (listener/process/reconcile_loop.py with asyncio,
simulator/driver/capacity_aware.py in virtual time) build a scale set here and carry its
outputs out here, so they cannot drift apart:

- scaleset/ports.py: what a scale set is handed and what it drives (snapshots, ARC's scaler,
  the gate);
- scaleset/demand.py: the combined demand its decisions read;
- scaleset/assembly.py: :func:`~scaleset.assembly.assemble_scale_set`, the controller and its
  subscribers from the settings and the ports;
- scaleset/carry_out.py: :func:`~scaleset.carry_out.carry_out`, the one way an ``Output``
  leaves a step.

Imports only reconciler/ and providers/: the process wiring (listener/process/) and the
simulated world (simulator/) import this, never the other way round.
"""
