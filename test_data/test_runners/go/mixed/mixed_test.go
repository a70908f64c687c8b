package mixed

import (
	"os"
	"strings"
	"testing"
)

func TestPasses(t *testing.T) {
	if strings.ToUpper("a") != "A" {
		t.Fatal("ToUpper is broken")
	}
}

func TestFails(t *testing.T) {
	t.Errorf("one and one make two, not %d", 3)
}

func TestSkipped(t *testing.T) {
	t.Skip("not on this machine")
}

func TestFlaky(t *testing.T) {
	marker := os.Getenv("FLAKY_MARKER")
	if _, err := os.Stat(marker); err != nil {
		os.WriteFile(marker, nil, 0o644)
		t.Fatal("fails the first time")
	}
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want string
	}{{"lower", "a", "A"}, {"upper", "B", "B"}} {
		t.Run(c.name, func(t *testing.T) {
			if got := strings.ToUpper(c.in); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
