"""The ``run`` command's engine options: where the corpus is encoded, and Ray's settings."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from mmbright_core.errors import InputError

if TYPE_CHECKING:
    from mmbright_core.retrieval.base import Retriever


def add_engine_arguments(parser: argparse.ArgumentParser | Any) -> None:
    """Add ``--engine``, ``--address``, ``--workers`` and ``--gpus-per-worker`` to a parser."""
    from mmbright_core.retrieval.runner.engines import ENGINES

    parser.add_argument(
        "--engine",
        default="local",
        choices=ENGINES,
        help="where the corpus is encoded: in this process, or on Ray (dense, clip)",
    )
    parser.add_argument("--address", help="Ray cluster address (default: a local instance)")
    parser.add_argument("--workers", type=int, default=1, help="Ray model actors at once")
    parser.add_argument(
        "--gpus-per-worker", type=float, default=0.0, help="GPUs per Ray actor (0: CPU)"
    )


def with_engine(name: str, options: dict[str, Any], args: argparse.Namespace) -> Retriever:
    """Build retriever ``name`` for the engine chosen by :func:`add_engine_arguments`.

    Raises:
        InputError: Ray options without ``--engine ray``, a bad worker count, or
            ``--engine ray`` for a retriever with no corpus encoding to distribute.
    """
    from mmbright_core.retrieval.runner.engines import build_retriever
    from mmbright_core.retrieval.runner.ray_engine import RayEngine

    if args.engine == "local":
        if args.address or args.gpus_per_worker or args.workers != 1:
            raise InputError(
                "--address, --workers and --gpus-per-worker need --engine ray",
                found=f"--engine {args.engine}",
            )
        return build_retriever(name, options)
    if args.workers < 1 or args.gpus_per_worker < 0:
        raise InputError(
            "invalid Ray worker settings",
            expected="--workers >= 1 and --gpus-per-worker >= 0",
            found=f"--workers {args.workers} --gpus-per-worker {args.gpus_per_worker}",
        )
    engine = RayEngine(args.address, args.workers, args.gpus_per_worker)
    return build_retriever(name, options, engine)
