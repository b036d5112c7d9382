"""Packaging for the ``tahoe`` distribution (import package ``tahoe``)."""
from setuptools import find_packages, setup

version: dict = {}
with open("src/tahoe/_version.py") as f:
    exec(f.read(), version)

setup(
    name="tahoe-lafs-py",
    version=version["__version__"],
    description="An erasure-coded, least-authority file store compatible with Tahoe-LAFS 1.20",
    package_dir={"": "src"},
    packages=find_packages("src"),
    # the gateway's stylesheet, script and icon (tahoe.web.assets serves them)
    package_data={"tahoe.web": ["static/*.css", "static/*.js", "static/*.svg"]},
    python_requires=">=3.11",
    install_requires=[
        "twisted[conch]",  # conch: the SFTP frontend
        "foolscap",
        "zfec",
        "pycryptodome",
        "attrs",
        "pyyaml",
        "cbor2",
        "httptools",
        "magic-wormhole",  # tahoe invite, create-client/create-node --join (imported only there)
        "defusedxml",  # the S3 gateway's request bodies (XML with safe defaults)
        "crc32c",  # the S3 gateway's x-amz-checksum-crc32c
    ],
    extras_require={
        "test": [
            "pytest",
            "pytest-twisted",
            "pytest-xdist",
            "hypothesis",
            "selenium",
            "magic-wormhole-mailbox-server",  # a local mailbox for the invite tests
            "boto3",  # S3 gateway tests and benchmark
            "awscli",  # the aws command, against the S3 gateway
        ],
        "bench": [
            "matplotlib",
        ],
    },
    entry_points={"console_scripts": ["tahoe = tahoe.cli.main:main",
                                    "grid-manager = tahoe.cli.grid_manager:main"]},
)
