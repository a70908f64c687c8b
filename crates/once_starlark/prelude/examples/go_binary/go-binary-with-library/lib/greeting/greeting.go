// Package greeting builds greetings.
package greeting

// Greet returns the greeting for name.
func Greet(name string) string {
	return "hello, " + name
}
