"""Stand-ins for what a real cluster has and this machine lacks, so docs/quickstart.md can be
followed as written against the live simulated world (``python -m simulator.faces.live
--quickstart``; docs/e2e.md, "The quickstart against the simulated world").

The world writes small programs into ``<dir>/bin`` (:mod:`.install`); each runs
``python -m simulator.faces.standins --state <dir> <program> ...`` (:mod:`.__main__`):

- ``helm`` (:mod:`.helm`): ``get values`` answers the scale set's stock values, ``upgrade``
  keeps the merged values and does what ARC's controller would (:mod:`.controller`): the
  listener ServiceAccount with ARC's labels, a listener pod object, and the listener process
  with the ConfigMaps its pod template mounts written out as files;
- ``docker`` (:mod:`.tools`): builds and pushes nothing (the world runs the listener from this
  checkout);
- ``kubectl`` (:mod:`.tools`): ``port-forward`` checks the pod and port and forwards nothing
  (the listener already listens on loopback); every other subcommand runs the real kubectl.

Each says it is a stand-in on every run.
"""
