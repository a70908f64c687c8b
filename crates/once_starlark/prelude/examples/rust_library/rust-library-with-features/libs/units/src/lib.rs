//! Formats distances in the unit systems enabled by Cargo features.

/// Feet in one meter.
pub const FEET_PER_METER: f64 = 3.280_84;

/// Formats `meters` in every enabled unit system, such as `"2.0 m / 6.6 ft"`.
pub fn distance(meters: f64) -> String {
    let mut parts: Vec<String> = Vec::new();
    #[cfg(feature = "metric")]
    parts.push(format!("{meters:.1} m"));
    #[cfg(feature = "imperial")]
    parts.push(format!("{:.1} ft", meters * FEET_PER_METER));
    if parts.is_empty() {
        parts.push(format!("{meters}"));
    }
    parts.join(" / ")
}
