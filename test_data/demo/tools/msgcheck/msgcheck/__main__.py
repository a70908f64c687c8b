"""`python3 -m msgcheck DIR…`: checks message catalogs; exits 1 when one has a problem."""

import sys
from pathlib import Path

from msgcheck import check_catalog


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python3 -m msgcheck DIR…", file=sys.stderr)
        return 2
    failed = False
    for directory in argv:
        for name, problems in check_catalog(Path(directory)).items():
            failed = True
            for problem in problems:
                print(f"{directory}/{name}: {problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
