"""TLS for the HTTPS storage protocol: the server's certificate, the client's pinning.

The server presents its node certificate (``private/node.pem``, the one
Foolscap uses). The client checks no certificate authority: it accepts the
connection only if the certificate's signature is good and the SHA-256 of
its SubjectPublicKeyInfo is the hash in the server's NURL
(``docs/formats/http-storage.md``, "TLS"). Expired and self-signed
certificates are accepted, as Tahoe 1.20 accepts them.
"""
from __future__ import annotations

import hmac
from typing import Any

from OpenSSL import SSL
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from twisted.internet.ssl import CertificateOptions, PrivateCertificate
from zope.interface import implementer

from ..util.nurl import spki_hash_of

#: Verification results that do not stop a pinned certificate from being accepted.
_ACCEPTABLE = frozenset({
    SSL.X509VerificationCodes.OK,
    SSL.X509VerificationCodes.ERR_CERT_NOT_YET_VALID,
    SSL.X509VerificationCodes.ERR_CERT_HAS_EXPIRED,
    SSL.X509VerificationCodes.ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
    SSL.X509VerificationCodes.ERR_SELF_SIGNED_CERT_IN_CHAIN,
})


def server_options(certificate: PrivateCertificate) -> CertificateOptions:
    """The server side: present ``certificate`` (with its key); ask the client for none."""
    return CertificateOptions(privateKey=certificate.privateKey.original,
                              certificate=certificate.original)


def certificate_spki_hash(certificate: PrivateCertificate) -> str:
    """The SPKI hash of a Twisted certificate, as it goes into NURLs."""
    return spki_hash_of(certificate.original.to_cryptography())


@implementer(IOpenSSLClientConnectionCreator)
class PinnedCertificate:
    """Client connections that accept only the server key named by ``spki_hash``.

    :param spki_hash: 43 characters of URL-safe base64 (a NURL's user part).
    """

    def __init__(self, spki_hash: str) -> None:
        self.spki_hash = spki_hash.encode("ascii")
        self._context: SSL.Context | None = None

    def _verify(self, connection: Any, certificate: Any, errno: int, depth: int,
                preverify_ok: int) -> bool:
        if errno not in _ACCEPTABLE:
            return False
        found = spki_hash_of(certificate.to_cryptography()).encode("ascii")
        return hmac.compare_digest(found, self.spki_hash)

    def context(self) -> SSL.Context:
        """The (shared) OpenSSL context."""
        if self._context is None:
            context = CertificateOptions().getContext()
            context.set_verify(SSL.VERIFY_PEER, self._verify)
            self._context = context
        return self._context

    def clientConnectionForTLS(self, tlsProtocol: Any) -> SSL.Connection:  # noqa: N802, N803
        """A new OpenSSL connection for one TLS client connection."""
        return SSL.Connection(self.context(), None)
