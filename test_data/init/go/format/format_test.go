package format_test

import (
	"testing"

	"example.com/shapes/format"
	"example.com/shapes/geometry"
)

func TestDescribe(t *testing.T) {
	if got := format.Describe(geometry.Square(2)); got != "2x2 (4)" {
		t.Fatalf("got %q", got)
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("later")
}
