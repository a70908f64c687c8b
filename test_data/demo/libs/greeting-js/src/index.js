// Greetings for one or more people, as the Rust `greeting` crate builds them.

/**
 * Upper-cases the first character of `word` and leaves the rest alone.
 * @param {string} word
 * @returns {string}
 */
export function capitalize(word) {
  const [first = "", ...rest] = word;
  return first.toUpperCase() + rest.join("");
}

/**
 * Joins names as English prose: `a`, `a and b`, `a, b and c`.
 * @param {string[]} names
 * @returns {string}
 */
export function joinNames(names) {
  if (names.length <= 1) {
    return names.join("");
  }
  return `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

/**
 * Greets everyone in `names`, or the world when nobody is named.
 * @param {string[]} [names]
 * @returns {string}
 */
export function greet(names = []) {
  const who = names.length === 0 ? "World" : joinNames(names.map(capitalize));
  return `Hello, ${who}!`;
}
