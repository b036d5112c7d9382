"""HTTP/1.1 on the wire, lean: the server and client protocols of the HTTPS storage protocol.

``server`` takes pipelined requests in order and streams bodies both ways;
``client`` pipelines requests on persistent connections; ``tls`` holds the
certificate options of both sides (the client pins the server's key by its
SPKI hash). Request and response parsing is ``httptools`` (llhttp).
"""

__all__ = ["client", "server", "tcp", "tls"]
