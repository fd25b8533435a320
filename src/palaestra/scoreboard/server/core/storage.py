"""Blob stores: a local folder (``file:///path`` or a plain path) or S3 (``s3://bucket/prefix``).

Both store immutable blobs under keys such as ``files/file_abc/3f2a.../upload``. Writes are atomic:
a reader sees the whole blob or none. The S3 store hands out real presigned POST forms for uploads;
the file store has none, and the server signs its own upload URLs instead (see ``uploads.py``).
The S3 endpoint comes from ``--s3-endpoint-url``, ``PALAESTRA_S3_ENDPOINT_URL`` or the usual AWS
variables (``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``); credentials from the AWS environment.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlparse

from palaestra.durable import write_atomically
from palaestra.errors import ConfigurationError


class BlobNotFound(LookupError):
    """No blob under that key."""


class BlobDamaged(Exception):
    """A blob whose bytes no longer match the sha256 recorded when it was stored."""

    def __init__(self, key: str, expected: str, found: str) -> None:
        super().__init__(
            f"The stored blob {key} does not match the sha256 recorded when it was stored "
            f"({expected[:16]}..., now {found[:16]}...): it was changed or damaged in the store."
        )
        self.key = key


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_key(key: str) -> str:
    """Refuse keys that could escape the store (absolute, ``..``, backslashes, empty parts)."""
    parts = key.split("/")
    if not key or key.startswith("/") or "\\" in key or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"invalid blob key {key!r}")
    return key


@dataclass(frozen=True)
class BlobInfo:
    """A blob as a listing shows it: its key, size and last change (seconds since the epoch)."""

    key: str
    size: int
    modified: float


#: Keys under this prefix are the health probes' (``api.health``), never a user's data.
HEALTH_PREFIX = ".health/"


class BlobStore(ABC):
    """Where uploads, unpacked videos and stored episode batches live."""

    url: str

    @abstractmethod
    def put_file(self, key: str, source: str | os.PathLike[str]) -> None:
        """Store the file at ``source`` under ``key`` (atomically)."""

    @abstractmethod
    def put_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (atomically)."""

    @abstractmethod
    def get_bytes(self, key: str) -> bytes:
        """The blob's bytes; :class:`BlobNotFound` if there is none."""

    def get_verified(self, key: str, sha256: str | None) -> bytes:
        """The blob's bytes, checked against the ``sha256`` recorded when it was stored (``None``:
        none was recorded); :class:`BlobDamaged` if they differ, :class:`BlobNotFound` if it is gone."""
        data = self.get_bytes(key)
        if sha256 is not None and (found := sha256_of(data)) != sha256:
            raise BlobDamaged(key, sha256, found)
        return data

    @abstractmethod
    def download(self, key: str, dest: str | os.PathLike[str]) -> None:
        """Copy the blob to the local file ``dest``."""

    @abstractmethod
    def open(self, key: str) -> BinaryIO:
        """A readable binary stream of the blob."""

    @abstractmethod
    def size(self, key: str) -> int | None:
        """The blob's size in bytes, or ``None`` if there is no such blob."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the blob (no error if it is not there)."""

    @abstractmethod
    def list_blobs(self) -> Iterator[BlobInfo]:
        """Every blob in the store (the health probes' excepted), in no particular order."""

    def list_temporary(self) -> Iterator[BlobInfo]:
        """Temporary files of writes in progress or killed (key: the name to pass to
        :meth:`delete_temporary`); stores whose writes are atomic by themselves (S3) have none."""
        return iter(())

    def delete_temporary(self, name: str) -> None:  # noqa: B027  (optional hook)
        """Remove a temporary file listed by :meth:`list_temporary`."""

    def local_path(self, key: str) -> Path | None:
        """A local path of the blob, for stores that have one (the file store)."""
        return None

    def download_url(self, key: str, expires_in: int = 3600, content_type: str | None = None) -> str | None:
        """A URL a browser can GET the blob from directly (S3), or ``None``."""
        return None

    def presigned_post(
        self, key: str, max_bytes: int, expires_in: int, content_type: str
    ) -> tuple[str, dict[str, str]] | None:
        """``(post_url, post_fields)`` of a browser-style upload form, or ``None`` if the store has none."""
        return None

    def check(self) -> None:  # noqa: B027  (optional hook)
        """Raise :class:`ConfigurationError` if the store cannot be used."""


class FileStore(BlobStore):
    """Blobs as files under a root folder; writes go to a temporary file, then ``os.replace``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().absolute()
        self.url = self.root.as_uri()
        self._tmp = self.root / ".tmp"
        self._made: set[Path] = set()

    def check(self) -> None:
        try:
            self._tmp.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigurationError(f"Cannot create the blob folder {self.root}: {e}") from None
        if not os.access(self.root, os.W_OK):
            raise ConfigurationError(
                f"The blob folder {self.root} is not writable; pick another with --storage"
            )

    def path(self, key: str) -> Path:
        return self.root / check_key(key)

    def _mkdir(self, path: Path) -> None:
        if path not in self._made:
            path.mkdir(parents=True, exist_ok=True)
            if len(self._made) > 10_000:
                self._made.clear()
            self._made.add(path)

    def _tmp_file(self) -> Path:
        self._mkdir(self._tmp)
        return self._tmp / uuid.uuid4().hex

    def put_file(self, key: str, source: str | os.PathLike[str]) -> None:
        def copy(f: BinaryIO) -> None:
            with open(source, "rb") as src:
                shutil.copyfileobj(src, f, 1024 * 1024)

        self._put(key, copy)

    def put_bytes(self, key: str, data: bytes) -> None:
        self._put(key, lambda f: f.write(data))

    def _put(self, key: str, write: Callable[[BinaryIO], object]) -> None:
        """Written to ``.tmp/``, fsynced, renamed into place: a failed write (a full disk) leaves no
        temporary file, and a stored blob survives a power loss."""
        target = self.path(key)
        self._mkdir(target.parent)
        write_atomically(target, write, tmp=self._tmp_file())

    def get_bytes(self, key: str) -> bytes:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            raise BlobNotFound(key) from None

    def download(self, key: str, dest: str | os.PathLike[str]) -> None:
        try:
            shutil.copyfile(self.path(key), dest)
        except FileNotFoundError:
            raise BlobNotFound(key) from None

    def open(self, key: str) -> BinaryIO:
        try:
            return open(self.path(key), "rb")
        except FileNotFoundError:
            raise BlobNotFound(key) from None

    def size(self, key: str) -> int | None:
        try:
            return self.path(key).stat().st_size
        except FileNotFoundError:
            return None

    def delete(self, key: str) -> None:
        try:
            self.path(key).unlink()
        except FileNotFoundError:
            pass

    def local_path(self, key: str) -> Path | None:
        return self.path(key)

    def list_blobs(self) -> Iterator[BlobInfo]:
        skipped = {self._tmp, self.root / HEALTH_PREFIX.rstrip("/")}
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if Path(folder, d) not in skipped]
            for name in names:
                info = _file_info(Path(folder, name))
                if info is not None:
                    yield BlobInfo(Path(folder, name).relative_to(self.root).as_posix(), *info)

    def list_temporary(self) -> Iterator[BlobInfo]:
        if self._tmp.is_dir():
            for path in self._tmp.iterdir():
                info = _file_info(path)
                if info is not None:
                    yield BlobInfo(path.name, *info)

    def delete_temporary(self, name: str) -> None:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"invalid temporary file name {name!r}")
        (self._tmp / name).unlink(missing_ok=True)


def _file_info(path: Path) -> tuple[int, float] | None:
    """``(size, modified)`` of a file, or None if it is gone or not a regular file."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    return (st.st_size, st.st_mtime) if stat.S_ISREG(st.st_mode) else None


class S3Store(BlobStore):
    """Blobs in an S3 bucket (any S3-compatible endpoint) under a key prefix."""

    def __init__(self, bucket: str, prefix: str = "", endpoint_url: str | None = None) -> None:
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise ConfigurationError("The S3 store needs boto3: pip install 'palaestra[s3]'") from None
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = endpoint_url
        self.url = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self.client: Any = boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            config=Config(signature_version="s3v4", max_pool_connections=50, s3={"addressing_style": "path"}),
        )

    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def check(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except Exception as e:
            where = f" at {self.endpoint_url}" if self.endpoint_url else ""
            raise ConfigurationError(
                f"Cannot use S3 bucket {self.bucket!r}{where}: {e}. Create the bucket, check the AWS "
                "credentials, and give a non-AWS endpoint with --s3-endpoint-url or "
                "PALAESTRA_S3_ENDPOINT_URL."
            ) from None

    def put_file(self, key: str, source: str | os.PathLike[str]) -> None:
        self.client.upload_file(os.fspath(source), self.bucket, self._key(key))

    def put_bytes(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def _missing(self, e: Exception) -> bool:
        code = str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))
        return code in ("404", "NoSuchKey", "NotFound")

    def get_bytes(self, key: str) -> bytes:
        try:
            body: bytes = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()
            return body
        except Exception as e:
            if self._missing(e):
                raise BlobNotFound(key) from None
            raise

    def download(self, key: str, dest: str | os.PathLike[str]) -> None:
        try:
            self.client.download_file(self.bucket, self._key(key), os.fspath(dest))
        except Exception as e:
            if self._missing(e):
                raise BlobNotFound(key) from None
            raise

    def open(self, key: str) -> BinaryIO:
        tmp = tempfile.TemporaryFile()  # noqa: SIM115  (returned to the caller)
        try:
            self.client.download_fileobj(self.bucket, self._key(key), tmp)
        except Exception as e:
            tmp.close()
            if self._missing(e):
                raise BlobNotFound(key) from None
            raise
        tmp.seek(0)
        return tmp

    def size(self, key: str) -> int | None:
        try:
            return int(self.client.head_object(Bucket=self.bucket, Key=self._key(key))["ContentLength"])
        except Exception as e:
            if self._missing(e):
                return None
            raise

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def list_blobs(self) -> Iterator[BlobInfo]:
        start = f"{self.prefix}/" if self.prefix else ""
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
            for item in page.get("Contents", []):
                key = str(item["Key"])[len(start) :]
                if key and not key.startswith(HEALTH_PREFIX):
                    yield BlobInfo(key, int(item["Size"]), item["LastModified"].timestamp())

    def download_url(self, key: str, expires_in: int = 3600, content_type: str | None = None) -> str | None:
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": self._key(key)}
        if content_type:
            params["ResponseContentType"] = content_type
        url: str = self.client.generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in)
        return url

    def presigned_post(
        self, key: str, max_bytes: int, expires_in: int, content_type: str
    ) -> tuple[str, dict[str, str]] | None:
        post = self.client.generate_presigned_post(
            Bucket=self.bucket,
            Key=self._key(key),
            Fields={"success_action_status": "204"},
            Conditions=[{"success_action_status": "204"}, ["content-length-range", 0, max_bytes]],
            ExpiresIn=expires_in,
        )
        return str(post["url"]), {k: str(v) for k, v in post["fields"].items()}


def open_store(url: str, s3_endpoint_url: str | None = None) -> BlobStore:
    """The store named by ``url``: ``s3://bucket/prefix``, ``file:///path`` or a plain path."""
    parsed = urlparse(url)
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ConfigurationError(f"Storage URL {url!r} names no bucket; use s3://BUCKET/PREFIX")
        return S3Store(parsed.netloc, parsed.path, endpoint_url=s3_endpoint_url)
    if parsed.scheme == "file":
        return FileStore(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:  # not a Windows drive letter
        raise ConfigurationError(
            f"Unsupported storage URL {url!r}: use a folder path, file:///PATH or s3://BUCKET/PREFIX"
        )
    return FileStore(url)
