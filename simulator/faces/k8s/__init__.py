"""The simulated world's Kubernetes-API HTTP face (see :mod:`.server` for what it serves).

Usage::

    face = K8sFace(store).start()   # 127.0.0.1, ephemeral port
    api = ApiClient(Configuration(host=face.url))
    ...
    face.stop()
"""

from simulator.faces.k8s.errors import ApiError
from simulator.faces.k8s.server import K8sFace

__all__ = ["ApiError", "K8sFace"]
