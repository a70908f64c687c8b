"""Greets the first argument using the `greeting` library."""

import sys

from greeting import greet


def main(argv: list[str]) -> int:
    name = argv[1] if len(argv) > 1 else "stranger"
    print(greet(name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
