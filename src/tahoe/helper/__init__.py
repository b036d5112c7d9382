"""The upload helper (``docs/helper.md``, ``docs/formats/helper.md``): the helper service a
node runs with ``[helper] enabled``, and a client's uploads through ``[client] helper.furl``."""

__all__: list[str] = []
