"""Account balances from ledger entries, in integer cents."""


def balance(entries: list[int]) -> int:
    """The sum of `entries`.

    >>> balance([1000, -250, 15])
    765
    >>> balance([])
    0
    """
    return sum(entries)


def parse_amount(text: str) -> int:
    """Cents from an amount written `12.34` or `-0.5`.

    >>> parse_amount("12.34")
    1234
    """
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("+-").partition(".")
    cents = int(whole or "0") * 100 + int((fraction + "00")[:2])
    return -cents if negative else cents
