"""A write into the lake's storage before the first row: a wrong key or region is said at start
with its fix, not as a traceback from the first commit.

A REST catalog answers every metadata request itself, so a pipeline whose object store keys are
wrong opens, plans and shows its status; only writing a data file reaches the store. The check
writes (and deletes) an empty object where the table's data files go.
"""

from __future__ import annotations

import uuid
from typing import NoReturn

from pyiceberg.catalog import Catalog

from tidemark.errors import TerminalError, TransientError, first_line

#: how the S3 SDKs (pyarrow's AWS SDK for C++) name a refusal of the request's credentials
_REFUSALS = (
    "SIGNATURE_DOES_NOT_MATCH",
    "SignatureDoesNotMatch",
    "INVALID_ACCESS_KEY_ID",
    "InvalidAccessKeyId",
    "ACCESS_DENIED",
    "AccessDenied",
    "AuthorizationHeaderMalformed",
    "PermanentRedirect",
)


class StorageRefusedError(TerminalError):
    """The lake's storage refused the pipeline's credentials or region."""


class StorageUnreachableError(TransientError):
    """The lake's storage did not answer."""


def check_writable(catalog: Catalog, identifier: str) -> None:
    """Write an empty object beside ``identifier``'s data files and delete it; raises
    ``StorageRefusedError`` (the keys or region are wrong) or ``StorageUnreachableError``."""
    table = catalog.load_table(identifier)
    location = f"{table.location().rstrip('/')}/data/.tidemark-write-check-{uuid.uuid4().hex}"
    try:
        with table.io.new_output(location).create(overwrite=True) as stream:
            stream.write(b"")
        table.io.delete(location)
    except OSError as error:
        raise_refused_or_unreachable(error, location)


def raise_refused_or_unreachable(error: OSError, location: str) -> NoReturn:
    """Raise what ``refused_or_unreachable`` says: a refusal without its cause (nothing to
    wait for), an unreachable storage from ``error`` (``ingest.outages`` tells the service
    to wait for from it)."""
    said = refused_or_unreachable(error, location)
    if isinstance(said, StorageRefusedError):
        raise said from None
    raise said from error


def refused_or_unreachable(
    error: OSError, location: str
) -> StorageRefusedError | StorageUnreachableError:
    """What a failed write of ``location`` means: wrong credentials or ownership (terminal,
    with the fix), or a storage that did not answer (waited out)."""
    if isinstance(error, PermissionError):
        return StorageRefusedError(
            f"this user may not write {location} ({error.strerror}): run ingest as the user "
            "that owns the warehouse folder, or give that user write access to it"
        )
    reason = first_line(error)
    if any(refusal in reason for refusal in _REFUSALS):
        return StorageRefusedError(
            f"the lake's storage refused to write {location}: {reason}. Check the keys "
            "(catalog.properties.s3.access-key-id and s3.secret-access-key, or "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), catalog.properties.client.region "
            "and s3.endpoint"
        )
    return StorageUnreachableError(
        f"the lake's storage did not take a write of {location}: {reason}"
    )
