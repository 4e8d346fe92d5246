"""A write into the lake's storage before the first row: a wrong key or region is said at start
with its fix, not as a traceback from the first commit.

A REST catalog answers every metadata request itself, so a pipeline whose object store keys are
wrong opens, plans and shows its status; only writing a data file reaches the store. The check
writes (and deletes) an empty object where the table's data files go.
"""

from __future__ import annotations

import uuid

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
    except PermissionError as error:
        raise StorageRefusedError(
            f"this user may not write {location} ({error.strerror}): run ingest as the user "
            "that owns the warehouse folder, or give that user write access to it"
        ) from None
    except OSError as error:
        reason = first_line(error)
        if any(refusal in reason for refusal in _REFUSALS):
            raise StorageRefusedError(
                f"the lake's storage refused to write {location}: {reason}. Check the keys "
                "(catalog.properties.s3.access-key-id and s3.secret-access-key, or "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), catalog.properties.client.region "
                "and s3.endpoint"
            ) from None
        # from the error: ``ingest.outages`` tells from it which service to wait for
        raise StorageUnreachableError(
            f"the lake's storage did not take a write of {location}: {reason}"
        ) from error
