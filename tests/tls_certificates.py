"""Certificate authorities and server certificates a test makes, as PEM files."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
_LIFETIME = dt.timedelta(days=3650)


@dataclass(frozen=True)
class ServerFiles:
    """What a server is configured with: its certificate, its key (PKCS #8), and the CA that
    signed it."""

    ca: Path
    cert: Path
    key: Path

    def key_and_chain(self) -> Path:
        """The key and then the certificate in one PEM file, as Kafka's PEM key store has them."""
        both = self.key.with_suffix(".pem")
        both.write_bytes(self.key.read_bytes() + self.cert.read_bytes())
        return both


class Authority:
    """A self-signed certificate authority that signs server certificates."""

    def __init__(self, folder: Path, name: str) -> None:
        self._folder = folder
        self._name = name
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = _name(f"Tidemark test CA {name}")
        self._certificate = (
            _builder(subject, subject, self._key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.ca_file = folder / f"{name}-ca.pem"
        self.ca_file.write_bytes(self._certificate.public_bytes(serialization.Encoding.PEM))

    def server(self, *names: str) -> ServerFiles:
        """A server certificate for ``names`` (host names or IP addresses), and its key."""
        key = ec.generate_private_key(ec.SECP256R1())
        alternatives: list[x509.GeneralName] = []
        for name in names:
            try:
                alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                alternatives.append(x509.DNSName(name))
        certificate = (
            _builder(_name(names[0]), self._certificate.subject, key.public_key())
            .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        stem = self._folder / f"{self._name}-{names[0]}"
        cert, private = stem.with_suffix(".crt"), stem.with_suffix(".key")
        cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        private.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return ServerFiles(self.ca_file, cert, private)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(_NOW)
        .not_valid_after(_NOW + _LIFETIME)
    )
