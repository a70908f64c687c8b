//! Cases for the libtest runner: passing, failing, ignored and flaky tests.

/// Adds two numbers: a passing documentation test.
///
/// ```
/// assert_eq!(cases::add(2, 3), 5);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

/// Doubles a number: a failing documentation test.
///
/// ```
/// assert_eq!(cases::double(2), 5, "a wrong claim");
/// ```
pub fn double(a: i32) -> i32 {
    a * 2
}

#[cfg(test)]
mod tests {
    use super::add;

    #[test]
    fn passes() {
        assert_eq!(add(1, 1), 2);
    }

    #[test]
    fn fails() {
        assert_eq!(add(1, 1), 3, "one and one make two");
    }

    #[test]
    #[ignore = "not on this machine"]
    fn ignored() {}

    #[test]
    fn flaky() {
        let marker = std::env::var("FLAKY_MARKER").unwrap();
        if std::fs::metadata(&marker).is_err() {
            std::fs::write(&marker, "").unwrap();
            panic!("fails the first time");
        }
    }
}
