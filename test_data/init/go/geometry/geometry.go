// Package geometry computes areas.
package geometry

// Rect is a rectangle.
type Rect struct{ W, H int }

// Area is the rectangle's area.
func (r Rect) Area() int { return r.W * r.H }
