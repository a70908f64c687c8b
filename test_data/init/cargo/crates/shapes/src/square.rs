/// The area of a square.
///
/// ```
/// assert_eq!(shapes::square_area(3), 9);
/// ```
pub fn square_area(side: u32) -> u32 {
    crate::rectangle_area(side, side)
}

#[cfg(test)]
mod tests {
    #[test]
    fn square() {
        assert_eq!(super::square_area(4), 16);
    }
}
