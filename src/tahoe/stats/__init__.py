"""Node statistics: counters, gauges and latency samples, the ``/statistics`` document.

Pure: ``samples`` (sample windows and Tahoe's percentile rules), ``registry``
(counters, samples and gauge producers, the JSON document), ``cpu`` (CPU usage
averages from samples), ``openmetrics`` (the text format). Shells: ``host``
(memory from ``/proc``, disk via ``statvfs``, share counts), ``monitor`` (the
CPU sampler on a clock), ``node`` (what a running node reports).
Facts: ``reference/frontends.md`` §5; our own keys are listed in ``docs/munin.md``.
"""
__all__ = ["samples", "registry", "cpu", "openmetrics", "host", "monitor", "node"]
