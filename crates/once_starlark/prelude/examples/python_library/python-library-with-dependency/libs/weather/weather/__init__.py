"""Reports station temperatures, read from package data, in both units."""

import json
from importlib import resources

from units import celsius_to_fahrenheit


def readings() -> dict[str, float]:
    """Returns the latest reading of every station, in degrees Celsius."""
    text = resources.files(__package__).joinpath("stations.json").read_text(encoding="utf-8")
    return json.loads(text)


def report(station: str) -> str:
    """Describes the temperature at `station`."""
    celsius = readings()[station]
    return f"{station}: {celsius:.1f} °C ({celsius_to_fahrenheit(celsius):.1f} °F)"
