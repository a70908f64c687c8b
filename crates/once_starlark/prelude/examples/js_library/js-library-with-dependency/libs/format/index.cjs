// Number formatting helpers, written as a CommonJS module.

/**
 * Formats `cents` as a dollar amount with two decimals, such as `$12.50`.
 * @param {number} cents
 * @returns {string}
 */
function formatCents(cents) {
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(cents);
  return `${sign}$${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

module.exports = { formatCents };
