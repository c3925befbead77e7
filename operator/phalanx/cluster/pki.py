"""Keys and certificates for a throwaway control plane (generated with `cryptography`).

One self-signed CA signs the API server's serving certificate (127.0.0.1, localhost and the
in-cluster service names), so clients verify TLS instead of skipping it. A separate RSA key
signs and verifies service-account tokens (TokenRequest works without a controller-manager).
The admin authenticates with a random bearer token in group system:masters.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

ADMIN_USER = "phalanx-admin"
ADMIN_GROUP = "system:masters"
SERVICE_IP = "10.96.0.1"
VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class Credentials:
    """Paths of what kube-apiserver and its clients need."""

    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_public_key: Path
    token_file: Path
    admin_token: str


def write_credentials(folder: Path) -> Credentials:
    """Create fresh credentials under `folder` (mode 0600 for secrets)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _authority("phalanx-local-ca")
    serving_key, serving_cert = _serving(
        ca_key, ca_cert, "kube-apiserver",
        dns=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
             "kubernetes.default.svc.cluster.local"),
        ips=("127.0.0.1", SERVICE_IP),
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = secrets.token_hex(24)
    credentials = Credentials(
        ca_cert=folder / "ca.crt",
        serving_cert=folder / "apiserver.crt",
        serving_key=folder / "apiserver.key",
        service_account_key=folder / "sa.key",
        service_account_public_key=folder / "sa.pub",
        token_file=folder / "tokens.csv",
        admin_token=token,
    )
    _write(credentials.ca_cert, ca_cert.public_bytes(serialization.Encoding.PEM))
    _write(credentials.serving_cert, serving_cert.public_bytes(serialization.Encoding.PEM))
    _write(credentials.serving_key, _private_pem(serving_key), secret=True)
    _write(credentials.service_account_key, _private_pem(sa_key), secret=True)
    _write(
        credentials.service_account_public_key,
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )
    _write(
        credentials.token_file,
        f'{token},{ADMIN_USER},{ADMIN_USER},"{ADMIN_GROUP}"\n'.encode(),
        secret=True,
    )
    return credentials


@dataclass(frozen=True)
class ServingPair:
    """A TLS server's certificate and key for 127.0.0.1, and the CA a client trusts it by."""

    ca_cert: Path
    cert: Path
    key: Path


def write_loopback_serving(
    folder: Path, name: str, not_after: datetime.datetime | None = None
) -> ServingPair:
    """A fresh CA and a serving certificate for 127.0.0.1 and localhost, in the file names
    controller-runtime's webhook server reads from its certificate folder (tls.crt, tls.key):
    kube-apiserver calls a webhook served on loopback and verifies it against `ca.crt`.
    `not_after` ends the serving certificate's validity then (in the past: an expired one,
    as a webhook whose certificate was never renewed serves)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _authority(f"{name}-local-ca")
    key, cert = _serving(
        ca_key, ca_cert, name, dns=("localhost",), ips=("127.0.0.1",), not_after=not_after
    )
    pair = ServingPair(ca_cert=folder / "ca.crt", cert=folder / "tls.crt", key=folder / "tls.key")
    _write(pair.ca_cert, ca_cert.public_bytes(serialization.Encoding.PEM))
    _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM))
    _write(pair.key, _private_pem(key), secret=True)
    return pair


def _authority(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _serving(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    common_name: str,
    dns: tuple[str, ...],
    ips: tuple[str, ...],
    not_after: datetime.datetime | None = None,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    if not_after is not None:
        now = not_after - VALIDITY
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.OID_SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _private_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes, secret: bool = False) -> None:
    path.write_bytes(data)
    if secret:
        path.chmod(0o600)
