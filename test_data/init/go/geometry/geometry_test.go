package geometry

import "testing"

func TestArea(t *testing.T) {
	if got := (Rect{2, 3}).Area(); got != 6 {
		t.Fatalf("area %d", got)
	}
}

func TestSquare(t *testing.T) {
	for _, side := range []int{1, 2} {
		t.Run("side", func(t *testing.T) {
			if Square(side).Area() != side*side {
				t.Fatal("wrong")
			}
		})
	}
}
