"""The reload rule every loader shares: what loading a source again under a name does.

A name (a benchmark dataset, a ragscale dataset, a matrix release) holds the
source it was loaded from, identified by a fingerprint (file hashes, slice,
loader version). Loading under that name again:

* nothing held: ``"loaded"``;
* the same fingerprint: ``"unchanged"`` (nothing is written);
* another fingerprint: refused (the loader's own one-line error, naming the
  name, what it holds and the two ways on: ``--replace`` or another name),
  unless ``replace``, then ``"replaced"`` (the loader swaps the name's rows in
  one transaction).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

ReloadStatus = Literal["loaded", "unchanged", "replaced"]


def reload_status(
    held: object | None,
    wanted: object,
    *,
    replace: bool,
    refusal: Callable[[], Exception],
) -> ReloadStatus:
    """What loading ``wanted`` under a name holding ``held`` (None: nothing) does.

    Raises ``refusal()`` for a different source without ``replace``.
    """
    if held is None:
        return "loaded"
    if held == wanted:
        return "unchanged"
    if not replace:
        raise refusal()
    return "replaced"
