package geometry

// Square is a rectangle of equal sides.
func Square(side int) Rect { return Rect{side, side} }
