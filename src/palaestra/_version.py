"""palaestra's version, in a module of its own: what records it (the Monitor's manifests, the upload
client's User-Agent, the server's OpenAPI document) imports it without importing all of palaestra."""

__version__ = "0.1.0"
