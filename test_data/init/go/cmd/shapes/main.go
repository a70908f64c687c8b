package main

import (
	"fmt"

	"example.com/shapes/format"
	"example.com/shapes/geometry"
)

func main() {
	fmt.Println(format.Describe(geometry.Square(3)))
}
