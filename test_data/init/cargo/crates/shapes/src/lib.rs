//! Areas of simple shapes.

mod square;

pub use square::square_area;

/// The area of a rectangle.
///
/// ```
/// assert_eq!(shapes::rectangle_area(2, 3), 6);
/// ```
pub fn rectangle_area(width: u32, height: u32) -> u32 {
    width * height
}

#[cfg(test)]
mod tests {
    #[test]
    fn rectangle() {
        assert_eq!(super::rectangle_area(4, 5), 20);
    }
}
