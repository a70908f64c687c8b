// Command app greets its first argument using the greeting package.
package main

import (
	"fmt"
	"os"

	"example.com/greeting"
)

// version is set at link time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	name := "stranger"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	fmt.Printf("%s (app %s)\n", greeting.Greet(name), version)
}
