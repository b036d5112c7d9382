"""The version of this package, kept in one place."""
__version__ = "0.1.0"
#: What this software calls itself in announcements and ``get_version`` answers.
APPLICATION_VERSION = f"tahoe-lafs-py/{__version__}"
