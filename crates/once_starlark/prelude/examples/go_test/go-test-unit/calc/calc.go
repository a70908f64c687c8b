// Package calc holds small arithmetic helpers.
package calc

import "math"

// Add adds two numbers, saturating at the bounds of int64.
func Add(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}
