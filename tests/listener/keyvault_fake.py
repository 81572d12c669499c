"""A loopback fake of Entra ID (token endpoint) and Azure Key Vault (GET secret), over TLS.

Entra ID: ``GET /{tenant}/v2.0/.well-known/openid-configuration`` and ``POST
/{tenant}/oauth2/v2.0/token`` (client credentials with a certificate: the ``client_assertion``
JWT is verified against the client certificate's public key, as Entra ID does). Key Vault:
``GET /secrets/{name}/{version}?api-version=...``; without a bearer token it answers 401 with
the ``WWW-Authenticate`` challenge that tells the SDK which tenant and resource to ask for.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from tests.providers.demand.loopback import Answer, Request, json_answer


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _cert(
    subject: str,
    key: rsa.RSAPrivateKey,
    issuer: tuple[str, rsa.RSAPrivateKey] | None = None,
    *,
    ca: bool = False,
    ip: str | None = None,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    issuer_name, issuer_key = issuer or (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ip:
        san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))])
        builder = builder.add_extension(san, critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass
class TlsFiles:
    ca: Path
    server_cert: Path
    server_key: Path
    client_pem: Path  # the application's certificate + private key (certificate_path)
    client_cert: x509.Certificate


def make_tls_files(directory: Path) -> TlsFiles:
    ca_key, server_key, client_key = _key(), _key(), _key()
    ca = _cert("fake-ca", ca_key, ca=True)
    server = _cert("127.0.0.1", server_key, ("fake-ca", ca_key), ip="127.0.0.1")
    client = _cert("arc-listener-app", client_key)
    files = TlsFiles(
        directory / "ca.pem",
        directory / "server.pem",
        directory / "server.key",
        directory / "client.pem",
        client,
    )
    files.ca.write_bytes(_pem(ca))
    files.server_cert.write_bytes(_pem(server))
    files.server_key.write_bytes(_key_pem(server_key))
    files.client_pem.write_bytes(_key_pem(client_key) + _pem(client))
    return files


@dataclass
class KeyVaultFake:
    tenant: str
    client_id: str
    client_cert: x509.Certificate
    secrets: dict[str, str] = field(default_factory=dict)
    base_url: str = ""  # set once the server listens
    tokens_issued: list[str] = field(default_factory=list)
    refused_assertions: int = 0

    def __call__(self, request: Request) -> Answer:
        url = urlsplit(request.path)
        parts = [p for p in url.path.split("/") if p]
        if parts[-3:] == ["v2.0", ".well-known", "openid-configuration"]:
            return json_answer(200, self._discovery(parts[0]))
        if parts[-3:] == ["oauth2", "v2.0", "token"] and request.method == "POST":
            return self._token(request)
        if parts and parts[0] == "secrets":
            return self._secret(request, parts[1])
        return json_answer(404, {"error": "not found"})

    def _discovery(self, tenant: str) -> dict[str, str]:
        base = f"{self.base_url}/{tenant}"
        return {
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "issuer": f"{base}/v2.0",
            "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
        }

    def _token(self, request: Request) -> Answer:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        assertion = form.get("client_assertion", "")
        try:
            claims = jwt.decode(
                assertion,
                self.client_cert.public_key(),  # type: ignore[arg-type]
                algorithms=["RS256", "PS256"],
                audience=f"{self.base_url}/{self.tenant}/oauth2/v2.0/token",
                options={"verify_aud": False},
            )
        except jwt.PyJWTError:
            self.refused_assertions += 1
            return json_answer(401, {"error": "invalid_client"})
        if claims.get("iss") != self.client_id or form.get("client_id") != self.client_id:
            self.refused_assertions += 1
            return json_answer(401, {"error": "invalid_client"})
        token = secrets.token_urlsafe(24)
        self.tokens_issued.append(token)
        return json_answer(200, {"token_type": "Bearer", "expires_in": 3600, "access_token": token})

    def _secret(self, request: Request, name: str) -> Answer:
        auth = request.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or auth[7:] not in self.tokens_issued:
            challenge = (
                f'Bearer authorization="{self.base_url}/{self.tenant}", resource="{self.base_url}"'
            )
            return json_answer(
                401,
                {
                    "error": {
                        "code": "Unauthorized",
                        "message": "AKV10000: Request is missing a Bearer token.",
                    }
                },
                **{"WWW-Authenticate": challenge},
            )
        if name not in self.secrets:
            return json_answer(
                404,
                {
                    "error": {
                        "code": "SecretNotFound",
                        "message": f"A secret with (name/id) {name} was not found.",
                    }
                },
            )
        return json_answer(
            200,
            {
                "value": self.secrets[name],
                "id": f"{self.base_url}/secrets/{name}/0123456789abcdef",
                "attributes": {"enabled": True},
            },
        )


def config_json(value: dict[str, object]) -> str:
    return json.dumps(value)
