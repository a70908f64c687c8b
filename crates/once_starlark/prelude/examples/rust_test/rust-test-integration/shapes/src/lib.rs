//! Plane shapes and their areas.

/// A shape in the plane.
pub enum Shape {
    Rectangle { width: f64, height: f64 },
    Circle { radius: f64 },
}

impl Shape {
    /// The area of the shape.
    pub fn area(&self) -> f64 {
        match *self {
            Shape::Rectangle { width, height } => width * height,
            Shape::Circle { radius } => std::f64::consts::PI * radius * radius,
        }
    }
}
