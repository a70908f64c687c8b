// Package format renders shapes.
package format

import (
	"fmt"

	"example.com/shapes/geometry"
)

// Describe names a rectangle and its area.
func Describe(r geometry.Rect) string {
	return fmt.Sprintf("%dx%d (%d)", r.W, r.H, r.Area())
}
