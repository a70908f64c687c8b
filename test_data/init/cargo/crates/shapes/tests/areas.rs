#[test]
fn squares_are_rectangles() {
    assert_eq!(shapes::square_area(5), shapes::rectangle_area(5, 5));
}
