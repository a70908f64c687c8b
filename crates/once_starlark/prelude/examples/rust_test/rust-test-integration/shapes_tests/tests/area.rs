//! Checks the areas computed by the `shapes` library.

use shapes::Shape;

#[test]
fn rectangle() {
    let shape = Shape::Rectangle {
        width: 2.0,
        height: 3.0,
    };
    assert_eq!(shape.area(), 6.0);
}

#[test]
fn circle() {
    let area = Shape::Circle { radius: 1.0 }.area();
    assert!((area - std::f64::consts::PI).abs() < 1e-12);
}
