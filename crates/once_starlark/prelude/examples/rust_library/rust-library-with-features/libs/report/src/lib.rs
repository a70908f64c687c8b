//! Summarises a walk using the `units` library.

/// One line describing a walk of `meters`.
pub fn summary(name: &str, meters: f64) -> String {
    format!("{name} walked {}", units::distance(meters))
}

#[cfg(test)]
mod tests {
    #[test]
    fn shows_both_units() {
        assert_eq!(super::summary("Ada", 2.0), "Ada walked 2.0 m / 6.6 ft");
    }
}
