"""The errors of the S3 gateway, as S3 names them.

Every refusal of the gateway is an :class:`S3Error` carrying an S3 error code;
the shell turns it into S3's XML error body (:func:`tahoe.s3.xmlio.error_body`)
and HTTP status at one boundary. :data:`ERRORS` is the table of the codes we
raise, with the status and default message that Amazon S3 uses for each (from
the S3 API reference, "Error responses"); a code missing from the table is a
programming error.
"""
from __future__ import annotations

__all__ = ["ERRORS", "S3Error"]

#: S3 error code -> (HTTP status, default message).
ERRORS: dict[str, tuple[int, str]] = {
    "AccessDenied": (403, "Access Denied"),
    "AuthorizationHeaderMalformed": (400, "The authorization header is malformed."),
    "AuthorizationQueryParametersError": (400, "The query parameters that provide"
                                               " authentication information are not valid."),
    "BadDigest": (400, "The Content-MD5 you specified did not match what we received."),
    "BucketAlreadyExists": (409, "The requested bucket name is not available."),
    "BucketAlreadyOwnedByYou": (409, "Your previous request to create the named bucket"
                                     " succeeded and you already own it."),
    "BucketNotEmpty": (409, "The bucket you tried to delete is not empty"),
    "EntityTooLarge": (400, "Your proposed upload exceeds the maximum allowed size"),
    "EntityTooSmall": (400, "Your proposed upload is smaller than the minimum allowed"
                            " object size."),
    "ExpiredToken": (400, "The provided token has expired."),
    "IncompleteBody": (400, "You did not provide the number of bytes specified by the"
                            " Content-Length HTTP header."),
    "InternalError": (500, "We encountered an internal error. Please try again."),
    "InvalidAccessKeyId": (403, "The AWS Access Key Id you provided does not exist in"
                                " our records."),
    "InvalidArgument": (400, "Invalid Argument"),
    "InvalidBucketName": (400, "The specified bucket is not valid."),
    "InvalidChunkSizeError": (403, "Only the last chunk is allowed to have a size less"
                                   " than 8192 bytes"),
    "InvalidDigest": (400, "The Content-MD5 you specified is not valid."),
    "InvalidPart": (400, "One or more of the specified parts could not be found. The part"
                         " might not have been uploaded, or the specified entity tag might"
                         " not have matched the part's entity tag."),
    "InvalidPartOrder": (400, "The list of parts was not in ascending order. The parts"
                              " list must be specified in order by part number."),
    "InvalidRange": (416, "The requested range is not satisfiable"),
    "InvalidRequest": (400, "Invalid Request"),
    "IllegalLocationConstraintException": (400, "The specified location constraint is"
                                                " not valid for this endpoint."),
    "InvalidLocationConstraint": (400, "The specified location constraint is not valid."),
    "KeyTooLongError": (400, "Your key is too long"),
    "MalformedXML": (400, "The XML you provided was not well-formed or did not validate"
                          " against our published schema"),
    "MalformedTrailerError": (400, "The request contained trailing data that was not"
                                   " well-formed or did not conform to our published"
                                   " schema."),
    "MaxMessageLengthExceeded": (400, "Your request was too big."),
    "MetadataTooLarge": (400, "Your metadata headers exceed the maximum allowed metadata"
                              " size"),
    "MethodNotAllowed": (405, "The specified method is not allowed against this resource."),
    "MissingContentLength": (411, "You must provide the Content-Length HTTP header."),
    "MissingSecurityHeader": (400, "Your request is missing a required header."),
    "MissingRequestBodyError": (400, "Request Body is empty"),
    "NoSuchBucket": (404, "The specified bucket does not exist"),
    "NoSuchKey": (404, "The specified key does not exist."),
    "NoSuchUpload": (404, "The specified multipart upload does not exist. The upload ID"
                          " might be invalid, or the multipart upload might have been"
                          " aborted or completed."),
    "NotImplemented": (501, "A header you provided implies functionality that is not"
                            " implemented"),
    "NotModified": (304, "Not Modified"),
    "PreconditionFailed": (412, "At least one of the pre-conditions you specified did"
                                " not hold"),
    "RequestHeaderSectionTooLarge": (400, "Your request header section exceeds the"
                                          " maximum allowed size."),
    "RequestTimeTooSkewed": (403, "The difference between the request time and the"
                                  " current time is too large."),
    "ServiceUnavailable": (503, "Please reduce your request rate."),
    "SignatureDoesNotMatch": (403, "The request signature we calculated does not match"
                                   " the signature you provided. Check your key and"
                                   " signing method."),
    "SlowDown": (503, "Please reduce your request rate."),
    "XAmzContentSHA256Mismatch": (400, "The provided 'x-amz-content-sha256' header does"
                                       " not match what was computed."),
}


class S3Error(Exception):
    """A request the gateway refuses, with the S3 error code a client expects.

    :ivar code: S3's error code, a key of :data:`ERRORS` (e.g. ``"NoSuchKey"``).
    :ivar status: the HTTP status of the answer.
    :ivar message: the human-readable ``Message`` element.
    :ivar extra: further elements of the error body, in order (``Key``,
        ``BucketName``, ``RequestTime``, ...); never a secret or a cap.
    """

    def __init__(self, code: str, message: str | None = None, status: int | None = None,
                 **extra: str) -> None:
        """:raises KeyError: for a code not in :data:`ERRORS` (a programming error)."""
        default_status, default_message = ERRORS[code]
        self.code = code
        self.status = default_status if status is None else status
        self.message = default_message if message is None else message
        self.extra: dict[str, str] = {name: str(value) for name, value in extra.items()}
        super().__init__(code, self.message)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
