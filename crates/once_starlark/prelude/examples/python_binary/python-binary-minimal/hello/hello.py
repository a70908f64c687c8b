"""Prints a greeting for the first argument."""

import sys


def main(argv: list[str]) -> int:
    name = argv[1] if len(argv) > 1 else "stranger"
    print(f"hello, {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
