"""Test keys for App authentication."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def generate_rsa_key_pem() -> tuple[str, str]:
    """A fresh RSA-2048 key pair as (private PKCS#8 PEM, public PEM), for App-auth tests."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public
