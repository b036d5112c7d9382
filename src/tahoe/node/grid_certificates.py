"""A storage server's Grid Manager certificates, read for its announcement.

With ``[storage] grid_management = True``, Tahoe-LAFS 1.20 announces every
file named in ``[grid_manager_certificates]`` (name = file, relative to the
node directory) under the storage announcement's ``grid-manager-certificates``
key, each as the JSON object the file holds (``docs/formats/grid-manager.md``).
A missing or malformed file stops the node's start with a message, as in 1.20;
the certificates are not checked against any manager key here (1.20 does not
either: a client decides).
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence

from ..crypto.ed25519 import BadKeyString, VerifyingKey, parse_public_key
from ..grid_manager.certificate import parse_signed_certificate
from ..grid_manager.errors import BadCertificate
from .errors import BadValue

__all__ = ["load_grid_manager_certificates", "grid_manager_keys"]


def grid_manager_keys(pairs: Sequence[tuple[str, str]],
                      cfg_name: str = "tahoe.cfg") -> dict[str, VerifyingKey]:
    """``[grid_managers]`` (name = ``pub-v0-…``) as name → key.

    :raises BadValue: naming the entry, for a value that is not a public key.
    """
    keys = {}
    for name, text in pairs:
        try:
            keys[name] = parse_public_key(text.strip())
        except BadKeyString as error:
            raise BadValue(cfg_name, f"not a Grid Manager public key (pub-v0-…): {error}",
                           "grid_managers", name) from None
    return keys


def load_grid_manager_certificates(basedir: str, files: Sequence[tuple[str, str]],
                                   cfg_name: str = "tahoe.cfg") -> list[dict[str, str]]:
    """The certificates to announce, in ``[grid_manager_certificates]`` order.

    :param files: the section's ``(name, file)`` pairs.
    :raises BadValue: naming the entry, for a file that is missing, unreadable,
        not JSON or not a certificate (exactly ``certificate`` and ``signature``).
    """
    certificates = []
    for name, filename in files:
        path = os.path.abspath(os.path.join(basedir, os.path.expanduser(filename.strip())))
        try:
            with open(path, encoding="utf-8") as f:
                value = json.load(f)
            parse_signed_certificate(value)
        except FileNotFoundError:
            raise BadValue(cfg_name, f"Grid Manager certificate file '{path}' doesn't exist",
                           "grid_manager_certificates", name) from None
        except (OSError, UnicodeDecodeError, ValueError, BadCertificate) as error:
            raise BadValue(cfg_name, f"Grid Manager certificate file '{path}': {error}",
                           "grid_manager_certificates", name) from None
        certificates.append({"certificate": value["certificate"],
                             "signature": value["signature"]})
    return certificates
