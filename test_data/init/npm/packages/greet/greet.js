import strings from "@acme/strings";

export function greet(name) {
  return `Hello, ${strings.capitalize(name)}`;
}
