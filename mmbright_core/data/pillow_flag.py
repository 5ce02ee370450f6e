"""Pillow's ``LOAD_TRUNCATED_IMAGES`` switched on for one decode, with no other decode beside it.

Pillow (``ImageFile.ImageFile.load`` and the JPEG and PNG plugins) reads the module-level
``ImageFile.LOAD_TRUNCATED_IMAGES`` at decode time and has no per-image switch. Setting it
for good, as the official harness does, would change every other user of Pillow in the
process. So an image is first decoded strictly, leaving the flag alone; only one that fails
is decoded again with the flag set, for that one decode, and the flag is restored in
``finally``. This package's strict decodes share a lock (:data:`FLAG_LOCK`) that the
padded retry takes alone, so none of them runs while the flag is set (a truncated image is
told apart as padded whatever the threads do) and two retries never restore each other's
value half-way. Other code decoding in that short window sees the flag set too: a window
opened only for images that are already broken. If the process set the flag itself, the
first decode already pads, and such an image is not told apart as padded.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from PIL import ImageFile


class SharedLock:
    """Many holders at once (strict decodes) or one alone (the padded retry)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._alone = False
        self._waiting = 0  # retries waiting: new strict decodes let them in first

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the lock beside other strict decodes (after any retry that waits)."""
        with self._cond:
            self._cond.wait_for(lambda: not self._alone and not self._waiting)
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """Hold the lock with no strict decode running."""
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._alone and not self._shared)
            self._waiting -= 1
            self._alone = True
        try:
            yield
        finally:
            with self._cond:
                self._alone = False
                self._cond.notify_all()


FLAG_LOCK = SharedLock()


@contextlib.contextmanager
def truncated_images_loaded() -> Iterator[None]:
    """Decode with ``LOAD_TRUNCATED_IMAGES`` set, alone, and restore the flag afterwards."""
    with FLAG_LOCK.alone():
        previous = ImageFile.LOAD_TRUNCATED_IMAGES
        ImageFile.LOAD_TRUNCATED_IMAGES = True
        try:
            yield
        finally:
            ImageFile.LOAD_TRUNCATED_IMAGES = previous
