"""Where the project's files are: the one place that knows the folder layout.

``ROOT`` is the checkout (the folder holding ``lib/``), ``ASSETS`` its ``assets/``, ``SHARED_DATA`` the course's
data beside the checkout (``../shared/data``, read by path and never copied in).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"
SHARED_DATA = ROOT.parent / "shared" / "data"
