"""The simulated world's Kubernetes-API HTTP face (see :mod:`.server` for what it serves).

Usage::

    face = K8sFace(store).start()   # 127.0.0.1, ephemeral port
    api = ApiClient(Configuration(host=face.url))
    ...
    face.stop()
"""

from providers.simulated.k8s_face.errors import ApiError
from providers.simulated.k8s_face.server import K8sFace

__all__ = ["ApiError", "K8sFace"]
