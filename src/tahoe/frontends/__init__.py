"""Frontends of a client node besides the web gateway: the SFTP server and its accounts."""
__all__ = ["accounts", "sftp_paths", "sftp_files", "sftp_server", "sftp_service"]
