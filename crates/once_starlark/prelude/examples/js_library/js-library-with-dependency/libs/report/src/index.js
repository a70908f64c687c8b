// Renders expense reports; imports the CommonJS `@example/format` package by name.

import { formatCents } from "@example/format";

/**
 * Renders one line per expense and a total line.
 * @param {{ label: string, cents: number }[]} expenses
 * @returns {string}
 */
export function renderReport(expenses) {
  const lines = expenses.map((e) => `${e.label}: ${formatCents(e.cents)}`);
  const total = expenses.reduce((sum, e) => sum + e.cents, 0);
  lines.push(`total: ${formatCents(total)}`);
  return lines.join("\n");
}
