"""Temperature unit conversions."""


def celsius_to_fahrenheit(celsius: float) -> float:
    """Converts degrees Celsius to degrees Fahrenheit."""
    return celsius * 9 / 5 + 32
