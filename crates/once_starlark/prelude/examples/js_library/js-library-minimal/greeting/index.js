// Builds greetings.

/**
 * Returns the greeting for `name`.
 * @param {string} name
 * @returns {string}
 */
export function greet(name) {
  return `hello, ${name}`;
}
