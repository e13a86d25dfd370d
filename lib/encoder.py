"""The old import path of the encoder, kept for notebooks and code written against it.

``from lib.encoder import load_encoder`` still works; new code imports from :mod:`lib.models`.
"""

from lib.models.encoder import *  # noqa: F403
from lib.models.encoder import __all__  # noqa: F401
