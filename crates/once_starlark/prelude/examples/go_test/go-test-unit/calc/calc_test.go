package calc

import (
	"math"
	"testing"
)

func TestAdds(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}

func TestSaturates(t *testing.T) {
	if got := Add(math.MaxInt64, 1); got != math.MaxInt64 {
		t.Errorf("Add(MaxInt64, 1) = %d, want MaxInt64", got)
	}
	if got := Add(math.MinInt64, -1); got != math.MinInt64 {
		t.Errorf("Add(MinInt64, -1) = %d, want MinInt64", got)
	}
}
