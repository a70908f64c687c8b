// Builds greetings.

/**
 * Returns the greeting for `name`; `shout` upper-cases it and adds `!`.
 * @param {string} name
 * @param {{ shout?: boolean }} [options]
 * @returns {string}
 */
export function greet(name, { shout = false } = {}) {
  const trimmed = name.trim();
  if (trimmed === "") {
    throw new TypeError("name must not be empty");
  }
  const text = `hello, ${trimmed}`;
  return shout ? `${text.toUpperCase()}!` : text;
}
