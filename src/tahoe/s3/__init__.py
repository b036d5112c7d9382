"""The S3-compatible gateway (issue 28): S3 tools store into the grid through it.

Pure cores: :mod:`.errors` (S3 error codes), :mod:`.sigv4` (Signature Version 4;
Version 2 in :mod:`.sigv2`, only when allowed), :mod:`.chunked` (``aws-chunked``
bodies), :mod:`.checksums` (Content-MD5 and ``x-amz-checksum-*``), :mod:`.xmlio`
(request and response bodies), :mod:`.keys` (bucket names and object keys as
directory paths), :mod:`.accounts` (the ``private/s3-accounts`` file). Shells:
:mod:`.service`, :mod:`.server`, :mod:`.store`, :mod:`.multipart`.
``docs/s3.md`` describes the gateway.
"""
