//! Small arithmetic helpers with unit tests.

/// Adds two numbers, saturating at the bounds of `i64`.
pub fn add(a: i64, b: i64) -> i64 {
    a.saturating_add(b)
}

#[cfg(test)]
mod tests {
    use super::add;

    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5);
    }

    #[test]
    fn saturates() {
        assert_eq!(add(i64::MAX, 1), i64::MAX);
    }
}
