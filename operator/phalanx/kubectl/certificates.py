"""Judging a webhook's serving certificate the way kube-apiserver will, without calling it.

The API server refuses a webhook whose certificate has expired, is not signed by a CA of
the configuration's caBundle, or is not for the host it dials; a webhook that fails open
(the pod webhook) then silently does nothing. Each of these is named with the numbers a
person needs to fix it. Pure: the certificate's bytes, the bundle and the clock come in.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID

DAY_SECONDS = 86400


@dataclass(frozen=True)
class CertificateVerdict:
    """`problems` empty: the API server would accept it. `days_left` to its notAfter."""

    subject: str
    not_after: datetime
    days_left: float
    problems: tuple[str, ...]


def judge_certificate(
    served: bytes, ca_bundle: bytes, host: str, now: datetime
) -> CertificateVerdict:
    """`served`: the leaf certificate, DER or PEM; `ca_bundle`: PEM (a caBundle decoded);
    `host`: the name or address the API server dials."""
    cert = _load(served)
    problems = [
        *_validity(cert, now),
        *_issuer(cert, ca_bundle),
        *_host(cert, host),
    ]
    not_after = cert.not_valid_after_utc
    return CertificateVerdict(
        subject=_common_name(cert.subject),
        not_after=not_after,
        days_left=(not_after - now).total_seconds() / DAY_SECONDS,
        problems=tuple(problems),
    )


def certificate_names(cert: x509.Certificate) -> list[str]:
    """The DNS names and addresses a certificate is for (its subjectAltName)."""
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    names: list[str] = list(sans.get_values_for_type(x509.DNSName))
    names += [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
    return names


def _load(data: bytes) -> x509.Certificate:
    if data.lstrip().startswith(b"-----BEGIN"):
        return x509.load_pem_x509_certificate(data)
    return x509.load_der_x509_certificate(data)


def _validity(cert: x509.Certificate, now: datetime) -> list[str]:
    after, before = cert.not_valid_after_utc, cert.not_valid_before_utc
    if now >= after:
        ago = (now - after).total_seconds() / DAY_SECONDS
        return [f"certificate expired {_days(ago)} ago (notAfter {_moment(after)})"]
    if now < before:
        return [f"certificate not valid yet (notBefore {_moment(before)})"]
    return []


def _issuer(cert: x509.Certificate, ca_bundle: bytes) -> list[str]:
    if not ca_bundle.strip():
        return ["caBundle is empty: the API server cannot verify any certificate"]
    try:
        authorities = x509.load_pem_x509_certificates(ca_bundle)
    except ValueError:
        return ["caBundle holds no PEM certificate"]
    for authority in authorities:
        try:
            cert.verify_directly_issued_by(authority)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return []
    held = ", ".join(_common_name(a.subject) for a in authorities)
    return [
        f"certificate not signed by the caBundle's CA (issuer {_common_name(cert.issuer)}; "
        f"caBundle holds {held})"
    ]


def _host(cert: x509.Certificate, host: str) -> list[str]:
    names = certificate_names(cert)
    if any(_matches(name, host) for name in names):
        return []
    listed = ", ".join(names) or "no subjectAltName"
    return [f"certificate is not for {host} (it is for {listed})"]


def _matches(name: str, host: str) -> bool:
    """An address matches itself only; a DNS name case-insensitively, `*.` one label."""
    try:
        return ipaddress.ip_address(host) == ipaddress.ip_address(name)
    except ValueError:
        pass
    name, host = name.lower().rstrip("."), host.lower().rstrip(".")
    if name.startswith("*."):
        first, _, rest = host.partition(".")
        return bool(first) and rest == name[2:]
    return name == host


def _common_name(name: x509.Name) -> str:
    values = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    return f"CN={values[0].value!s}" if values else name.rfc4514_string() or "(empty)"


def _days(days: float) -> str:
    if days < 1:
        return f"{days * 24:.1f} hours"
    return f"{days:.0f} days"


def _moment(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")
