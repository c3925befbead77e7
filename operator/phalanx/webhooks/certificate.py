"""The self-signed certificate of Kopf's development option, made with `cryptography`.

Kopf's `WebhookServer` makes one when it is given no certificate: a single certificate,
its own CA, for the names the API server calls it by. Kopf builds it with the optional
certbuilder/oscrypto packages; Phalanx has `cryptography` already (the local cluster's
PKI, `phalanx.cluster.pki`), so it builds the same certificate with that instead.
"""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALIDITY = datetime.timedelta(days=365)  # the operator makes a new one each start


def self_signed(
    hostnames: list[str], validity: datetime.timedelta = VALIDITY
) -> tuple[bytes, bytes]:
    """A serving certificate for `hostnames` (names and IP addresses; 0.0.0.0 and the
    like are left out), signed by itself, and its key: both PEM."""
    ips, dns = [], []
    for host in dict.fromkeys(h for h in hostnames if h):
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            dns.append(host)
            continue
        if not address.is_unspecified:
            ips.append(str(address))
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (dns or ips)[0])])
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.OID_SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), private
