package pass

import "testing"

func TestAdds(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("arithmetic is broken")
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("not on this machine")
}
