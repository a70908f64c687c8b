"""A ledger of amounts.

>>> balance([1, 2, -3])
0
"""


def balance(amounts):
    return sum(amounts)
