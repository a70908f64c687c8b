// Command hello prints a greeting for its first argument.
package main

import (
	"fmt"
	"os"
)

func main() {
	name := "stranger"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	fmt.Printf("hello, %s\n", name)
}
