"""palaestra's optional extras: which extra brings which module, and the message when one is missing.

``pip install palaestra`` is the core: the Monitor, ``load_results``, ``palaestra results``, the
upload client and the built-in agents. Everything else is an extra (``pyproject.toml`` lists them):

=============  =====================================================================
``ffmpeg``     an ffmpeg binary for videos (imageio-ffmpeg), where the system has no ``ffmpeg``
``board``      Go and Hex (OpenSpiel's rules engine)
``server``     the scoreboard service and ``palaestra demo`` (FastAPI, SQLAlchemy, ...)
``postgres``   the scoreboard on PostgreSQL; ``s3``: its blobs on S3
``plot``       ``palaestra results --plot`` (matplotlib)
``atari``      ale-py's Atari environments
``mujoco``     Gymnasium's MuJoCo environments; ``box2d``: its Box2D environments
``pettingzoo`` the two-player board games as PettingZoo environments
``agents``     agent artifacts: ONNX models checked and evaluated in a sandbox (onnx, onnxruntime, pyseccomp)
``ray``        benchmark runs on a Ray cluster
``envpool``    EnvPool's C++ vector envs (the vector Monitor reads their task ids)
``tensorboard`` ``palaestra import tensorboard`` (TensorBoard's reader of event files)
``export``     the scoreboard's results as parquet (pyarrow)
``all``        all of the above but ``ray`` and ``envpool``
=============  =====================================================================

Importing palaestra never needs an extra; a feature used without its extra raises
:class:`palaestra.errors.DependencyNotInstalled` naming the extra (:func:`require`), and the
``palaestra`` command turns a stray ``ModuleNotFoundError`` of an extra's module into the same one line
(:func:`missing_extra_message`).
"""

from __future__ import annotations

import importlib.util

from palaestra.errors import DependencyNotInstalled

__all__ = ["EXTRA_MODULES", "install_command", "missing_extra_message", "require"]

#: extra -> the top-level modules it brings that palaestra imports (the first ones are checked by
#: :func:`require`; the rest only name the extra when they are found missing)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "ffmpeg": ("imageio_ffmpeg",),
    "board": ("pyspiel",),
    "server": ("fastapi", "uvicorn", "sqlalchemy", "alembic", "jinja2", "multipart", "argon2"),
    "postgres": ("psycopg",),
    "s3": ("boto3", "botocore"),
    "plot": ("matplotlib",),
    "atari": ("ale_py",),
    "mujoco": ("mujoco",),
    "box2d": ("Box2D",),
    "pettingzoo": ("pettingzoo",),
    "agents": ("onnx", "onnxruntime", "pyseccomp"),
    "ray": ("ray",),
    "envpool": ("envpool",),
    "tensorboard": ("tensorboard",),
    "export": ("pyarrow",),
}

_EXTRA_OF_MODULE = {module: extra for extra, modules in EXTRA_MODULES.items() for module in modules}


def install_command(extra: str) -> str:
    """``pip install 'palaestra[EXTRA]'``."""
    return f"pip install 'palaestra[{extra}]'"


def require(extra: str, feature: str) -> None:
    """Raise :class:`DependencyNotInstalled` unless the modules of ``extra`` are installed.

    ``feature`` names what needs them, as the start of a sentence: ``"The scoreboard server"``.
    """
    missing = [m for m in EXTRA_MODULES[extra] if importlib.util.find_spec(m) is None]
    if missing:
        raise DependencyNotInstalled(
            f"{feature} needs the {extra!r} extra, which is not installed (no module {missing[0]!r}): "
            f"{install_command(extra)}"
        )


def missing_extra_message(exc: ModuleNotFoundError) -> str | None:
    """For a ``ModuleNotFoundError`` of a module that an extra brings: which extra to install."""
    top = (exc.name or "").split(".")[0]
    extra = _EXTRA_OF_MODULE.get(top)
    if extra is None:
        return None
    return f"This needs the {extra!r} extra, which is not installed (no module {top!r}): {install_command(extra)}"
